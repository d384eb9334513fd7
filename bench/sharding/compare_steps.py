#!/usr/bin/env python3
"""Modelled against measured step times, from calibrate_steps.sh's folder.

usage: compare_steps.py --dir DIR [--warmup W] [--target-error 0.15]
                        [--target-tau 0.8]
       compare_steps.py --fit-compute --dir DIR --spec SPEC -o FITTED
                        [--warmup W]

DIR holds plans.csv (model|plan|mesh|flags|batch), per plan
MODEL-PLAN.report.json (tgc --report-json), MODEL-PLAN.overhead.json (the same
priced with device.kernel_overhead = 1 ms) and MODEL-PLAN.runN.jsonl (the
executable's logs). Per run the measured step is the median step_ms after
the first W steps; per plan the median over runs.

Prints a markdown table (modelled compute + communication, measured, ratio
measured / modelled, error modelled / measured - 1), the mean |error| and
Kendall's tau-b of modelled against measured over all plans and per model,
and a least-squares fit of a per-op overhead k (measured ~ modelled + k * ops,
relative errors) with the error and tau it would give.

--fit-compute fits the device's flops_efficiency instead, from the unsharded
runs (DIR/unsharded.csv: model|batch; unsharded-MODEL.report.json priced
with SPEC, unsharded-MODEL.half.json with half its flops_efficiency,
unsharded-MODEL.runN.copyC.jsonl the four copies' logs). A step's modelled
compute is close to A + B / efficiency, B the flop-bound ops' part: the two
pricings give A and B, the measured step (median over copies and runs) the
efficiency per model; SPEC with their geometric mean (at most 1) is written
to FITTED.
"""
import argparse
import csv
import glob
import json
import os
import re
import sys

import numpy as np


def kendall_tau_b(x, y):
    """Kendall's tau-b: (concordant - discordant) pairs over the geometric
    mean of the pairs untied in x and untied in y."""
    n = len(x)
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = np.sign(x[i] - x[j])
            dy = np.sign(y[i] - y[j])
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif dx == dy:
                conc += 1
            else:
                disc += 1
    denom = np.sqrt((conc + disc + tx) * (conc + disc + ty))
    return (conc - disc) / denom if denom else float("nan")


def run_median(path, warmup):
    with open(path) as f:
        ms = [json.loads(line)["step_ms"] for line in f
              if '"step_ms"' in line]
    kept = ms[warmup:] if len(ms) > warmup else ms
    return float(np.median(kept)) / 1e3, len(kept)


def stats(rows, modelled_key):
    err = [r[modelled_key] / r["measured"] - 1 for r in rows]
    tau = kendall_tau_b([r[modelled_key] for r in rows],
                        [r["measured"] for r in rows])
    return float(np.mean(np.abs(err))), tau


