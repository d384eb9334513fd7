#!/usr/bin/env python3
"""How long tgc takes to bring an exported GPT-2 124M to tg IR.

Exports nanoGPT's GPT-2 (124M: 12 layers, d 768, 12 heads, vocab 50257,
context 1024; batch 8 x sequence 1024, the loss inside) with
torch.onnx.export at opset 17 in training mode (an ONNX file of about
500 MB), then times `tgc model.onnx --compile-to=import` (parse, shape
inference, folding, the weights file, the model file's import) and
`--compile-to=precision` (tg-raise too), each REPEATS times, and prints the
median. The file is cached in WORKDIR between runs.

    /usr/bin/python3 bench/onnx/import_time.py [WORKDIR] [REPEATS]
"""

import os
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
TGC = os.path.join(HERE, "..", "..", "build", "bin", "tgc")
# The nanoGPT module the import tests export (test/Integration).
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "Integration"))
from onnx_curves import GPT  # noqa: E402


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tgc-onnx-bench"
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "gpt2-124m.onnx")
    if not os.path.exists(path):
        model = GPT(vocab=50257, c=768, heads=12, layers=12, t=1024)
        example = (torch.zeros(8, 1024, dtype=torch.long),
                   torch.zeros(8, 1024, dtype=torch.long))
        start = time.perf_counter()
        torch.onnx.export(model, example, path, opset_version=17,
                          input_names=["idx", "targets"],
                          output_names=["loss"],
                          training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False)
        print("exported in %.1f s" % (time.perf_counter() - start))
    print("model: %s, %.0f MB" % (path, os.path.getsize(path) / 1e6))
    for phase in ("import", "precision"):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run = subprocess.run([TGC, path, "--compile-to=" + phase, "-o",
                                  os.path.join(work, phase + ".mlir")],
                                 check=True, stderr=subprocess.PIPE, text=True)
            times.append(time.perf_counter() - start)
        if phase == "import":
            print(run.stderr.splitlines()[0])
        print("tgc --compile-to=%s: median %.2f s of %d (%s)" % (
            phase, statistics.median(times), repeats,
            ", ".join("%.2f" % t for t in times)))


if __name__ == "__main__":
    main()
