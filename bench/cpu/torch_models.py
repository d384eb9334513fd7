"""PyTorch versions of the example models, written the way a PyTorch user
would (nn.Module, fused torch ops), for the CPU speed comparison.
Shapes follow examples/*.json."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x, y):
        return F.cross_entropy(self.fc2(torch.relu(self.fc1(x))), y)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(128, 10)

    def forward(self, x, y):
        h = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        h = F.max_pool2d(torch.relu(self.conv2(h)), 2)
        return F.cross_entropy(self.fc(torch.flatten(h, 1)), y)


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(d)
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.ln_2 = nn.LayerNorm(d)
        self.c_fc = nn.Linear(d, 4 * d)
        self.mlp_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        shape = (B, T, self.heads, C // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)),
                                        approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, vocab=256, ctx=64, d=128, layers=2, heads=4):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)),
                               targets.view(-1))


def batch(name, batch_size, seq_len=64):
    g = torch.Generator().manual_seed(0)
    if name == "mlp":
        return (torch.rand(batch_size, 64, generator=g),
                torch.randint(0, 10, (batch_size,), generator=g))
    if name == "cnn":
        return (torch.rand(batch_size, 1, 8, 8, generator=g),
                torch.randint(0, 10, (batch_size,), generator=g))
    return (torch.randint(0, 256, (batch_size, seq_len), generator=g),
            torch.randint(0, 256, (batch_size, seq_len), generator=g))


def make(name):
    return {"mlp": MLP, "cnn": CNN, "gpt2-tiny": GPT2}[name]()
