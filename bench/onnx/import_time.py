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

import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
TGC = os.path.join(HERE, "..", "..", "build", "bin", "tgc")


class Attention(nn.Module):
    def __init__(self, c, heads, t):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(c, 3 * c)
        self.c_proj = nn.Linear(c, c)
        self.register_buffer("bias", torch.tril(torch.ones(t, t)).view(1, 1, t, t))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, c, heads, t):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c)
        self.attn = Attention(c, heads, t)
        self.ln_2 = nn.LayerNorm(c)
        self.c_fc = nn.Linear(c, 4 * c)
        self.c_proj = nn.Linear(4 * c, c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab=50257, c=768, heads=12, layers=12, t=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, c)
        self.wpe = nn.Embedding(t, c)
        self.h = nn.ModuleList(Block(c, heads, t) for _ in range(layers))
        self.ln_f = nn.LayerNorm(c)

    def forward(self, idx, targets):
        B, T = idx.size()
        x = self.wte(idx) + self.wpe(torch.arange(0, T, dtype=torch.long))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    work = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tgc-onnx-bench"
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "gpt2-124m.onnx")
    if not os.path.exists(path):
        model = GPT()
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
