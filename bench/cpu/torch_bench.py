#!/usr/bin/env python3
"""Times PyTorch eager train steps (forward, backward, AdamW) on the CPU.
Usage: torch_bench.py MODEL BATCH THREADS STEPS; prints the median ms/step."""

import statistics
import sys
import time

import torch

import torch_models


def main():
    name, batch_size, threads, steps = (sys.argv[1], int(sys.argv[2]),
                                        int(sys.argv[3]), int(sys.argv[4]))
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torch_models.make(name)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch_models.batch(name, batch_size)
    times = []
    for i in range(steps + 5):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(x, y)
        loss.backward()
        opt.step()
        if i >= 5:
            times.append(time.perf_counter() - start)
    print("%.4f" % (1000 * statistics.median(times)))


if __name__ == "__main__":
    main()
