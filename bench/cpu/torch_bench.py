#!/usr/bin/env python3
"""Times PyTorch eager train steps on the CPU doing the work our executable
does: the same model, the same initial weights (our safetensors file), the
same batches in the same order (our data file, read as our loader reads it
with --no-shuffle), and the training table's AdamW (betas, eps, weight decay
with its no_decay patterns) and gradient clipping.

Usage: torch_bench.py JOB.json; JOB has kind (mlp, cnn, gpt2), model (the
model file), weights, data, threads, steps, warmup and, for gpt2, heads.
Prints one JSON line: the median step time in ms and the first loss.
OPENBLAS_NUM_THREADS is the caller's to set (before torch loads).
"""

import fnmatch
import json
import os
import statistics
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "Integration", "lib"))
import safetensors_np  # noqa: E402
import torch_models  # noqa: E402


def batches(job, spec, count):
    """The first `count` batches our loader gives with --no-shuffle."""
    inputs = spec["inputs"]
    batch = inputs[0]["shape"][0]
    if job["kind"] == "gpt2":
        seq = inputs[0]["shape"][1]
        raw = np.fromfile(job["data"], dtype=np.uint16, offset=256 * 4)
        windows = (len(raw) - 1) // seq
        out = []
        for b in range(count):
            rows = [((b * batch + r) % windows) * seq for r in range(batch)]
            w = np.stack([raw[s:s + seq + 1] for s in rows]).astype(np.int64)
            out.append((torch.from_numpy(np.ascontiguousarray(w[:, :-1])),
                        torch.from_numpy(np.ascontiguousarray(w[:, 1:]))))
        return out
    header = np.fromfile(job["data"], dtype=np.int64, count=32)
    rows, features = int(header[2]), int(header[3])
    x = np.fromfile(job["data"], dtype=np.float32, offset=256,
                    count=rows * features).reshape(rows, features)
    y = np.fromfile(job["data"], dtype=np.int64,
                    offset=256 + rows * features * 4, count=rows)
    shape = [batch] + inputs[0]["shape"][1:]
    out = []
    for b in range(count):
        idx = [(b * batch + r) % rows for r in range(batch)]
        out.append((torch.from_numpy(x[idx]).reshape(shape),
                    torch.from_numpy(y[idx])))
    return out


def optimizer(model, table):
    opt = table.get("optimizer", {})
    no_decay = opt.get("no_decay", [])
    decay, plain = [], []
    for name, p in model.named_parameters():
        # Our names are the module paths; nn.Linear's weight is ours too.
        (plain if any(fnmatch.fnmatch(name, g) for g in no_decay)
         else decay).append(p)
    groups = [{"params": decay, "weight_decay": opt.get("weight_decay", 0.0)},
              {"params": plain, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=opt.get("lr", 1e-3),
                             betas=(opt.get("beta1", 0.9),
                                    opt.get("beta2", 0.999)),
                             eps=opt.get("eps", 1e-8))


def main():
    job = json.load(open(sys.argv[1]))
    torch.set_num_threads(job["threads"])
    spec = json.load(open(job["model"]))
    spec["heads"] = job.get("heads", 1)
    model = torch_models.make(job["kind"], spec)
    tensors, _ = safetensors_np.load(job["weights"])
    torch_models.load_tgc_weights(model, tensors)
    table = spec.get("training", {})
    opt = optimizer(model, table)
    clip = table.get("optimizer", {}).get("clip_grad_norm", 0.0)
    data = batches(job, spec, job["warmup"] + job["steps"])
    times, first = [], None
    for i, (x, y) in enumerate(data):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        elapsed = time.perf_counter() - start
        if first is None:
            first = loss.item()
        if i >= job["warmup"]:
            times.append(elapsed)
    print(json.dumps({"ms": 1000 * statistics.median(times),
                      "first_loss": first}))


if __name__ == "__main__":
    main()
