#!/usr/bin/env python3
"""Checks a model that computes its rotary (RoPE) cos/sin table in the graph,
from tg.iota, tg.exp, tg.cos and tg.sin, against numpy and PyTorch.

The model (Inputs/rotary.json) rotates a parameter x [T, D] by the table and
also multiplies the table by two zero "probe" parameters, so the gradients of
the probes are the cos and sin tables themselves; a learned frequency scale
carries gradients back through tg.cos and tg.sin. It checks:
  - the tables (the probes' gradients) against numpy's, in float64;
  - the loss and every gradient against torch.autograd (torch_model.py);
  - STEPS steps of SGD against torch.optim.SGD from the same weights.

Usage: rotary_table.py TGC WORKDIR MODEL [STEPS]
"""

import json
import os
import subprocess
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "lib"))
import safetensors_np  # noqa: E402
import torch_model  # noqa: E402

TABLE_ATOL = 1e-5  # f32 angles of up to T radians
RTOL = 1e-5        # against torch, relative to each tensor's scale
WEIGHT_RTOL = 1e-4


def rel_error(got, ref):
    return np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-3)


def reference_tables(spec):
    """cos and sin of pos * theta^(-2i/D), as Llama computes them."""
    nodes = {n["name"]: n for n in spec["nodes"]}
    attrs = torch_model._attrs(nodes["pos"])
    positions = attrs["shape"][0]
    exponent = torch_model._attrs(nodes["freq_exponent"])
    half = exponent["shape"][1]
    inv_freq = np.exp(exponent["step"] * np.arange(half, dtype=np.float64))
    angle = np.arange(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
    return np.cos(angle), np.sin(angle)


def main():
    tgc, workdir, model = sys.argv[1:4]
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    os.makedirs(workdir, exist_ok=True)
    spec = json.load(open(model))
    exe = os.path.join(workdir, "rotary.exe")
    subprocess.run([tgc, model, "-o", exe, "--opt-level=1"], check=True)

    rng = np.random.default_rng(0)
    weights = {}
    for p in spec["params"]:
        kind = p["init"]["kind"]
        if kind == "zeros":
            weights[p["name"]] = np.zeros(p["shape"], np.float32)
        elif kind == "ones":
            weights[p["name"]] = np.ones(p["shape"], np.float32)
        else:
            weights[p["name"]] = rng.standard_normal(p["shape"]).astype(
                np.float32)
    init = os.path.join(workdir, "init.safetensors")
    safetensors_np.save(init, weights)

    def run(*flags):
        subprocess.run([exe, "--init-from", init, "--threads", "1",
                        "--quiet"] + list(flags), check=True)

    failures = []
    grads_file = os.path.join(workdir, "grads.safetensors")
    run("--dump-grads", grads_file)
    ours, _ = safetensors_np.load(grads_file)

    # The tables, against numpy.
    cos, sin = reference_tables(spec)
    for name, ref in (("cos_probe", cos), ("sin_probe", sin)):
        err = np.abs(ours[name] - ref).max()
        if err > TABLE_ATOL:
            failures.append("%s table: max error %.2e against numpy" %
                            (name[:3], err))
    if not failures:
        print("tables agree with numpy (%dx%d)" % cos.shape)

    # The loss and gradients, against torch.autograd.
    trainable = [p["name"] for p in spec["params"]
                 if p.get("trainable", True)]
    params = {k: torch.tensor(v, requires_grad=k in trainable)
              for k, v in weights.items()}
    loss, _ = torch_model.Model(spec).forward(params, {})
    loss.backward()
    before = len(failures)
    if abs(float(ours["loss"]) - loss.item()) > RTOL * max(1.0,
                                                           abs(loss.item())):
        failures.append("loss %g vs torch %g" % (float(ours["loss"]),
                                                  loss.item()))
    for name in trainable:
        err = rel_error(ours[name], params[name].grad.numpy())
        if err > RTOL:
            failures.append("%s: gradient error %.2e relative to torch" %
                            (name, err))
    if len(failures) == before:
        print("loss and %d gradients agree with torch" % len(trainable))

    # Training, against torch.optim.SGD.
    final = os.path.join(workdir, "final.safetensors")
    run("--steps", str(steps), "--save-final", final)
    trained, _ = safetensors_np.load(final)
    params = {k: torch.tensor(v, requires_grad=k in trainable)
              for k, v in weights.items()}
    m = torch_model.Model(spec)
    optimizer = torch_model.make_optimizer(
        m, params, spec["training"]["optimizer"]["lr"])
    for _ in range(steps):
        optimizer.zero_grad()
        loss, _ = m.forward(params, {})
        loss.backward()
        optimizer.step()
    before = len(failures)
    for name in trainable:
        err = rel_error(trained[name], params[name].detach().numpy())
        if err > WEIGHT_RTOL:
            failures.append("%s: weight error %.2e after %d steps" %
                            (name, err, steps))
    if len(failures) == before:
        print("%d steps agree with torch" % steps)

    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
