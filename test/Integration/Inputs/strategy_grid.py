"""Trains one model under several sharding strategies and compares each
run's loss curve (and final weights) with the single-process run.

usage: strategy_grid.py --mpirun CMD --data FILE --model JSON --out DIR
           --batch N --accum K --steps S [--run-flags "..."]
           LABEL:PROCS:TGC_FLAGS ...

The reference is the model (or --reference MODEL, the same model without
its pins and mesh) compiled without a mesh for K micro-batches per
step; each strategy is compiled with TGC_FLAGS (its mesh and preset) and run
under `CMD -np PROCS` with the same global --batch N. Prints one line per
strategy ("zero3 x4: 50 steps agree, 12 tensors agree") and exits 1 when a
loss differs by more than 1e-5 relative, or a final tensor by more than 1e-3
of its scale.
"""
import argparse, json, os, shlex, struct, subprocess, sys


def run(cmd):
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if done.returncode != 0:
        sys.stdout.write(done.stdout)
        raise SystemExit(f"failed ({done.returncode}): {' '.join(cmd)}")


def losses(path):
    with open(path) as f:
        return [e["loss"] for e in map(json.loads, f) if "loss" in e]


def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        a, b = t["data_offsets"]
        out[name] = struct.unpack(f"<{(b - a) // 4}f", data[a:b])
    return out


def close(a, b, rtol):
    return abs(a - b) <= rtol * max(abs(a), abs(b), 1e-6)


def main():
    p = argparse.ArgumentParser()
    for flag in ["--mpirun", "--data", "--model", "--out", "--run-flags",
                 "--reference"]:
        p.add_argument(flag, default="")
    for flag in ["--batch", "--accum", "--steps"]:
        p.add_argument(flag, type=int, required=True)
    p.add_argument("strategies", nargs="+")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    common = ["--data", a.data, "--batch-size", str(a.batch), "--steps",
              str(a.steps), "--threads", "1", "--no-shuffle", "--quiet"]
    common += shlex.split(a.run_flags)
    ref = os.path.join(a.out, "ref")
    # -O1: the strategies are compared, not the host compiler's optimizations,
    # and it builds GPT-2 (tiny) in a third of -O3's time.
    run(["tgc", a.reference or a.model, "-o", ref, "--grad-accum",
         str(a.accum), "--opt-level=1"])
    run([ref] + common + ["--log", ref + ".jsonl", "--save-final",
                          ref + ".safetensors"])
    want, want_w = losses(ref + ".jsonl"), tensors(ref + ".safetensors")
    failed = False
    for spec in a.strategies:
        label, procs, flags = spec.split(":", 2)
        exe = os.path.join(a.out, f"{label}-{procs}")
        run(["tgc", a.model, "-o", exe, "--grad-accum", str(a.accum),
             "--opt-level=1"] + shlex.split(flags))
        run(shlex.split(a.mpirun) + ["-np", procs, exe] + common +
            ["--log", exe + ".jsonl", "--save-final", exe + ".safetensors"])
        got, got_w = losses(exe + ".jsonl"), tensors(exe + ".safetensors")
        bad = [i + 1 for i, (x, y) in enumerate(zip(got, want))
               if not close(x, y, 1e-5)]
        if len(got) != len(want) or bad:
            failed = True
            print(f"{label} x{procs}: DIFFERENT losses at steps {bad[:5]} "
                  f"({len(got)} vs {len(want)} steps)")
            continue
        # Each tensor's max error relative to its scale (compare_weights.py),
        # to 1e-3: a key bias of attention has a zero gradient in exact
        # arithmetic, and Adam turns the rounding noise of its reductions
        # into steps of the learning rate's size.
        def off(n):
            if n not in got_w or len(got_w[n]) != len(want_w[n]):
                return True
            scale = max(max(map(abs, want_w[n]), default=0.0), 1e-3)
            return max((abs(x - y) for x, y in zip(got_w[n], want_w[n])),
                       default=0.0) > 1e-3 * scale
        wbad = [n for n in want_w if off(n)]
        if wbad:
            failed = True
            print(f"{label} x{procs}: DIFFERENT weights {wbad[:5]}")
            continue
        print(f"{label} x{procs}: {len(got)} steps agree, "
              f"{len(want_w)} tensors agree")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
