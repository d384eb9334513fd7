#!/usr/bin/env python3
#===- torch_reference.py - CPU kernels against PyTorch ---------------------===#
#
# Writes random inputs for attention, layer norm, conv2d, cross-entropy,
# pooling, gelu, softmax and the optimizers, runs tgc_cpu_torch_check on
# them, and compares its outputs with PyTorch (in float64 for the ops, with
# torch.optim in float32 for the optimizers; LAMB and Lion, which torch does
# not ship, with their papers' formulas in torch ops). Every output must
# agree to 1e-5 relative to the largest element of the reference.
#
# Usage: torch_reference.py PATH/TO/tgc_cpu_torch_check
# Exits 77 (ctest's skip) when this interpreter cannot import torch.
#
#===----------------------------------------------------------------------===#

import math
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:
    print(f"SKIP: {sys.executable} cannot import torch/numpy ({e})")
    sys.exit(77)

RTOL = 1e-5
torch.manual_seed(0)


def write_tensor(path, t):
    t = t.detach().contiguous()
    with open(path, "wb") as f:
        f.write(struct.pack("<q", t.dim()))
        f.write(struct.pack(f"<{t.dim()}q", *t.shape))
        dtype = np.int64 if not t.is_floating_point() else np.float32
        f.write(t.numpy().astype(dtype).tobytes())


def read_tensor(path):
    with open(path, "rb") as f:
        rank = struct.unpack("<q", f.read(8))[0]
        shape = struct.unpack(f"<{rank}q", f.read(8 * rank))
        data = np.frombuffer(f.read(), dtype=np.float32)
    return torch.from_numpy(data.copy().reshape(shape))


class Case:
    def __init__(self, root, name, op, **params):
        self.name = name
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir)
        self.expected = {}
        with open(os.path.join(self.dir, "params"), "w") as f:
            f.write(f"op {op}\n")
            for k, v in params.items():
                f.write(f"{k} {int(v) if isinstance(v, bool) else v}\n")

    def input(self, name, t):
        write_tensor(os.path.join(self.dir, name), t)
        return t

    def expect(self, name, t):
        self.expected[name] = t.detach().to(torch.float64)

    def check(self):
        failures = []
        for name, want in self.expected.items():
            got = read_tensor(os.path.join(self.dir, name)).to(torch.float64)
            if got.shape != want.shape:
                failures.append(f"{name}: shape {tuple(got.shape)} != {tuple(want.shape)}")
                continue
            scale = want.abs().max().item() if want.numel() else 0.0
            err = (got - want).abs().max().item() if want.numel() else 0.0
            rel = err / scale if scale > 0 else err
            status = "ok" if rel <= RTOL else "FAIL"
            print(f"  {self.name:28s} {name:8s} max rel err {rel:.2e} {status}")
            if rel > RTOL:
                failures.append(f"{self.name}.{name}: relative error {rel:.3e}")
        return failures


def rand(*shape, lo=-1.0, hi=1.0):
    return torch.rand(*shape, dtype=torch.float32) * (hi - lo) + lo


def leaf(t):
    return t.to(torch.float64).requires_grad_(True)


#===----------------------------------------------------------------------===#
# Cases
#===----------------------------------------------------------------------===#

