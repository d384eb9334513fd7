#!/usr/bin/env python3
"""Fit the cost model's collective formulas to measured times.

usage: fit_collectives.py --collectives CSV [--collectives CSV ...]
                          [--compute CSV] [--write-spec FILE]
                          [--spec-procs P] [--date YYYY-MM-DD]

CSV files hold the lines bench/sharding/collectives.cpp prints:
  kind,procs,bytes,seconds_median          (collectives)
  sgemm,procs,MxNxK,flops_per_second       (--compute)
  triad,procs,bytes,bytes_per_second       (--compute)
Several files (repeated runs) may be given. Each line already is a median
over the repetitions inside one run; across runs the fit takes, per kind,
process count and size, the best of the runs (--across best, the default:
the shortest time, the highest rate) or their median (--across median). The
machine is shared, and another job only ever slows a run down, so the best
run is the one least disturbed; the median describes the machine as loaded
while the runs went on.

The model (planning/cost/clusters/README.md), for an n-byte tensor (the
whole, unsharded one) on p processes, ring algorithms:
  all_reduce                  2(p-1) alpha + 2(p-1)/p * n / bandwidth
  all_gather, reduce_scatter,
  all_to_all                   (p-1) alpha +  (p-1)/p * n / bandwidth
It is linear in alpha and beta = 1 / bandwidth, so each (kind, p) is one
least-squares problem in two unknowns. The residuals are relative
((model - measured) / measured), so a 1 KiB message counts as much as a
64 MiB one: otherwise the largest sizes alone would set both numbers and
alpha would come out as noise. A negative alpha or beta (the data cannot
tell it from zero) is fixed at zero and the other refitted.

It prints the fitted table, each size's measured and modelled time, the
error per size range, and with --write-spec writes a cluster spec for
--spec-procs processes (default 4) per node: the collectives' fits as the
`node` link's per-kind overrides, the all_gather fit as the link itself,
and the compute figures of --compute as the device.
"""

import argparse
import collections
import datetime
import json
import os
import platform
import re
import sys

import numpy as np

KINDS = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]


def coefficients(kind, p):
    """(steps, fraction): time = steps * alpha + fraction * n * beta."""
    if kind == "all_reduce":
        return 2 * (p - 1), 2 * (p - 1) / p
    return p - 1, (p - 1) / p


def model(kind, p, n, alpha, bandwidth):
    steps, fraction = coefficients(kind, p)
    return steps * alpha + fraction * n / bandwidth


def read_csv(paths):
    """{(kind, procs, key): [value, ...]} over every line of every file."""
    out = collections.defaultdict(list)
    for path in paths:
        with open(path) as f:
            for line in f:
                parts = line.strip().split(",")
                if len(parts) != 4 or not parts[1].isdigit():
                    continue
                kind, procs, key, value = parts
                out[(kind, int(procs), key)].append(float(value))
    return out


def fit(kind, p, sizes, times):
    """Least squares on relative residuals; returns (alpha, bandwidth)."""
    steps, fraction = coefficients(kind, p)
    sizes = np.asarray(sizes, dtype=float)
    times = np.asarray(times, dtype=float)
    a = np.column_stack([np.full_like(sizes, steps), fraction * sizes])
    a = a / times[:, None]
    b = np.ones_like(times)
    (alpha, beta), *_ = np.linalg.lstsq(a, b, rcond=None)
    if alpha < 0:
        alpha = 0.0
        beta = float(np.linalg.lstsq(a[:, 1:], b, rcond=None)[0][0])
    elif beta <= 0:
        # Sizes alone do not matter: a latency-only link (does not happen
        # over real links; kept so the spec stays finite).
        beta = 1e-30
        alpha = float(np.linalg.lstsq(a[:, :1], b, rcond=None)[0][0])
    return float(alpha), float(1.0 / beta)


def size_text(n):
    for unit, scale in [("MiB", 1 << 20), ("KiB", 1 << 10)]:
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


