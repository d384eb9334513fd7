"""Random legal sharding pins: each seed pins a random subset of a model's
parameters to random splits over a data x tp mesh (and gives some a random
preset), compiles it, takes two training steps on 4 processes and compares
the losses and gradient norms of both with the unsharded steps (1e-5
relative): step 1's loss and norm check the forward and the gradients,
step 2's the update. (Weights are not compared: Adam's first step moves a
parameter whose gradient is zero in exact arithmetic, such as attention's
key bias, by the learning rate in the direction of its rounding noise.)

usage: random_pins.py --mpirun CMD --model JSON --data FILE --out DIR
           --batch N --seeds K [--first S]
Prints one line per seed and, for a failure, the seed to rerun it with
(--first SEED --seeds 1); exits 1 when any seed fails.
"""
import argparse, copy, json, os, random, shlex, subprocess, sys

sys.path.insert(0, os.path.dirname(__file__))
from strategy_grid import close  # noqa: E402

MESH = [("data", 2), ("tp", 2)]
PRESETS = ["dp", "zero1", "zero2", "zero3", "tp"]


def run(cmd):
    done = subprocess.run(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    return done.returncode, done.stdout


def pin(model, rng):
    m = copy.deepcopy(model)
    m["training"]["mesh"] = [{"name": n, "size": s} for n, s in MESH]
    for p in m["params"]:
        if rng.random() < 0.4:
            shape = p["shape"]
            dims = [[] for _ in shape]
            for axis, size in MESH:
                if rng.random() < 0.6:
                    d = rng.randrange(len(shape))
                    parts = size
                    for other in dims[d]:
                        parts *= dict(MESH)[other]
                    if shape[d] % parts == 0:
                        dims[d].append(axis)
            p["sharding"] = [",".join(d) for d in dims]
        elif rng.random() < 0.3:
            p["shard"] = rng.choice(PRESETS)
    return m


def main():
    ap = argparse.ArgumentParser()
    for flag in ["--mpirun", "--model", "--data", "--out"]:
        ap.add_argument(flag, required=True)
    for flag, default in [("--batch", 0), ("--seeds", 24), ("--first", 1)]:
        ap.add_argument(flag, type=int, default=default)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    model = json.load(open(a.model))
    flags = ["--data", a.data, "--batch-size", str(a.batch), "--steps", "2",
             "--threads", "1", "--no-shuffle", "--quiet"]
    ref = os.path.join(a.out, "ref")
    # One process accumulates what the 2 data replicas compute.
    for cmd in (["tgc", a.model, "-o", ref, "--grad-accum", "2",
                 "--opt-level=1"],
                [ref] + flags + ["--log", ref + ".jsonl"]):
        code, out = run(cmd)
        if code:
            sys.exit(out)
    def metrics(path):
        with open(path) as f:
            return [e for e in map(json.loads, f) if "loss" in e]
    want = metrics(ref + ".jsonl")
    failed = 0
    for seed in range(a.first, a.first + a.seeds):
        m = pin(model, random.Random(seed))
        path = os.path.join(a.out, f"seed{seed}.json")
        json.dump(m, open(path, "w"), indent=1)
        exe = os.path.join(a.out, f"seed{seed}")
        code, out = run(["tgc", path, "-o", exe, "--opt-level=1"])
        if code == 0:
            code, out = run(shlex.split(a.mpirun) + ["-np", "4", exe] + flags +
                            ["--log", exe + ".jsonl"])
        why = ""
        if code:
            why = "failed: " + out.strip().splitlines()[0] if out.strip() else "failed"
        else:
            got = metrics(exe + ".jsonl")
            if len(got) != len(want):
                why = f"{len(got)} steps logged, not {len(want)}"
            for step, (g, w) in enumerate(zip(got, want), 1):
                for key in ("loss", "grad_norm"):
                    if not why and not close(g[key], w[key], 1e-5):
                        why = f"step {step} {key} {g[key]} vs {w[key]}"
        if why:
            failed += 1
            print(f"seed {seed}: DIFFERENT ({why}); rerun with --first {seed} --seeds 1")
        else:
            print(f"seed {seed}: agrees")
    print(f"{a.seeds - failed} of {a.seeds} seeds agree")
    sys.exit(1 if failed else 0)


main()
