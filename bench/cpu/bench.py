#!/usr/bin/env python3
"""Train-step time of tgc's CPU executables against PyTorch eager, side by
side on the same machine, doing the same work.

Models: the MLP and the CNN (8x8 digits shapes), gpt2-tiny (context 64), all
at batch 32, and GPT-2 124M shapes at fp32, batch 4, sequence 128; AdamW
with each model file's hyperparameters (and its gradient clipping).

Fairness:
- the same initial weights: our executable writes its initial parameters
  (--steps 0 --save-final) and both sides start from that file;
- the same batches in the same order: one data file, our loader with
  --no-shuffle, torch_bench.py reading it the same way (the first losses are
  printed side by side and must agree);
- each side at its best thread configuration on the same cores: ours with
  --threads N; PyTorch tried with every split of torch.set_num_threads and
  OPENBLAS_NUM_THREADS within N cores, the fastest kept (and named);
- rounds alternate the two sides; figures are medians.

For each thread count it also measures the machine's own sgemm throughput
(OpenBLAS through numpy, a 512x768x3072 GEMM: GPT-2 124M's MLP at 512
tokens) and prints each side's model GFLOP/s beside it.

Usage: bench.py TGC WORKDIR [--threads 1,2] [--steps N] [--rounds N]
                [--models mlp,cnn,gpt2-tiny,gpt2-124m]
"""

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# name: how to make the model file, the torch module kind, heads, steps
# (timed steps per round; the 124M step takes seconds).
MODELS = {
    "mlp": dict(kind="mlp", batch=32),
    "cnn": dict(kind="cnn", batch=32),
    "gpt2-tiny": dict(kind="gpt2", preset="tiny", batch=32, seq=64, heads=4),
    "gpt2-124m": dict(kind="gpt2", preset="124m", batch=4, seq=128, heads=12,
                      steps=5, warmup=2),
}


def model_file(name, m, workdir):
    path = os.path.join(workdir, name + ".json")
    if m["kind"] == "gpt2":
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "gen_gpt2.py"),
                        "--preset", m["preset"], "--batch", str(m["batch"]),
                        "--seq", str(m["seq"]), "--precision", "fp32",
                        "--grad-accum", "1", "-o", path], check=True)
        return path
    with open(os.path.join(ROOT, "examples", name + ".json")) as f:
        spec = json.load(f)
    for i in spec["inputs"]:
        i["shape"][0] = m["batch"]
    spec.setdefault("training", {})["batch_size"] = m["batch"]
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def data_file(name, spec, workdir):
    rng = np.random.default_rng(0)
    if name.startswith("gpt2"):
        vocab = next(p["shape"][0] for p in spec["params"]
                     if p["name"] == "wte.weight")
        path = os.path.join(workdir, name + "-tokens.bin")
        header = np.zeros(256, np.int32)
        header[:3] = [20240520, 1, 1 << 20]
        with open(path, "wb") as f:
            f.write(header.tobytes())
            f.write(rng.integers(0, vocab, 1 << 20).astype(np.uint16).tobytes())
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


def model_flops(m, spec):
    """Model FLOPs of one training step: 3x the forward's GEMM and
    convolution FLOPs (forward, and the backward's two products)."""
    B = m["batch"]
    if m["kind"] == "mlp":
        fwd = 2 * B * (64 * 128 + 128 * 10)
    elif m["kind"] == "cnn":
        fwd = 2 * B * (64 * 16 * 9 + 16 * 32 * 16 * 9 + 128 * 10)
    else:
        shapes = {p["name"]: p["shape"] for p in spec["params"]}
        vocab, d = shapes["wte.weight"]
        layers = len({n.split(".")[1] for n in shapes if n.startswith("h.")})
        T = m["seq"]
        tokens = B * T
        fwd = (layers * (2 * tokens * 12 * d * d + 4 * B * T * T * d) +
               2 * tokens * d * vocab)
    return 3 * fwd


def sgemm_gflops(threads):
    """OpenBLAS sgemm throughput with `threads` threads (best of 10)."""
    code = ("import time, numpy as np\n"
            "a = np.random.rand(512, 768).astype(np.float32)\n"
            "b = np.random.rand(768, 3072).astype(np.float32)\n"
            "a @ b\n"
            "best = min((lambda t: (a @ b, time.perf_counter() - t)[1])"
            "(time.perf_counter()) for _ in range(10))\n"
            "print(2 * 512 * 768 * 3072 / best / 1e9)\n")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True)
    return float(out.stdout)


