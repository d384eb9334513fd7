#!/usr/bin/env python3
"""Train-step time of tgc's CPU executables against PyTorch eager, side by
side on the same machine with the same thread count.

For each model (the MLP and CNN on 8x8 digits, gpt2-tiny at context 64), all
at batch 32 with AdamW: compile the example with tgc, time STEPS steps of our
executable (the median of the step times its JSONL log records, after a
warm-up) and STEPS steps of torch_bench.py, alternating ROUNDS times, and
report the medians. Prints one line per model:

    MODEL: ours X ms/step, pytorch Y ms/step, speedup Y/X

Usage: bench.py TGC WORKDIR [--threads N] [--steps N] [--rounds N] [--models a,b]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BATCH = 32


def model_file(name, workdir):
    """The example at batch 32 (gpt2-tiny bakes its batch into reshapes, so it
    is regenerated; the classifiers only change their batch dims)."""
    path = os.path.join(workdir, name + "-b%d.json" % BATCH)
    if name == "gpt2-tiny":
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "gen_gpt2.py"),
                        "--preset", "tiny", "--batch", str(BATCH), "-o", path],
                       check=True)
        return path
    with open(os.path.join(ROOT, "examples", name + ".json")) as f:
        spec = json.load(f)
    for i in spec["inputs"]:
        i["shape"][0] = BATCH
    spec.setdefault("training", {})["batch_size"] = BATCH
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def data_file(name, workdir):
    rng = np.random.default_rng(0)
    if name == "gpt2-tiny":
        path = os.path.join(workdir, "tokens.bin")
        header = np.zeros(256, np.int32)
        header[:3] = [20240520, 1, 1 << 20]
        with open(path, "wb") as f:
            f.write(header.tobytes())
            f.write(rng.integers(0, 256, 1 << 20).astype(np.uint16).tobytes())
        return path
    path = os.path.join(workdir, "digits.tgcls")
    rows = 2048
    header = np.zeros(32, np.int64)
    header[:6] = [20240521, 1, rows, 64, 10, 8]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(rng.random((rows, 64), dtype=np.float32).tobytes())
        f.write(rng.integers(0, 10, rows).astype(np.int64).tobytes())
    return path


def ours(exe, data, steps, threads, log):
    warmup = 10
    subprocess.run([exe, "--data", data, "--steps", str(steps + warmup),
                    "--batch-size", str(BATCH), "--threads", str(threads),
                    "--log", log, "--quiet"], check=True)
    times = [e["step_ms"] for e in map(json.loads, open(log)) if "step_ms" in e]
    return statistics.median(times[warmup:])


def pytorch(name, steps, threads):
    out = subprocess.run([sys.executable, os.path.join(HERE, "torch_bench.py"),
                          name, str(BATCH), str(threads), str(steps)],
                         check=True, capture_output=True, text=True)
    return float(out.stdout.strip())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tgc")
    parser.add_argument("workdir")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="mlp,cnn,gpt2-tiny")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    lines = []
    for name in args.models.split(","):
        exe = os.path.join(args.workdir, name)
        subprocess.run([args.tgc, model_file(name, args.workdir), "-o", exe],
                       check=True)
        data = data_file(name, args.workdir)
        mine, theirs = [], []
        for r in range(args.rounds):
            mine.append(ours(exe, data, args.steps, args.threads,
                             os.path.join(args.workdir, "%s.%d.jsonl" % (name, r))))
            theirs.append(pytorch(name, args.steps, args.threads))
        a, b = statistics.median(mine), statistics.median(theirs)
        detail = "  %s rounds: ours %s, pytorch %s" % (
            name, " ".join("%.3f" % t for t in mine),
            " ".join("%.3f" % t for t in theirs))
        print(detail, flush=True)
        lines.append("%s: ours %.3f ms/step, pytorch %.3f ms/step, speedup %.2f"
                     % (name, a, b, b / a))
    print("threads %d, batch %d, %d steps x %d rounds (medians)" %
          (args.threads, BATCH, args.steps, args.rounds))
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
