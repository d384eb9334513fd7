#!/usr/bin/env python3
"""Fine-tunes a Hugging Face-layout checkpoint with tgc and with the same
model written as an ordinary PyTorch module, and compares.

The checkpoint is written here as transformers' save_pretrained writes it:
config.json and safetensors under Hugging Face's tensor names, from a
PyTorch module whose parameters carry those names (GPT2LMHeadModel's
"transformer.h.0.attn.c_attn.weight", a Conv1D stored [in, out];
LlamaForCausalLM's "model.layers.0.self_attn.q_proj.weight", an nn.Linear
stored [out, in]), random weights. The Llama one is sharded in two files
with model.safetensors.index.json, in float16 (converted on loading), with
grouped-query attention, llama3 rope scaling and an untied head.

tgc's side: examples/gen_gpt2.py or gen_llama.py --from-config builds the
model file, tgc compiles it, and the executable trains from --init-from DIR
and writes --save-final OUT --format=hf. PyTorch's side trains the module
from the same weights on the same batches with the model file's optimizer
table. Checked: the loss at every step (1e-4 relative), the final weights
read back under Hugging Face's names against the module's (2e-4), and the
saved directory's names and shapes against the checkpoint's.

Usage: hf_checkpoint.py TGC WORKDIR gpt2|llama [STEPS]
"""

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
sys.path.insert(0, os.path.join(HERE, "lib"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "Inputs"))
import hf_dir  # noqa: E402  (Hugging Face directories: read, write_shards)
import safetensors_np  # noqa: E402
import torch_model  # noqa: E402
import train_curves  # noqa: E402  (the token file and its batches)

ROOT = os.path.join(HERE, "..", "..")
RTOL = 1e-4
# The final weights: AdamW divides each gradient by its running RMS, so
# where a gradient is near zero the two sides' rounding (summation orders
# that differ with the BLAS kernels a CPU gets) becomes steps of up to lr.
# Measured 1.17e-4 (transformer.h.1.mlp.c_fc.weight) on a 2-core AMD EPYC
# build host, below 1e-4 on others, with the losses within 1.1e-7.
WEIGHT_RTOL = 2e-4

GPT2_CONFIG = {
    "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"],
    "n_layer": 2, "n_head": 4, "n_embd": 64, "vocab_size": 256,
    "n_positions": 64, "n_ctx": 64, "n_inner": None,
    "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
    "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
    "scale_attn_weights": True, "tie_word_embeddings": True,
    "torch_dtype": "float32",
}

LLAMA_CONFIG = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"],
    "num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
    "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0, "hidden_act": "silu", "attention_bias": False,
    "tie_word_embeddings": False, "torch_dtype": "float16",
    # Wavelengths below 64 / 4 = 16 keep their frequency, those above 64
    # are divided by 8, those between are blended: the head size 16 has
    # frequencies in all three ranges.
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                     "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 64},
}


def causal_attention(q, k, v):
    T, D = q.shape[-2], q.shape[-1]
    att = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    att = att.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(att, dim=-1), v)


class Conv1D(nn.Module):
    """transformers' Conv1D: weight [in, out]."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.empty(n_out))

    def forward(self, x):
        return x @ self.weight + self.bias


class Gpt2Block(nn.Module):
    def __init__(self, c, heads, eps):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(c, eps=eps)
        self.attn = nn.Module()
        self.attn.c_attn = Conv1D(c, 3 * c)
        self.attn.c_proj = Conv1D(c, c)
        self.ln_2 = nn.LayerNorm(c, eps=eps)
        self.mlp = nn.Module()
        self.mlp.c_fc = Conv1D(c, 4 * c)
        self.mlp.c_proj = Conv1D(4 * c, c)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        split = [B, T, self.heads, C // self.heads]
        q, k, v = (t.view(split).transpose(1, 2) for t in (q, k, v))
        y = causal_attention(q, k, v).transpose(1, 2).reshape(B, T, C)
        x = x + self.attn.c_proj(y)
        h = F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh")
        return x + self.mlp.c_proj(h)


class Gpt2LMHead(nn.Module):
    """GPT2LMHeadModel's parameters and forward, without dropout."""

    def __init__(self, cfg):
        super().__init__()
        c = cfg["n_embd"]
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(cfg["vocab_size"], c)
        self.transformer.wpe = nn.Embedding(cfg["n_positions"], c)
        self.transformer.h = nn.ModuleList(
            Gpt2Block(c, cfg["n_head"], cfg["layer_norm_epsilon"])
            for _ in range(cfg["n_layer"]))
        self.transformer.ln_f = nn.LayerNorm(c, eps=cfg["layer_norm_epsilon"])

    def forward(self, idx, targets):
        t = self.transformer
        x = t.wte(idx) + t.wpe(torch.arange(idx.shape[1]))
        for block in t.h:
            x = block(x)
        logits = t.ln_f(x) @ t.wte.weight.T  # the tied head
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1))