def fit_compute(a):
    spec = json.load(open(a.spec))
    efficiency = spec["device"].get("flops_efficiency", 1.0)
    print("| model | batch | modelled compute at efficiency e (ms) | "
          "flop-bound part at e (ms) | measured (ms) | copies x runs | "
          "fitted efficiency |")
    print("|---|---|---|---|---|---|---|")
    fitted, models = [], []
    with open(os.path.join(a.dir, "unsharded.csv")) as f:
        for row in csv.DictReader(f, delimiter="|"):
            models.append((row["model"], row["batch"]))
            base = os.path.join(a.dir, f"unsharded-{row['model']}")
            full = json.load(open(base + ".report.json"))["chosen"]
            half = json.load(open(base + ".half.json"))["chosen"]
            # c(e) = A + B / e, c(e / 2) = A + 2 B / e.
            flop_part = half["compute_seconds"] - full["compute_seconds"]
            rest = full["compute_seconds"] - flop_part
            runs = [run_median(g, a.warmup)[0]
                    for g in glob.glob(base + ".run*.copy*.jsonl")]
            if not runs:
                sys.exit(f"compare_steps.py: no unsharded runs for {base}")
            measured = float(np.median(runs))
            if measured > rest and flop_part > 0:
                e = min(efficiency * flop_part / (measured - rest), 1.0)
            else:
                e = 1.0
            fitted.append(e)
            print(f"| {row['model']} | {row['batch']} | "
                  f"{full['compute_seconds'] * 1e3:.1f} | "
                  f"{flop_part * 1e3:.1f} | {measured * 1e3:.1f} | "
                  f"{len(runs)} | {e:.3f} |")
    e = float(np.exp(np.mean(np.log(fitted))))
    spec["device"]["flops_efficiency"] = round(e, 3)
    spec.setdefault("sources", []).append(
        f"flops_efficiency {e:.3f}: fitted by bench/sharding/"
        "calibrate_steps.sh from unsharded steps of "
        + ", ".join(f"{m} (batch {b})" for m, b in models)
        + " (4 copies at once), geometric mean over the models")
    json.dump(spec, open(a.output, "w"), indent=2)
    print()
    print(f"e = {efficiency} in the spec; fitted flops_efficiency "
          f"{e:.3f} (geometric mean), written to {a.output}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--target-error", type=float, default=0.15)
    p.add_argument("--target-tau", type=float, default=0.8)
    p.add_argument("--fit-compute", action="store_true")
    p.add_argument("--spec")
    p.add_argument("-o", "--output")
    a = p.parse_args()
    if a.fit_compute:
        if not a.spec or not a.output:
            p.error("--fit-compute needs --spec and -o")
        return fit_compute(a)

    rows = []
    with open(os.path.join(a.dir, "plans.csv")) as f:
        for plan in csv.DictReader(f, delimiter="|"):
            base = os.path.join(a.dir, f"{plan['model']}-{plan['plan']}")
            rep = json.load(open(base + ".report.json"))["chosen"]
            ovh = json.load(open(base + ".overhead.json"))["chosen"]
            logs = sorted(glob.glob(base + ".run*.jsonl"),
                          key=lambda s: int(re.search(r"run(\d+)", s)[1]))
            per_run = [run_median(g, a.warmup) for g in logs]
            per_run = [(s, n) for s, n in per_run if n > 0]
            if not per_run:
                print(f"no measured steps for {base}")
                continue
            runs = [s for s, _ in per_run]
            rows.append(dict(
                model=plan["model"], plan=plan["plan"], mesh=plan["mesh"],
                flags=plan["flags"], batch=int(plan["batch"]),
                chosen=rep["plan"],
                modelled=rep["step_seconds"],
                compute=rep["compute_seconds"],
                comm=rep["communication_seconds"],
                ops=round((ovh["compute_seconds"] - rep["compute_seconds"])
                          / 1e-3),
                measured=float(np.median(runs)), best=min(runs),
                runs=runs, steps=per_run[0][1]))

    print("| model | plan | mesh, flags | batch | plan compiled | modelled "
          "compute + comm = step (ms) | ops | measured (ms) | runs (ms) | "
          "measured / modelled | error |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['plan']} | `{r['mesh']} {r['flags']}` | "
              f"{r['batch']} | {r['chosen']} | {r['compute'] * 1e3:.1f} + "
              f"{r['comm'] * 1e3:.1f} = {r['modelled'] * 1e3:.1f} | "
              f"{r['ops']} | {r['measured'] * 1e3:.1f} | "
              f"{', '.join(f'{s * 1e3:.0f}' for s in r['runs'])} | "
              f"{r['measured'] / r['modelled']:.2f} | "
              f"{r['modelled'] / r['measured'] - 1:+.0%} |")
    print()
    print(f"measured: median step_ms of steps {a.warmup + 1}.. "
          f"({rows[0]['steps'] if rows else 0} steps) per run, median over "
          f"{min(len(r['runs']) for r in rows) if rows else 0}-"
          f"{max(len(r['runs']) for r in rows) if rows else 0} runs; "
          "error = modelled / measured - 1")
    print()

    groups = [("all", rows)] + [
        (m, [r for r in rows if r["model"] == m])
        for m in dict.fromkeys(r["model"] for r in rows)]

    def verdict(e, t):
        return (f"{'meets' if e <= a.target_error else 'misses'} "
                f"<= {a.target_error:.0%}; tau "
                f"{'meets' if t >= a.target_tau else 'misses'} "
                f">= {a.target_tau}")

    print("| plans | n | mean abs error | Kendall tau-b | against the "
          "targets |")
    print("|---|---|---|---|---|")
    for name, g in groups:
        e, t = stats(g, "modelled")
        print(f"| {name} | {len(g)} | {e:.0%} | {t:.2f} | {verdict(e, t)} |")
    print()

    # What a per-op overhead k would do: measured ~ modelled + k * ops,
    # least squares on relative errors: minimise sum((m + k o) / y - 1)^2.
    y = np.array([r["measured"] for r in rows])
    m = np.array([r["modelled"] for r in rows])
    o = np.array([r["ops"] for r in rows], dtype=float)
    k = max(float(np.sum((o / y) * (1 - m / y)) / np.sum((o / y) ** 2)), 0.0)
    for r in rows:
        r["with_k"] = r["modelled"] + k * r["ops"]
    print(f"per-op overhead fit (all plans): device.kernel_overhead = "
          f"{k * 1e6:.1f} us per op")
    print()
    print("| plans | mean abs error with k | Kendall tau-b with k |")
    print("|---|---|---|")
    for name, g in groups:
        e, t = stats(g, "with_k")
        print(f"| {name} | {e:.0%} | {t:.2f} |")
    print()
    # The single factor that best scales the model (geometric mean of the
    # ratios): how far off the level is, apart from the ranking.
    ratio = float(np.exp(np.mean(np.log(y / m))))
    for r in rows:
        r["scaled"] = r["modelled"] * ratio
    e, _ = stats(rows, "scaled")
    print(f"measured / modelled, geometric mean: {ratio:.2f} "
          f"(the model scaled by it: mean abs error {e:.0%})")
    print()
    # The spec is fitted to the best run per size (the least disturbed):
    # the same comparison on each plan's best run.
    print("against the best run per plan (the spec's own convention):")
    print()
    print("| plans | mean abs error | Kendall tau-b |")
    print("|---|---|---|")
    for r in rows:
        r["measured_median"], r["measured"] = r["measured"], r["best"]
    for name, g in groups:
        e, t = stats(g, "modelled")
        print(f"| {name} | {e:.0%} | {t:.2f} |")
    y = np.array([r["measured"] for r in rows])
    ratio = float(np.exp(np.mean(np.log(y / m))))
    print()
    print(f"best run / modelled, geometric mean: {ratio:.2f}")


if __name__ == "__main__":
    main()