def attention_case(root, name, B, H, T, S, D, Dv, causal):
    scale = 1.0 / math.sqrt(D)
    c = Case(root, name, "attention", causal=causal, scale=repr(scale))
    q, k, v = c.input("q", rand(B, H, T, D)), c.input("k", rand(B, H, S, D)), c.input("v", rand(B, H, S, Dv))
    g = c.input("g", rand(B, H, T, Dv))
    q64, k64, v64 = leaf(q), leaf(k), leaf(v)
    scores = q64 @ k64.transpose(-1, -2) * float(torch.tensor(scale, dtype=torch.float32))
    if causal:
        t = torch.arange(T).unsqueeze(1)
        s = torch.arange(S).unsqueeze(0)
        scores = scores.masked_fill(s > t + (S - T), float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v64
    out.backward(g.to(torch.float64))
    c.expect("out", out)
    c.expect("dq", q64.grad)
    c.expect("dk", k64.grad)
    c.expect("dv", v64.grad)
    return c


def layer_norm_case(root):
    c = Case(root, "layer_norm", "layer_norm", eps=1e-5)
    x = c.input("x", rand(6, 5, 48, lo=-2, hi=3))
    w, b = c.input("w", rand(48)), c.input("b", rand(48))
    g = c.input("g", rand(6, 5, 48))
    x64, w64, b64 = leaf(x), leaf(w), leaf(b)
    y = F.layer_norm(x64, (48,), w64, b64, eps=1e-5)
    y.backward(g.to(torch.float64))
    c.expect("y", y)
    c.expect("dx", x64.grad)
    c.expect("dw", w64.grad)
    c.expect("db", b64.grad)
    return c


def conv_case(root, name, n, cin, h, w, o, k, stride, pad, dil, groups):
    c = Case(root, name, "conv2d", stride=stride, pad=pad, dil=dil, groups=groups)
    x = c.input("x", rand(n, cin, h, w))
    wt = c.input("w", rand(o, cin // groups, k, k))
    bias = c.input("bias", rand(o))
    x64, w64 = leaf(x), leaf(wt)
    y = F.conv2d(x64, w64, bias.to(torch.float64), stride=stride, padding=pad,
                 dilation=dil, groups=groups)
    g = c.input("g", rand(*y.shape))
    y.backward(g.to(torch.float64))
    c.expect("y", y)
    c.expect("dx", x64.grad)
    c.expect("dw", w64.grad)
    return c


def cross_entropy_case(root, name, reduction):
    codes = {"mean": 0, "sum": 1, "none": 2}
    rows, classes, ignore = 12, 17, -100
    c = Case(root, name, "cross_entropy", reduction=codes[reduction], ignore_index=ignore)
    logits = c.input("logits", rand(rows, classes, lo=-5, hi=5))
    labels = torch.randint(0, classes, (rows,))
    labels[[2, 7]] = ignore
    c.input("labels", labels)
    g = c.input("g", rand(rows) if reduction == "none" else torch.tensor([0.8]))
    l64 = leaf(logits)
    loss = F.cross_entropy(l64, labels, ignore_index=ignore, reduction=reduction)
    loss.backward(g.to(torch.float64) if reduction == "none" else g.to(torch.float64)[0])
    c.expect("loss", loss)
    c.expect("dlogits", l64.grad)
    return c


def pool_case(root, name, kind, k, stride, pad):
    c = Case(root, name, "pool", kind=kind, kernel=k, stride=stride, pad=pad)
    x = c.input("x", rand(2, 3, 9, 8))
    x64 = leaf(x)
    if kind == "max":
        y = F.max_pool2d(x64, k, stride, pad)
    else:
        y = F.avg_pool2d(x64, k, stride, pad, count_include_pad=False)
    g = c.input("g", rand(*y.shape))
    y.backward(g.to(torch.float64))
    c.expect("y", y)
    c.expect("dx", x64.grad)
    return c


def gelu_case(root, name, tanh):
    c = Case(root, name, "gelu", tanh=tanh)
    x = c.input("x", rand(4000, lo=-6, hi=6))
    g = c.input("g", rand(4000))
    x64 = leaf(x)
    y = F.gelu(x64, approximate="tanh" if tanh else "none")
    y.backward(g.to(torch.float64))
    c.expect("y", y)
    c.expect("dx", x64.grad)
    return c


def softmax_case(root):
    c = Case(root, "softmax", "softmax")
    x = c.input("x", rand(7, 33, lo=-10, hi=10))
    c.expect("y", torch.softmax(x.to(torch.float64), -1))
    c.expect("logy", torch.log_softmax(x.to(torch.float64), -1))
    return c


def lamb_step(p, g, m, v, lr, step, beta1, beta2, eps, wd):
    m.mul_(beta1).add_(g, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    update = (m / (1 - beta1 ** step)) / ((v / (1 - beta2 ** step)).sqrt() + eps) + wd * p
    pn, un = p.norm().item(), update.norm().item()
    trust = pn / un if pn > 0 and un > 0 else 1.0
    p.add_(update, alpha=-lr * trust)


def lion_step(p, g, m, lr, beta1, beta2, wd):
    update = (beta1 * m + (1 - beta1) * g).sign()
    p.add_(update + wd * p, alpha=-lr)
    m.mul_(beta2).add_(g, alpha=1 - beta2)


def optimizer_case(root, kind, lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8,
                   weight_decay=0.0, momentum=0.0, alpha=0.99, nesterov=False,
                   steps=3):
    num_state = {"sgd": 1 if momentum > 0 else 0, "adam": 2, "adamw": 2,
                 "rmsprop": 2 if momentum > 0 else 1, "adagrad": 1,
                 "lamb": 2, "lion": 1}[kind]
    name = f"opt_{kind}" + ("_momentum" if momentum > 0 else "") + ("_nesterov" if nesterov else "")
    c = Case(root, name, "optimizer", kind=kind, lr=repr(lr), beta1=beta1,
             beta2=beta2, eps=eps, weight_decay=weight_decay, momentum=momentum,
             alpha=alpha, nesterov=nesterov, num_state=num_state, steps=steps)
    p0 = c.input("p", rand(300))
    grads = [c.input(f"g{s}", rand(300, lo=-0.5, hi=0.5)) for s in range(1, steps + 1)]
    if kind in ("lamb", "lion"):
        p = p0.clone().to(torch.float64)
        m, v = torch.zeros_like(p), torch.zeros_like(p)
        for s, g in enumerate(grads, 1):
            g = g.to(torch.float64)
            if kind == "lamb":
                lamb_step(p, g, m, v, lr, s, beta1, beta2, eps, weight_decay)
            else:
                lion_step(p, g, m, lr, beta1, beta2, weight_decay)
            c.expect(f"p{s}", p.clone())
        c.expect("state0", m)
        if kind == "lamb":
            c.expect("state1", v)
        return c
    p = p0.clone().requires_grad_(True)
    opt = {
        "sgd": lambda: torch.optim.SGD([p], lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay),
        "adam": lambda: torch.optim.Adam([p], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay),
        "adamw": lambda: torch.optim.AdamW([p], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=weight_decay),
        "rmsprop": lambda: torch.optim.RMSprop([p], lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum),
        "adagrad": lambda: torch.optim.Adagrad([p], lr=lr, eps=eps, weight_decay=weight_decay),
    }[kind]()
    for s, g in enumerate(grads, 1):
        p.grad = g.clone()
        opt.step()
        c.expect(f"p{s}", p.detach().clone())
    st = opt.state[p]
    slots = {"sgd": ["momentum_buffer"], "adam": ["exp_avg", "exp_avg_sq"],
             "adamw": ["exp_avg", "exp_avg_sq"],
             "rmsprop": ["square_avg", "momentum_buffer"], "adagrad": ["sum"]}[kind]
    for i in range(num_state):
        c.expect(f"state{i}", st[slots[i]])
    return c


def main():
    if len(sys.argv) != 2:
        print("usage: torch_reference.py PATH/TO/tgc_cpu_torch_check")
        return 2
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="tgc-cpu-torch-") as root:
        cases = [
            attention_case(root, "attention", 2, 3, 7, 7, 8, 8, False),
            attention_case(root, "attention_causal_S_gt_T", 2, 2, 5, 9, 8, 6, True),
            attention_case(root, "attention_causal_blocks", 1, 2, 80, 96, 16, 16, True),
            layer_norm_case(root),
            conv_case(root, "conv2d", 2, 3, 9, 8, 4, 3, 1, 1, 1, 1),
            conv_case(root, "conv2d_strided_dilated", 2, 4, 11, 10, 6, 3, 2, 2, 2, 2),
            conv_case(root, "conv2d_depthwise", 2, 4, 8, 8, 4, 3, 1, 1, 1, 4),
            cross_entropy_case(root, "cross_entropy_mean", "mean"),
            cross_entropy_case(root, "cross_entropy_sum", "sum"),
            cross_entropy_case(root, "cross_entropy_none", "none"),
            pool_case(root, "max_pool2d", "max", 3, 2, 1),
            pool_case(root, "avg_pool2d", "avg", 3, 2, 1),
            gelu_case(root, "gelu", False),
            gelu_case(root, "gelu_tanh", True),
            softmax_case(root),
            optimizer_case(root, "sgd", momentum=0.9, nesterov=True, weight_decay=0.01),
            optimizer_case(root, "adam", weight_decay=0.01),
            optimizer_case(root, "adamw", weight_decay=0.1),
            optimizer_case(root, "rmsprop", momentum=0.9, weight_decay=0.01),
            optimizer_case(root, "adagrad", eps=1e-10, weight_decay=0.01),
            optimizer_case(root, "lamb", weight_decay=0.01),
            optimizer_case(root, "lion", lr=1e-3, beta2=0.99, weight_decay=0.1),
        ]
        subprocess.run([binary] + [c.dir for c in cases], check=True)
        failures = [f for c in cases for f in c.check()]
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print(f"all {len(cases)} cases agree with torch {torch.__version__} to {RTOL} relative")
    return 0


if __name__ == "__main__":
    sys.exit(main())