class RMSNorm(nn.Module):
    def __init__(self, c, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def llama3_inv_freq(cfg, D):
    """transformers' _compute_llama3_parameters, as written there."""
    base = cfg["rope_theta"]
    inv_freq = 1.0 / (base ** (torch.arange(0, D, 2, dtype=torch.int64)
                               .float() / D))
    s = cfg["rope_scaling"]
    factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
    old = s["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / inv_freq
    llama = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * llama / factor + smooth * llama
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, llama)


def rotate_half(x):
    x1, x2 = x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c, f = cfg["hidden_size"], cfg["intermediate_size"]
        self.h, self.hkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.d = c // self.h
        self.input_layernorm = RMSNorm(c, cfg["rms_norm_eps"])
        self.self_attn = nn.Module()
        for name, n_out in (("q_proj", self.h * self.d),
                            ("k_proj", self.hkv * self.d),
                            ("v_proj", self.hkv * self.d)):
            setattr(self.self_attn, name, nn.Linear(c, n_out, bias=False))
        self.self_attn.o_proj = nn.Linear(self.h * self.d, c, bias=False)
        self.post_attention_layernorm = RMSNorm(c, cfg["rms_norm_eps"])
        self.mlp = nn.Module()
        self.mlp.gate_proj = nn.Linear(c, f, bias=False)
        self.mlp.up_proj = nn.Linear(c, f, bias=False)
        self.mlp.down_proj = nn.Linear(f, c, bias=False)

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        a = self.self_attn
        h = self.input_layernorm(x)
        q = a.q_proj(h).view(B, T, self.h, self.d).transpose(1, 2)
        k = a.k_proj(h).view(B, T, self.hkv, self.d).transpose(1, 2)
        v = a.v_proj(h).view(B, T, self.hkv, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        group = self.h // self.hkv
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        y = causal_attention(q, k, v).transpose(1, 2).reshape(B, T, C)
        x = x + a.o_proj(y)
        h = self.post_attention_layernorm(x)
        m = self.mlp
        return x + m.down_proj(F.silu(m.gate_proj(h)) * m.up_proj(h))


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        c = cfg["hidden_size"]
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(cfg["vocab_size"], c)
        self.model.layers = nn.ModuleList(
            LlamaLayer(cfg) for _ in range(cfg["num_hidden_layers"]))
        self.model.norm = RMSNorm(c, cfg["rms_norm_eps"])
        self.lm_head = nn.Linear(c, cfg["vocab_size"], bias=False)

    def forward(self, idx, targets):
        T = idx.shape[1]
        D = self.cfg["hidden_size"] // self.cfg["num_attention_heads"]
        freqs = torch.outer(torch.arange(T).float(),
                            llama3_inv_freq(self.cfg, D))
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        x = self.model.embed_tokens(idx)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        logits = self.lm_head(self.model.norm(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1))


def write_checkpoint(module, config, out, shards, dtype):
    """save_pretrained's layout: config.json and the state dict, in one
    model.safetensors or `shards` files with an index."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    state = {k: v.detach().numpy().astype(dtype)
             for k, v in module.state_dict().items()}
    if shards == 1:
        safetensors_np.save(os.path.join(out, "model.safetensors"), state,
                            {"format": "pt"})
        return state
    hf_dir.write_shards(out, state, shards,
                        sum(v.nbytes for v in state.values()))
    return state


def random_checkpoint(module, config, out, shards, dtype):
    """Random weights for `module`, written as a Hugging Face directory
    (write_checkpoint), and the module set to the stored values."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("norm.weight") or ".ln_" in name:
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.05 * torch.randn_like(p))
    stored = write_checkpoint(module, config, out, shards, dtype)
    with torch.no_grad():  # the module starts from the stored values
        for name, p in module.named_parameters():
            p.copy_(torch.tensor(stored[name].astype(np.float32)))
    return stored


def main():
    tgc, workdir, kind = sys.argv[1:4]
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    os.makedirs(workdir, exist_ok=True)
    torch.set_num_threads(2)
    torch.manual_seed(0)
    gpt2 = kind == "gpt2"
    config = GPT2_CONFIG if gpt2 else LLAMA_CONFIG
    module = Gpt2LMHead(config) if gpt2 else LlamaForCausalLM(config)
    ckpt = os.path.join(workdir, "checkpoint")
    dtype = np.float32 if gpt2 else np.float16
    stored = random_checkpoint(module, config, ckpt, 1 if gpt2 else 2, dtype)

    # Ours: the model file from the config, trained from the directory.
    model_file = os.path.join(workdir, kind + ".json")
    gen = os.path.join(ROOT, "examples",
                       "gen_gpt2.py" if gpt2 else "gen_llama.py")
    subprocess.run([sys.executable, gen, "--from-config",
                    os.path.join(ckpt, "config.json"), "--batch", "4",
                    "--seq", "32", "--lr", "1e-3", "--warmup", "5",
                    "--steps", str(steps), "-o", model_file], check=True)
    with open(model_file) as f:
        spec = json.load(f)
    rng = np.random.default_rng(1)
    data, batches = train_curves.make_data(spec, workdir, 4, steps, rng)
    exe = os.path.join(workdir, kind)
    log = os.path.join(workdir, "log.jsonl")
    out = os.path.join(workdir, "out")
    subprocess.run([tgc, model_file, "-o", exe], check=True)
    save = ["--save-final", out, "--format=hf"]
    if not gpt2:
        save += ["--max-shard-size", "100000"]
    subprocess.run([exe, "--data", data, "--steps", str(steps),
                    "--init-from", ckpt, "--no-shuffle", "--log", log,
                    "--threads", "2", "--quiet"] + save, check=True)
    ours = [json.loads(line)["loss"] for line in open(log)
            if "loss" in json.loads(line)]

    # PyTorch: the module, with the model file's optimizer table over our
    # parameter names (GPT-2's lack "transformer.").
    model = torch_model.Model(spec)
    named = dict(module.named_parameters())
    params = {k: named[("transformer." if gpt2 else "") + k]
              for k in model.param_names}
    table = model.training["optimizer"]
    optimizer = torch_model.make_optimizer(model, params, table["lr"])
    torch_losses = []
    for k in range(steps):
        lr = torch_model.lr_at(model.training["schedule"], k + 1,
                               model.training["steps"], table["lr"])
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        batch = list(batches[k].values())
        loss = module(batch[0].long(), batch[1].long())
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(),
                                       table["clip_grad_norm"])
        optimizer.step()
        torch_losses.append(loss.item())

    failures = []
    if len(ours) != steps:
        failures.append("our log has %d steps, expected %d" % (len(ours), steps))
    worst = 0.0
    for k, (a, b) in enumerate(zip(ours, torch_losses)):
        err = abs(a - b) / abs(b)
        worst = max(worst, err)
        if err > RTOL:
            failures.append("step %d: loss %.7g, torch %.7g (rel %.2e)"
                            % (k + 1, a, b, err))
    saved = hf_dir.read(out)
    shapes = {k: list(v.shape) for k, v in stored.items()}
    if {k: list(v.shape) for k, v in saved.items()} != shapes:
        failures.append("saved names or shapes differ: %s" % sorted(
            set(saved) ^ set(stored)))
    worst_w = 0.0
    for name, p in module.named_parameters():
        if name not in saved:
            continue
        ref, got = p.detach().numpy(), saved[name]
        if name.endswith("attn.c_attn.bias"):
            # The key third's gradient is zero in exact arithmetic, so Adam
            # turns both sides' rounding noise into steps of ~lr: it may only
            # drift by that much from where it started.
            d = ref.shape[0] // 3
            start = stored[name][d:2 * d]
            drift = max(np.abs(got[d:2 * d] - start).max(),
                        np.abs(ref[d:2 * d] - start).max())
            if drift > 2e-3 * steps:
                failures.append("%s: the key bias drifted %.2e" % (name, drift))
            ref = np.concatenate([ref[:d], ref[2 * d:]])
            got = np.concatenate([got[:d], got[2 * d:]])
        err = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-3))
        worst_w = max(worst_w, err)
        if err > WEIGHT_RTOL:
            failures.append("%s: final weights differ by %.2e relative"
                            % (name, err))
    layout = ("%d shards" % len(set(json.load(open(os.path.join(
        out, "model.safetensors.index.json")))["weight_map"].values()))
        if os.path.exists(os.path.join(out, "model.safetensors.index.json"))
        else "one file")
    print("%s: %d steps from the checkpoint, loss %.4f -> %.4f (torch %.4f "
          "-> %.4f), worst loss rel err %.2e, worst weight rel err %.2e"
          % (kind, steps, ours[0], ours[-1], torch_losses[0],
             torch_losses[-1], worst, worst_w))
    print("%s: saved %d tensors in %s, names and shapes as the checkpoint's"
          % (kind, len(saved), layout) if not any("saved" in f for f in
                                                  failures) else "")
    for f in failures[:20]:
        print("  differ: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
