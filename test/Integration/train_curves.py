#!/usr/bin/env python3
"""Trains an example model with our executable and with PyTorch from the same
initial weights on the same batches, and compares the loss at every step and
the final weights.

The weights start from one safetensors file (--init-from for us, loaded by
name for torch); both sides read the data in file order (--no-shuffle), so
batch k is rows [kB, (k+1)B) of the data on both. The optimizer and LR
schedule come from the model file's training table (torch_model.py).

Usage: train_curves.py TGC WORKDIR MODEL [STEPS]
MODEL is mlp, cnn or gpt2-tiny (examples/MODEL.json).
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

LOSS_RTOL = 1e-4
WEIGHT_RTOL = 1e-4
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


def write_tgcls(path, x, y, classes):
    """The runtime's classification layout (runtime/data/ClassData.h)."""
    header = np.zeros(32, np.int64)
    header[:6] = [20240521, 1, x.shape[0], x.shape[1], classes, 8]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.ascontiguousarray(x, np.float32).tobytes())
        f.write(np.ascontiguousarray(y, np.int64).tobytes())


def write_tokens(path, tokens):
    """llm.c's shard layout (runtime/data/TokenData.h)."""
    header = np.zeros(256, np.int32)
    header[:3] = [20240520, 1, len(tokens)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, np.uint16).tobytes())


def init_weights(spec, rng):
    """Random weights as the model's initializers describe them."""
    out = {}
    for p in spec["params"]:
        init = p.get("init", {"kind": "normal", "std": 1.0})
        shape = p["shape"]
        kind = init.get("kind", "normal")
        if kind == "zeros":
            value = np.zeros(shape)
        elif kind == "ones":
            value = np.ones(shape)
        elif kind == "normal":
            value = init.get("mean", 0.0) + init.get("std", 1.0) * rng.standard_normal(shape)
        else:  # uniform-ish: kaiming/xavier scale of 1/sqrt(fan_in)
            fan_in = int(np.prod(shape[1:])) if len(shape) > 2 else shape[0]
            bound = 1.0 / np.sqrt(max(1, fan_in))
            value = rng.uniform(-bound, bound, shape)
        out[p["name"]] = value.astype(np.float32)
    return out


def make_data(spec, workdir, batch, steps, rng):
    """Writes the data file and returns (path, list of torch input dicts)."""
    inputs = {i["name"]: i for i in spec["inputs"]}
    int_inputs = [i for i in spec["inputs"] if i.get("dtype", "f32") in ("i32", "i64")]
    if len(int_inputs) == 2:  # tokens and targets
        seq = int_inputs[0]["shape"][1]
        tokens = rng.integers(0, 256, size=batch * steps * seq + 1)
        path = os.path.join(workdir, "tokens.bin")
        write_tokens(path, tokens)
        batches = []
        for k in range(steps):
            rows = np.stack([tokens[(k * batch + r) * seq:(k * batch + r) * seq + seq + 1]
                             for r in range(batch)])
            tok, tgt = int_inputs
            batches.append({
                tok["name"]: torch.tensor(rows[:, :-1], dtype=torch_model.DTYPES[tok.get("dtype")]),
                tgt["name"]: torch.tensor(rows[:, 1:], dtype=torch_model.DTYPES[tgt.get("dtype")]),
            })
        return path, batches
    # Classification: the digits, scaled to [0, 1].
    raw = np.loadtxt(DIGITS, delimiter=",")
    x, y = (raw[:, :-1] / 16.0).astype(np.float32), raw[:, -1].astype(np.int64)
    path = os.path.join(workdir, "digits.tgcls")
    write_tgcls(path, x, y, 10)
    feat = next(i for i in spec["inputs"] if i.get("dtype", "f32") == "f32")
    label = next(i for i in spec["inputs"] if i is not feat)
    batches = []
    n = x.shape[0]
    cursor = 0
    for _ in range(steps):
        if cursor >= n:
            cursor = 0
        rows = [(cursor + r) % n for r in range(batch)]
        cursor += batch
        batches.append({
            feat["name"]: torch.tensor(x[rows]).reshape([batch] + feat["shape"][1:]),
            label["name"]: torch.tensor(y[rows]),
        })
    return path, batches