RANGES = [("<= 64 KiB", 0, 64 << 10), ("256 KiB - 4 MiB", 64 << 10, 4 << 20),
          (">= 16 MiB", 4 << 20, 1 << 62)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--collectives", action="append", default=[], required=True)
    ap.add_argument("--compute", action="append", default=[])
    ap.add_argument("--write-spec")
    ap.add_argument("--spec-procs", type=int, default=4)
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    ap.add_argument("--across", choices=["best", "median"], default="best")
    args = ap.parse_args()

    runs = read_csv(args.collectives)
    pick = (lambda v, better: float(better(v))) if args.across == "best" else \
        (lambda v, better: float(np.median(v)))
    medians = {key: pick(v, min) for key, v in runs.items()}
    groups = collections.defaultdict(list)  # (kind, p) -> [(n, t)]
    for (kind, p, key), t in medians.items():
        groups[(kind, p)].append((int(key), t))

    fits = {}
    print("## Fitted alpha and bandwidth (relative least squares)\n")
    print("| kind | p | alpha (us) | bandwidth (GB/s) | max error | mean |error| |")
    print("|---|---|---|---|---|---|")
    for kind, p in sorted(groups, key=lambda k: (k[1], KINDS.index(k[0]))):
        points = sorted(groups[(kind, p)])
        sizes, times = zip(*points)
        alpha, bw = fit(kind, p, sizes, times)
        errs = [model(kind, p, n, alpha, bw) / t - 1 for n, t in points]
        fits[(kind, p)] = (alpha, bw, points, errs)
        print(f"| {kind} | {p} | {alpha * 1e6:.1f} | {bw / 1e9:.3f} | "
              f"{max(errs, key=abs) * 100:+.0f}% | "
              f"{np.mean(np.abs(errs)) * 100:.0f}% |")

    print(f"\n## Measured ({args.across} of the runs' medians) and modelled "
          "time per size\n")
    print("| kind | p | bytes | runs | measured (us) | runs: min - max (us) | model (us) | error |")
    print("|---|---|---|---|---|---|---|---|")
    for (kind, p), (alpha, bw, points, errs) in sorted(
            fits.items(), key=lambda kv: (kv[0][1], KINDS.index(kv[0][0]))):
        for (n, t), e in zip(points, errs):
            samples = runs[(kind, p, str(n))]
            print(f"| {kind} | {p} | {size_text(n)} | {len(samples)} | "
                  f"{t * 1e6:.1f} | {min(samples) * 1e6:.1f} - "
                  f"{max(samples) * 1e6:.1f} | "
                  f"{model(kind, p, n, alpha, bw) * 1e6:.1f} | {e * 100:+.0f}% |")

    print("\n## Mean |error| of the model per size range\n")
    print("| kind | p | " + " | ".join(r[0] for r in RANGES) + " |")
    print("|---|---|" + "---|" * len(RANGES))
    for (kind, p), (alpha, bw, points, errs) in sorted(
            fits.items(), key=lambda kv: (kv[0][1], KINDS.index(kv[0][0]))):
        cells = []
        for _, lo, hi in RANGES:
            sel = [abs(e) for (n, _), e in zip(points, errs) if lo < n <= hi]
            cells.append(f"{np.mean(sel) * 100:.0f}%" if sel else "-")
        print(f"| {kind} | {p} | " + " | ".join(cells) + " |")

    print("\n## Runs (how busy the others kept the machine just before)\n")
    for path in args.collectives + args.compute:
        with open(path) as f:
            notes = [l[1:].strip() for l in f if l.startswith("#")]
        print(f"- {os.path.basename(path)}: {'; '.join(notes) or 'no note'}")

    compute = read_csv(args.compute)
    compute_medians = {k: pick(v, max) for k, v in compute.items()}
    if compute_medians:
        print(f"\n## Compute per process ({args.across} of the runs)\n")
        print("| what | procs | shape / bytes | rate | runs: min - max |")
        print("|---|---|---|---|---|")
        for (what, p, key), v in sorted(compute_medians.items(),
                                        key=lambda kv: (kv[0][0], kv[0][1])):
            unit = "GFLOP/s" if what == "sgemm" else "GB/s"
            samples = compute[(what, p, key)]
            print(f"| {what} | {p} | {key} | {v / 1e9:.1f} {unit} | "
                  f"{min(samples) / 1e9:.1f} - {max(samples) / 1e9:.1f} |")

    if args.write_spec:
        write_spec(args, fits, compute_medians)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def memory_total():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    raise SystemExit("fit_collectives.py: no MemTotal in /proc/meminfo")


def spec_text(spec):
    """JSON with large and small numbers as 4.5e11, not 450000000000.0."""
    def short(m):
        v = float(m.group(0))
        if abs(v) >= 1e5 or abs(v) < 1e-3:
            return format(v, ".4g").replace("e+", "e")
        return m.group(0)
    text = json.dumps(spec, indent=2)
    return re.sub(r"(?<=: )-?\d+\.\d+(e[-+]?\d+)?(?=[,\n])", short, text) + "\n"


def write_spec(args, fits, compute):
    p = args.spec_procs
    if ("all_gather", p) not in fits:
        raise SystemExit(f"fit_collectives.py: no all_gather measured on {p} "
                         "processes: cannot write the spec")
    gemms = [v for (what, procs, key), v in compute.items()
             if what == "sgemm" and procs == p and
             min(int(d) for d in key.split("x")) >= 768]
    triad = [v for (what, procs, _), v in compute.items()
             if what == "triad" and procs == p]
    if not gemms or not triad:
        raise SystemExit(f"fit_collectives.py: --compute has no sgemm of "
                         f"the large shapes or no triad on {p} processes")
    flops = float(np.median(gemms))
    cores = os.cpu_count()
    alpha, bw = fits[("all_gather", p)][:2]
    collectives = {kind: {"bandwidth": float(f"{fits[(kind, p)][1]:.4g}"),
                          "latency": float(f"{fits[(kind, p)][0]:.4g}")}
                   for kind in KINDS if (kind, p) in fits}
    spec = {
        "name": "cpu-local",
        "description": (f"this machine ({cpu_model()}, {cores} cores): {p} MPI "
                        f"processes of 1 OpenMP thread each on one node, as the "
                        f"multi-process tests run (mpirun --oversubscribe, TCP "
                        f"over loopback); a device is one process"),
        "sources": [
            f"measured by bench/sharding/calibrate.sh on {args.date} "
            f"({args.across} of the runs): "
            f"collectives of runtime/comm (MPI) fitted by "
            f"bench/sharding/fit_collectives.py, sgemm through "
            f"tgc::cpu::gemm and a STREAM triad with {p} processes running "
            f"at once (see bench/results/collectives-{args.date}.md)",
            "peak_flops: the median sgemm rate per process of the GEMM shapes "
            "with every dimension >= 768, so flops_efficiency is 1; the CPU "
            "target computes in fp32 only, bf16 repeats the f32 figure",
            f"memory_bytes: MemTotal of /proc/meminfo divided by {p}",
            "links.node: the all_gather fit (one plain transfer); the "
            "collectives overrides are each kind's own fit; all_to_all was "
            "not measured (runtime/comm has no all-to-all) and uses the link",
        ],
        "devices_per_node": p,
        "device": {
            "name": f"{cpu_model()}, 1 of {p} processes on {cores} cores",
            "memory_bytes": memory_total() // p,
            "peak_flops": {"f32": float(f"{flops:.4g}"),
                           "bf16": float(f"{flops:.4g}")},
            "flops_efficiency": 1.0,
            "memory_bandwidth": float(f"{float(np.median(triad)):.4g}"),
        },
        "links": {
            "node": {
                "name": "Open MPI over TCP loopback (btl self,tcp on lo)",
                "bandwidth": float(f"{bw:.4g}"),
                "latency": float(f"{alpha:.4g}"),
                "collectives": collectives,
            }
        },
    }
    with open(args.write_spec, "w") as f:
        f.write(spec_text(spec))
    print(f"\nwrote {args.write_spec}", file=sys.stderr)


if __name__ == "__main__":
    main()
