#!/usr/bin/env python3
"""GPT-2 124M training throughput in PyTorch on one GPU, the reference for
tgc's CUDA executable (bench/gpu/run.sh).

The same model as examples/gpt2-124m.json (nanoGPT / llm.c's GPT-2: learned
positions, pre-norm blocks, tanh GELU, LM head tied to the token embedding),
trained the way a PyTorch user would for speed: bf16 autocast over fp32
weights, flash attention through scaled_dot_product_attention, fused AdamW
(betas 0.9/0.95, weight decay 0.1 off biases and norms), gradient clipping
at 1.0. Random tokens, a new batch each step, copied from pinned memory.

    torch_gpt2.py --mode eager|compile [--batch 8] [--seq 1024] \
                  [--steps 20] [--warmup 5] [--peak-tflops X]

Prints one line: median step time and tokens/s over the steps after the
warm-up, and MFU with the FLOPs tgc counts for a step (matmuls 2*M*N*K,
forward and backward; causal attention 4*B*H*T*T*D/2 forward, twice that
backward).
"""
import argparse
import contextlib
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, CTX, LAYERS, HEADS, D = 50257, 1024, 12, 12, 768


def flash_attention():
    """A context that restricts scaled_dot_product_attention to flash."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    except ImportError:  # PyTorch < 2.3
        return torch.backends.cuda.sdp_kernel(
            enable_flash=True, enable_math=False, enable_mem_efficient=False)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(D)
        self.c_attn = nn.Linear(D, 3 * D)
        self.c_proj = nn.Linear(D, D)
        self.ln_2 = nn.LayerNorm(D)
        self.c_fc = nn.Linear(D, 4 * D)
        self.mlp_proj = nn.Linear(4 * D, D)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T, HEADS, D // HEADS).transpose(1, 2)
                   for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).reshape(B, T, D))
        h = F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp_proj(h)


class GPT2(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D)
        self.wpe = nn.Embedding(CTX, D)
        self.h = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * LAYERS) \
                    if name.endswith(("c_proj.weight", "mlp_proj.weight")) \
                    else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        T = idx.shape[1]
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)
        return F.cross_entropy(logits.view(-1, VOCAB).float(),
                               targets.view(-1))


def step_flops(B, T):
    """tgc's count (codegen/cuda/LaunchPlan.cpp, countFlops) for GPT-2 124M."""
    tokens = B * T
    forward = 2 * tokens * (LAYERS * 12 * D * D + D * VOCAB)
    attention = LAYERS * 6 * B * T * T * D  # causal: fwd 2BT^2D, bwd twice
    return 3 * forward + attention


def peak_flops(name):
    """Dense bf16 peak of the GPU, as runtime/cuda's table knows it."""
    n = name.upper()
    if "H200" in n or "GH200" in n:
        return 989e12
    if "H100" in n:
        if "PCIE" in n:
            return 756e12
        if "NVL" in n:
            return 835e12
        return 989e12
    if "A100" in n:
        return 312e12
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["eager", "compile"],
                        default="eager")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--peak-tflops", type=float)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_gpt2.py: PyTorch sees no CUDA device")

    torch.manual_seed(0)
    device = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    model = GPT2().to(device)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1},
         {"params": no_decay, "weight_decay": 0.0}],
        lr=6e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    run = torch.compile(model) if args.mode == "compile" else model

    B, T = args.batch, args.seq
    host = torch.empty((2, B, T), dtype=torch.int64).pin_memory()

    def train_step():
        host.random_(0, VOCAB)
        idx = host[0].to(device, non_blocking=True)
        targets = host[1].to(device, non_blocking=True)
        with torch.autocast("cuda", dtype=torch.bfloat16), flash_attention():
            loss = run(idx, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    times = []
    loss = None
    for i in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        loss = train_step()
        torch.cuda.synchronize()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
    step = statistics.median(times)
    name = torch.cuda.get_device_name()
    peak = args.peak_tflops * 1e12 if args.peak_tflops else peak_flops(name)
    label = "pytorch " + ("eager" if args.mode == "eager" else "compile")
    line = "%-22s %9.0f tokens/s  %8.1f ms/step" % (
        label + ":", B * T / step, step * 1e3)
    line += ("  MFU %5.1f%%" % (100 * step_flops(B, T) / step / peak)) \
        if peak else "  MFU n/a (unknown GPU peak)"
    print(line + "  (median of %d steps, loss %.3f; %s, torch %s)"
          % (len(times), loss.item(), name, torch.__version__))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
