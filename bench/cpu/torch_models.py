"""PyTorch versions of the benchmark models, written the way a PyTorch user
would (nn.Module, fused torch ops), for the CPU speed comparison.

Module names follow the parameter names of our model files (examples/*.json,
examples/gen_gpt2.py), so a safetensors file of our initial weights loads
into them (load_tgc_weights): the two sides start from the same weights."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x, y):
        return F.cross_entropy(self.fc2(torch.relu(self.fc1(x))), y)


class CNN(nn.Module):
    def __init__(self, spec):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(128, 10)

    def forward(self, x, y):
        h = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        h = F.max_pool2d(torch.relu(self.conv2(h)), 2)
        return F.cross_entropy(self.fc(torch.flatten(h, 1)), y)


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        shape = (B, T, self.heads, C // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        # PyTorch 1.13 has no scaled_dot_product_attention: the masked
        # softmax a user of it writes.
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class MLPBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc = nn.Linear(d, 4 * d)
        self.c_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = Attention(d, heads)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = MLPBlock(d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """Shapes from the model file: vocab and width from wte, context from
    wpe, depth from the h.N blocks; the head count is the file's."""

    def __init__(self, spec):
        super().__init__()
        shapes = {p["name"]: p["shape"] for p in spec["params"]}
        vocab, d = shapes["wte.weight"]
        ctx = shapes["wpe.weight"][0]
        layers = len({n.split(".")[1] for n in shapes if n.startswith("h.")})
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.h = nn.ModuleList(Block(d, spec["heads"]) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)),
                               targets.view(-1))


def make(kind, spec):
    return {"mlp": MLP, "cnn": CNN, "gpt2": GPT2}[kind](spec)


def load_tgc_weights(model, tensors):
    """Copies our parameters in: x @ W weights ([in, out]) become
    nn.Linear's [out, in]; everything else has the same layout."""
    linear = {name + ".weight" for name, m in model.named_modules()
              if isinstance(m, nn.Linear)}
    state = model.state_dict()
    missing = set(state) - set(tensors)
    if missing:
        raise SystemExit("weights lack %s" % sorted(missing))
    with torch.no_grad():
        for name, value in state.items():
            w = torch.from_numpy(tensors[name])
            value.copy_(w.t() if name in linear else w)
