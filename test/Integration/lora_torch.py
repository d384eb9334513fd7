#!/usr/bin/env python3
"""LoRA fine-tuning of a Hugging Face-layout GPT-2 with tgc --lora beside
the same module in PyTorch with hand-written LoRA layers.

The checkpoint and the module are hf_checkpoint.py's (GPT2LMHeadModel's
names, random weights). tgc: gen_gpt2.py --from-config, then tgc --lora=r=4,
alpha=8,targets=c_attn,c_proj (every attn.c_attn, attn.c_proj and
mlp.c_proj), trained from --init-from DIR. PyTorch: each of those Conv1D
wrapped as y = x @ W + b + (x @ A) @ B * alpha / r, the base frozen, AdamW
over A and B with the model file's table, starting from the adapters the
executable drew (its --steps 0 --save-final). Checked: the loss at every
step and the final adapters (1e-4 relative), and the base weights unchanged
bit for bit.

Usage: lora_torch.py TGC WORKDIR [STEPS]
"""

import json
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "lib"))
import hf_checkpoint as hf  # noqa: E402
import safetensors_np  # noqa: E402
import torch_model  # noqa: E402
import train_curves  # noqa: E402

RANK, ALPHA, RTOL = 4, 8.0, 1e-4


class LoraConv1D(nn.Module):
    def __init__(self, base, a, b):
        super().__init__()
        self.base = base
        self.lora_A = nn.Parameter(torch.tensor(a))
        self.lora_B = nn.Parameter(torch.tensor(b))

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A) @ self.lora_B * (ALPHA / RANK)


def main():
    tgc, workdir = sys.argv[1:3]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    os.makedirs(workdir, exist_ok=True)
    torch.set_num_threads(2)
    torch.manual_seed(0)
    config = hf.GPT2_CONFIG
    module = hf.Gpt2LMHead(config)
    ckpt = os.path.join(workdir, "checkpoint")
    hf.random_checkpoint(module, config, ckpt, 1, np.float32)

    model_file = os.path.join(workdir, "gpt2.json")
    subprocess.run([sys.executable, os.path.join(hf.ROOT, "examples",
                                                 "gen_gpt2.py"),
                    "--from-config", os.path.join(ckpt, "config.json"),
                    "--batch", "4", "--seq", "32", "--lr", "1e-3",
                    "--warmup", "5", "--steps", str(steps), "-o", model_file],
                   check=True)
    with open(model_file) as f:
        spec = json.load(f)
    data, batches = train_curves.make_data(spec, workdir, 4, steps,
                                           np.random.default_rng(1))
    exe = os.path.join(workdir, "lora")
    subprocess.run([tgc, model_file, "-o", exe,
                    "--lora=r=%d,alpha=%g,targets=c_attn,c_proj" % (RANK, ALPHA)],
                   check=True)
    start = os.path.join(workdir, "start.safetensors")
    final = os.path.join(workdir, "final.safetensors")
    log = os.path.join(workdir, "log.jsonl")
    common = ["--data", data, "--init-from", ckpt, "--no-shuffle",
              "--threads", "2", "--quiet"]
    subprocess.run([exe, "--steps", "0", "--save-final", start] + common,
                   check=True)
    subprocess.run([exe, "--steps", str(steps), "--log", log,
                    "--save-final", final] + common, check=True)
    ours = [e["loss"] for e in map(json.loads, open(log)) if "loss" in e]
    drawn, _ = safetensors_np.load(start)
    ended, _ = safetensors_np.load(final)

    # PyTorch: the adapters the executable drew, the base frozen.
    for p in module.parameters():
        p.requires_grad_(False)
    adapters = {}
    for i, block in enumerate(module.transformer.h):
        for parent, attr, ours_name in ((block.attn, "c_attn", "attn.c_attn"),
                                        (block.attn, "c_proj", "attn.c_proj"),
                                        (block.mlp, "c_proj", "mlp.c_proj")):
            prefix = "h.%d.%s" % (i, ours_name)
            wrapped = LoraConv1D(getattr(parent, attr),
                                 drawn[prefix + ".lora_A"],
                                 drawn[prefix + ".lora_B"])
            setattr(parent, attr, wrapped)
            adapters[prefix + ".lora_A"] = wrapped.lora_A
            adapters[prefix + ".lora_B"] = wrapped.lora_B
    table = spec["training"]["optimizer"]
    optimizer = torch.optim.AdamW(
        list(adapters.values()), lr=table["lr"],
        betas=(table["beta1"], table["beta2"]), eps=table["eps"],
        weight_decay=table["weight_decay"])
    theirs = []
    for k in range(steps):
        lr = torch_model.lr_at(spec["training"]["schedule"], k + 1,
                               spec["training"]["steps"], table["lr"])
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        batch = list(batches[k].values())
        loss = module(batch[0].long(), batch[1].long())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(adapters.values()),
                                       table["clip_grad_norm"])
        optimizer.step()
        theirs.append(loss.item())

    failures = []
    worst = max(abs(a - b) / abs(b) for a, b in zip(ours, theirs))
    if len(ours) != steps or worst > RTOL:
        failures.append("losses differ: worst %.2e" % worst)
    worst_w = 0.0
    for name, p in adapters.items():
        ref = p.detach().numpy()
        err = float(np.abs(ended[name] - ref).max() /
                    max(np.abs(ref).max(), 1e-3))
        worst_w = max(worst_w, err)
        if err > RTOL:
            failures.append("%s differs by %.2e relative" % (name, err))
    moved = [k for k in ended if "lora_" not in k and "." in k
             and k in drawn and not np.array_equal(ended[k], drawn[k])
             and not k.endswith(("exp_avg", "exp_avg_sq"))]
    if moved:
        failures.append("base weights moved: %s" % ", ".join(moved[:5]))
    print("lora: %d steps, %d adapters, loss %.4f -> %.4f (torch %.4f -> "
          "%.4f), worst loss rel err %.2e, worst adapter rel err %.2e; "
          "base weights unchanged: %s" % (
              steps, len(adapters), ours[0], ours[-1], theirs[0], theirs[-1],
              worst, worst_w, "no" if moved else "yes"))
    for f in failures:
        print("  differ: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