def main():
    tgc, workdir, name = sys.argv[1:4]
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 50
    os.makedirs(workdir, exist_ok=True)
    torch.set_num_threads(2)
    model_file = os.path.join(ROOT, "examples", name + ".json")
    with open(model_file) as f:
        spec = json.load(f)
    batch = spec["inputs"][0]["shape"][0]
    rng = np.random.default_rng(1)
    weights = init_weights(spec, rng)
    init_path = os.path.join(workdir, "init.safetensors")
    safetensors_np.save(init_path, weights)
    data, batches = make_data(spec, workdir, batch, steps, rng)

    # Ours.
    exe = os.path.join(workdir, name)
    log = os.path.join(workdir, "log.jsonl")
    final = os.path.join(workdir, "final.safetensors")
    subprocess.run([tgc, model_file, "-o", exe, "--opt-level=2"], check=True)
    subprocess.run([exe, "--data", data, "--steps", str(steps), "--batch-size",
                    str(batch), "--init-from", init_path, "--no-shuffle",
                    "--log", log, "--save-final", final, "--threads", "2",
                    "--quiet"], check=True)
    ours = [json.loads(line) for line in open(log)]
    our_losses = [e["loss"] for e in ours if "loss" in e]
    our_final, _ = safetensors_np.load(final)

    # PyTorch.
    model = torch_model.Model(spec)
    params = {k: torch.tensor(v, requires_grad=model.trainable[k])
              for k, v in weights.items()}
    opt_table = model.training.get("optimizer", {})
    base_lr = opt_table.get("lr", 1e-3)
    sched = model.training.get("schedule", {})
    total = model.training.get("steps", steps)
    optimizer = torch_model.make_optimizer(model, params, base_lr)
    clip = opt_table.get("clip_grad_norm", 0.0)
    torch_losses = []
    for k in range(steps):
        lr = torch_model.lr_at(sched, k + 1, total, base_lr)
        for group in optimizer.param_groups:
            group["lr"] = lr
        optimizer.zero_grad()
        loss, _ = model.forward(params, batches[k])
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(
                [p for p in params.values() if p.requires_grad], clip)
        optimizer.step()
        torch_losses.append(loss.item())

    failures = []
    if len(our_losses) != steps:
        failures.append("our log has %d steps, expected %d" % (len(our_losses), steps))
    worst = 0.0
    for k, (a, b) in enumerate(zip(our_losses, torch_losses)):
        err = abs(a - b) / max(abs(b), 1e-6)
        worst = max(worst, err)
        if err > LOSS_RTOL:
            failures.append("step %d: loss %.7g, torch %.7g (rel %.2e)" % (k + 1, a, b, err))
    worst_w = 0.0
    for k, p in params.items():
        ref = p.detach().numpy()
        got = our_final[k]
        if k.endswith("attn.c_attn.bias"):
            # The key third of the QKV bias shifts every score of a query row
            # by the same amount, which softmax ignores: its gradient is zero
            # in exact arithmetic, so Adam turns both frameworks' rounding
            # noise into steps of ~lr. It must stay at noise level on both
            # sides; the query and value thirds are compared as usual.
            d = ref.shape[0] // 3
            noise = max(np.abs(got[d:2 * d]).max(), np.abs(ref[d:2 * d]).max())
            if noise > 1e-4:
                failures.append("%s: key bias left noise level (%.2e)" % (k, noise))
            ref = np.concatenate([ref[:d], ref[2 * d:]])
            got = np.concatenate([got[:d], got[2 * d:]])
        scale = max(np.abs(ref).max(), 1e-3)
        err = float(np.abs(got - ref).max() / scale)
        worst_w = max(worst_w, err)
        if err > WEIGHT_RTOL:
            failures.append("%s: final weights differ by %.2e relative" % (k, err))
    print("%s: %d steps, loss %.4f -> %.4f (torch %.4f -> %.4f), worst loss "
          "rel err %.2e, worst weight rel err %.2e" %
          (name, steps, our_losses[0], our_losses[-1], torch_losses[0],
           torch_losses[-1], worst, worst_w))
    for f in failures[:20]:
        print("  " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
