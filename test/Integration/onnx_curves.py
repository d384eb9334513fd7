#!/usr/bin/env python3
"""Exports an ordinary PyTorch module with torch.onnx.export, compiles the
ONNX file with tgc, trains it from the exported weights, and compares with
PyTorch training the same module on the same batches.

Modules: an MLP (Linear/ReLU, the loss F.cross_entropy inside the module),
a CNN (Conv2d, BatchNorm2d in training mode, max and global average pools),
a GPT-2-style decoder as nanoGPT writes it (fused c_attn, a causal mask
buffer and masked_fill, tanh GELU, tied head) and a Llama-style decoder
(RMSNorm written out, rotary embeddings from buffers, grouped-query
attention by repeat_interleave, SwiGLU), each exported at opset 17 in
training mode with its loss. The optimizer is AdamW from a --training side
file, the same on both sides. Checked: the loss at every step (1e-4
relative). Prints the op counts of the IR (the attention ops and what
they were built from).

Usage: onnx_curves.py TGC WORKDIR mlp|cnn|gpt|llama [STEPS]
"""

import collections
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_curves  # noqa: E402  (data files and their batches)

RTOL = 1e-4
TRAINING = {"optimizer": {"kind": "adamw", "lr": 3e-3, "beta1": 0.9,
                          "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1}}


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x, y):
        return F.cross_entropy(self.fc2(F.relu(self.fc1(x))), y)


class CNN(nn.Module):
    """Conv -> BatchNorm (training: the batch's statistics) -> ReLU ->
    MaxPool, twice, then a global average pool and a linear head."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x, y):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return F.cross_entropy(self.fc(x), y)


class CausalSelfAttention(nn.Module):
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
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GptBlock(nn.Module):
    def __init__(self, c, heads, t):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c)
        self.attn = CausalSelfAttention(c, heads, t)
        self.ln_2 = nn.LayerNorm(c)
        self.c_fc = nn.Linear(c, 4 * c)
        self.c_proj = nn.Linear(4 * c, c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab=256, c=64, heads=4, layers=2, t=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, c)
        self.wpe = nn.Embedding(t, c)
        self.h = nn.ModuleList(GptBlock(c, heads, t) for _ in range(layers))
        self.ln_f = nn.LayerNorm(c)

    def forward(self, idx, targets):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class RMSNorm(nn.Module):
    def __init__(self, c, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, c, heads, kv_heads, f):
        super().__init__()
        self.h, self.hkv, self.d = heads, kv_heads, c // heads
        self.input_layernorm = RMSNorm(c)
        self.q_proj = nn.Linear(c, heads * self.d, bias=False)
        self.k_proj = nn.Linear(c, kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(c, kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(heads * self.d, c, bias=False)
        self.post_attention_layernorm = RMSNorm(c)
        self.gate_proj = nn.Linear(c, f, bias=False)
        self.up_proj = nn.Linear(c, f, bias=False)
        self.down_proj = nn.Linear(f, c, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, C = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, T, self.h, self.d).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.hkv, self.d).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.hkv, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        group = self.h // self.hkv
        k = k[:, :, None].expand(B, self.hkv, group, T, self.d).reshape(B, self.h, T, self.d)
        v = v[:, :, None].expand(B, self.hkv, group, T, self.d).reshape(B, self.h, T, self.d)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.d) + mask
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.o_proj(y)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, vocab=256, c=64, heads=4, kv_heads=2, f=128, layers=2, t=32):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, c)
        self.layers = nn.ModuleList(LlamaLayer(c, heads, kv_heads, f) for _ in range(layers))
        self.norm = RMSNorm(c)
        self.lm_head = nn.Linear(c, vocab, bias=False)
        d = c // heads
        inv_freq = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        freqs = torch.outer(torch.arange(t).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        # Not in the state dict: the export writes them as Constant nodes
        # (a persistent float buffer the loss reaches would be a weight).
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        self.register_buffer("mask", torch.full((t, t), float("-inf")).triu(1),
                             persistent=False)

    def forward(self, idx, targets):
        x = self.embed_tokens(idx)
        for layer in self.layers:
            x = layer(x, self.cos, self.sin, self.mask)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def main():
    tgc, workdir, kind = sys.argv[1:4]
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 50
    os.makedirs(workdir, exist_ok=True)
    torch.set_num_threads(2)
    torch.manual_seed(0)
    if kind == "mlp":
        module, batch = MLP(), 8
        example = (torch.randn(batch, 64), torch.randint(0, 10, (batch,)))
        names = ["x", "y"]
    elif kind == "cnn":
        module, batch = CNN(), 16
        example = (torch.randn(batch, 1, 8, 8), torch.randint(0, 10, (batch,)))
        names = ["x", "y"]
    else:
        module, batch = (GPT() if kind == "gpt" else Llama()), 4
        example = (torch.randint(0, 256, (batch, 32)),
                   torch.randint(0, 256, (batch, 32)))
        names = ["idx", "targets"]
    with torch.no_grad():  # GPT-2's initialisation, as nanoGPT's
        for name, p in module.named_parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.02)
    onnx_path = os.path.join(workdir, kind + ".onnx")
    torch.onnx.export(module, example, onnx_path, opset_version=17,
                      input_names=names, output_names=["loss"],
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)
    training = os.path.join(workdir, "training.json")
    with open(training, "w") as f:
        json.dump(TRAINING, f)

    exe = os.path.join(workdir, kind)
    subprocess.run([tgc, onnx_path, "--training", training, "-o", exe],
                   check=True)
    ir = subprocess.run([tgc, onnx_path, "--training", training,
                         "--compile-to=autodiff"], check=True,
                        capture_output=True, text=True).stdout
    with open(onnx_path + ".json") as f:
        # FlatBuffers' JSON spells infinities -inf; Python's -Infinity.
        spec = json.loads(f.read().replace("-inf", "-Infinity"))
    rng = np.random.default_rng(1)
    data, batches = train_curves.make_data(spec, workdir, batch, steps, rng)
    log = os.path.join(workdir, "log.jsonl")
    subprocess.run([exe, "--data", data, "--steps", str(steps), "--no-shuffle",
                    "--log", log, "--threads", "2", "--quiet"], check=True)
    ours = [e["loss"] for e in map(json.loads, open(log)) if "loss" in e]

    opt = TRAINING["optimizer"]
    optimizer = torch.optim.AdamW(module.parameters(), lr=opt["lr"],
                                  betas=(opt["beta1"], opt["beta2"]),
                                  eps=opt["eps"],
                                  weight_decay=opt["weight_decay"])
    theirs = []
    for k in range(steps):
        optimizer.zero_grad()
        args = [t.long() if not t.is_floating_point() else t
                for t in batches[k].values()]
        loss = module(*args)
        loss.backward()
        optimizer.step()
        theirs.append(loss.item())

    failures = []
    if len(ours) != steps:
        failures.append("our log has %d steps, expected %d" % (len(ours), steps))
    worst = 0.0
    for k, (a, b) in enumerate(zip(ours, theirs)):
        err = abs(a - b) / abs(b)
        worst = max(worst, err)
        if err > RTOL:
            failures.append("step %d: loss %.7g, torch %.7g (rel %.2e)"
                            % (k + 1, a, b, err))
    ops = collections.Counter(
        line.split("= ")[1].split()[0] for line in ir.splitlines()
        if "= tg." in line and "func.func @forward_backward" not in line)
    print("%s: %d steps from the export, loss %.4f -> %.4f (torch %.4f -> "
          "%.4f), worst rel err %.2e" % (kind, steps, ours[0], ours[-1],
                                         theirs[0], theirs[-1], worst))
    print("%s: tg.attention %d, tg.gelu %d, tg.silu %d, tg.rms_norm %d, "
          "tg.softmax %d" % (kind, ops["tg.attention"], ops["tg.gelu"],
                             ops["tg.silu"], ops["tg.rms_norm"],
                             ops["tg.softmax"]))
    for f in failures[:20]:
        print("  differ: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