def ours(exe, data, weights, threads, steps, warmup, log):
    subprocess.run([exe, "--data", data, "--steps", str(steps + warmup),
                    "--init-from", weights, "--no-shuffle",
                    "--threads", str(threads), "--log", log, "--quiet"],
                   check=True)
    entries = [e for e in map(json.loads, open(log)) if "step_ms" in e]
    times = [e["step_ms"] for e in entries]
    return statistics.median(times[warmup:]), entries[0]["loss"]


def pytorch(job, config, steps, warmup, workdir):
    torch_threads, blas_threads = config
    path = os.path.join(workdir, "job.json")
    with open(path, "w") as f:
        json.dump(dict(job, threads=torch_threads, steps=steps,
                       warmup=warmup), f)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas_threads),
               OMP_NUM_THREADS=str(torch_threads))
    out = subprocess.run([sys.executable, os.path.join(HERE, "torch_bench.py"),
                          path], env=env, check=True, capture_output=True,
                         text=True)
    result = json.loads(out.stdout)
    return result["ms"], result["first_loss"]


def configs(threads):
    """(torch threads, OpenBLAS threads) within `threads` cores."""
    return sorted({(t, b) for t in range(1, threads + 1)
                   for b in (1, threads)})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tgc")
    parser.add_argument("workdir")
    parser.add_argument("--threads", default="1,%d" % os.cpu_count())
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    thread_counts = sorted({int(t) for t in args.threads.split(",")})
    names = args.models.split(",")

    built = {}
    for name in names:
        m = MODELS[name]
        path = model_file(name, m, args.workdir)
        spec = json.load(open(path))
        exe = os.path.join(args.workdir, name)
        subprocess.run([args.tgc, path, "-o", exe], check=True)
        weights = os.path.join(args.workdir, name + "-init.safetensors")
        subprocess.run([exe, "--steps", "0", "--save-final", weights,
                        "--quiet"], check=True)
        data = data_file(name, spec, args.workdir)
        job = dict(kind=m["kind"], model=path, weights=weights, data=data,
                   heads=m.get("heads", 1))
        built[name] = (m, spec, exe, data, weights, job)

    tables = []
    for threads in thread_counts:
        sgemm = sgemm_gflops(threads)
        rows = []
        for name in names:
            m, spec, exe, data, weights, job = built[name]
            steps = m.get("steps", args.steps)
            warmup = m.get("warmup", 5)
            probe = max(2, steps // 3)
            # PyTorch's best thread split on these cores, from a short probe.
            probes = {c: pytorch(job, c, probe, warmup, args.workdir)[0]
                      for c in configs(threads)}
            best = min(probes, key=probes.get)
            mine, theirs = [], []
            for r in range(args.rounds):
                log = os.path.join(args.workdir, "%s.t%d.%d.jsonl" %
                                   (name, threads, r))
                t, first_ours = ours(exe, data, weights, threads, steps,
                                     warmup, log)
                mine.append(t)
                t, first_torch = pytorch(job, best, steps, warmup, args.workdir)
                theirs.append(t)
            a, b = statistics.median(mine), statistics.median(theirs)
            flops = model_flops(m, spec)
            print("  threads %d %s: ours %s, pytorch %s ms; pytorch probes %s"
                  % (threads, name, " ".join("%.3f" % t for t in mine),
                     " ".join("%.3f" % t for t in theirs),
                     ", ".join("torch %d/blas %d %.3f" % (c[0], c[1], v)
                               for c, v in sorted(probes.items()))),
                  flush=True)
            rows.append((name, a, b, best, flops, first_ours, first_torch))
        tables.append((threads, sgemm, rows))

    for threads, sgemm, rows in tables:
        print("\nthreads %d: sgemm %.1f GFLOP/s (OpenBLAS, 512x768x3072); "
              "%d rounds, medians" % (threads, sgemm, args.rounds))
        print("%-10s %10s %10s %8s %14s %16s %14s %21s" % (
            "model", "ours ms", "torch ms", "speedup", "torch threads",
            "ours GFLOP/s", "torch GFLOP/s", "first loss ours/torch"))
        for name, a, b, best, flops, fo, ft in rows:
            gf_ours, gf_torch = flops / a / 1e6, flops / b / 1e6
            print("%-10s %10.3f %10.3f %7.2fx %14s %8.1f (%3.0f%%) %8.1f (%3.0f%%) %10.4f/%.4f" % (
                name, a, b, b / a, "%d+blas %d" % best, gf_ours,
                100 * gf_ours / sgemm, gf_torch, 100 * gf_torch / sgemm,
                fo, ft))


if __name__ == "__main__":
    main()
