#!/usr/bin/env python3
"""Checks every differentiable tg op's gradients against torch.autograd and
against finite differences of our own executable's loss.

For each case it writes a one-op model file whose loss is
sum(op(params...) * w_out), compiles it with tgc, runs the executable with
--init-from (the same random weights torch gets) and --dump-grads, and
compares. Usage: op_grads.py TGC WORKDIR [CASE...]
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

RTOL = 1e-5   # against torch.autograd, relative to the gradient's scale
FD_RTOL = 2e-2  # against central differences of the fp32 loss

rng = np.random.default_rng(0)


def case(name, op, params, attrs=None, ints=None, positive=False,
         frozen=None, derived=None):
    """params: {name: shape} float operands (trainable); frozen: {name:
    array} float parameters with fixed values; derived: {name: (op,
    [inputs])} operands computed from the frozen ones by one node each (a
    checkpoint holds finite values only: -inf comes from log(0)); ints:
    {name: (shape, high)} integer operands (frozen). The op's operands are
    the params, then the derived values (or else the frozen ones), then the
    ints."""
    return dict(name=name, op=op, params=params, attrs=attrs or {},
                ints=ints or {}, positive=positive, frozen=frozen or {},
                derived=derived or {})


def padding_keep(lengths, keys):
    """[B, 1, 1, S]: 1 for the first lengths[b] keys of batch b, 0 for the
    rest; its log is the additive padding mask (0 or -inf). A length of 0
    masks every key: that batch attends to nothing and gets zeros."""
    keep = np.zeros([len(lengths), 1, 1, keys], np.float32)
    for b, n in enumerate(lengths):
        keep[b, :, :, :n] = 1.0
    return keep


CASES = [
    case("add", "add", {"a": [3, 4], "b": [4]}),
    case("sub", "sub", {"a": [3, 1], "b": [1, 4]}),
    case("mul", "mul", {"a": [2, 3, 4], "b": [3, 1]}),
    case("div", "div", {"a": [3, 4], "b": [3, 4]}, positive=True),
    case("pow", "pow", {"a": [3, 4], "b": [3, 4]}, positive=True),
    case("maximum", "maximum", {"a": [3, 4], "b": [4]}),
    case("minimum", "minimum", {"a": [3, 4], "b": [3, 4]}),
    case("neg", "neg", {"x": [3, 4]}),
    case("abs", "abs", {"x": [3, 4]}),
    case("exp", "exp", {"x": [3, 4]}),
    case("log", "log", {"x": [3, 4]}, positive=True),
    case("sqrt", "sqrt", {"x": [3, 4]}, positive=True),
    case("rsqrt", "rsqrt", {"x": [3, 4]}, positive=True),
    case("tanh", "tanh", {"x": [3, 4]}),
    case("sin", "sin", {"x": [3, 4]}),
    case("cos", "cos", {"x": [3, 4]}),
    case("relu", "relu", {"x": [3, 4]}),
    case("silu", "silu", {"x": [3, 4]}),
    case("sigmoid", "sigmoid", {"x": [3, 4]}),
    case("gelu", "gelu", {"x": [3, 4]}),
    case("gelu_tanh", "gelu", {"x": [3, 4]}, {"approximate": ("s", "tanh")}),
    case("matmul", "matmul", {"a": [3, 5], "b": [5, 4]}),
    case("matmul_batched", "matmul", {"a": [2, 3, 5], "b": [5, 4]}),
    case("matmul_transposed", "matmul", {"a": [2, 5, 3], "b": [2, 4, 5]},
         {"transpose_lhs": ("b", True), "transpose_rhs": ("b", True)}),
    case("matmul_broadcast", "matmul", {"a": [2, 1, 3, 5], "b": [3, 5, 4]}),
    case("reduce_sum", "reduce_sum", {"x": [3, 4, 5]}, {"dims": ("ints", [1])}),
    case("reduce_mean", "reduce_mean", {"x": [3, 4, 5]},
         {"dims": ("ints", [0, 2]), "keepdim": ("b", True)}),
    case("reduce_max", "reduce_max", {"x": [3, 4]}, {"dims": ("ints", [-1])}),
    case("softmax", "softmax", {"x": [3, 5]}),
    case("log_softmax", "log_softmax", {"x": [3, 5]}, {"axis": ("i", 0)}),
    case("layer_norm", "layer_norm", {"x": [3, 6], "w": [6], "b": [6]}),
    case("rms_norm", "rms_norm", {"x": [3, 6], "w": [6]}),
    case("embedding", "embedding", {"table": [7, 4]}, ints={"ids": ([2, 3], 7)}),
    case("cross_entropy", "cross_entropy", {"logits": [4, 5]},
         ints={"labels": ([4], 5)}),
    case("cross_entropy_sum", "cross_entropy", {"logits": [2, 3, 5]},
         {"reduction": ("s", "sum")}, ints={"labels": ([2, 3], 5)}),
    case("attention", "attention", {"q": [1, 2, 4, 3], "k": [1, 2, 4, 3],
                                    "v": [1, 2, 4, 3]}),
    case("attention_causal", "attention", {"q": [2, 2, 3, 4], "k": [2, 2, 5, 4],
                                           "v": [2, 2, 5, 2]},
         {"causal": ("b", True)}),
    # An additive [T, S] mask, trained: its gradient sums over B and H.
    case("attention_mask_ts", "attention",
         {"q": [2, 2, 4, 3], "k": [2, 2, 5, 3], "v": [2, 2, 5, 3],
          "mask": [4, 5]}),
    # A padding mask [B, 1, 1, S], -inf past each length (batch 2 sees no
    # key at all).
    case("attention_padding", "attention",
         {"q": [3, 2, 4, 3], "k": [3, 2, 5, 3], "v": [3, 2, 5, 2]},
         frozen={"keep": padding_keep([5, 2, 0], 5)},
         derived={"pad": ("log", ["keep"])}),
    # A learned [1, H, T, S] bias (ALiBi-like), with causal.
    case("attention_bias_causal", "attention",
         {"q": [2, 2, 4, 3], "k": [2, 2, 4, 3], "v": [2, 2, 4, 3],
          "bias": [1, 2, 4, 4]},
         {"causal": ("b", True)}),
    # Grouped-query attention: 4 query heads on 2 key/value heads.
    case("attention_gqa", "attention",
         {"q": [2, 4, 3, 4], "k": [2, 2, 5, 4], "v": [2, 2, 5, 2]}),
    case("attention_gqa_causal", "attention",
         {"q": [2, 4, 3, 4], "k": [2, 2, 5, 4], "v": [2, 2, 5, 2]},
         {"causal": ("b", True)}),
    case("attention_gqa_mask", "attention",
         {"q": [2, 4, 4, 3], "k": [2, 2, 4, 3], "v": [2, 2, 4, 3],
          "mask": [2, 1, 4, 4]},
         {"causal": ("b", True)}),
    case("conv2d", "conv2d", {"x": [2, 2, 5, 5], "w": [3, 2, 3, 3], "bias": [3]},
         {"padding": ("ints", [1, 1])}),
    case("conv2d_strided", "conv2d", {"x": [1, 4, 7, 7], "w": [4, 2, 3, 3]},
         {"stride": ("ints", [2, 2]), "dilation": ("ints", [1, 2]),
          "groups": ("i", 2)}),
    case("max_pool2d", "max_pool2d", {"x": [2, 2, 6, 6]},
         {"kernel_size": ("ints", [2, 2])}),
    case("avg_pool2d", "avg_pool2d", {"x": [1, 2, 5, 5]},
         {"kernel_size": ("ints", [3, 3]), "stride": ("ints", [2, 2]),
          "padding": ("ints", [1, 1])}),
    case("flatten", "flatten", {"x": [2, 3, 4]}),
    case("reshape", "reshape", {"x": [2, 3, 4]}, {"shape": ("ints", [6, -1])}),
    case("transpose", "transpose", {"x": [2, 3, 4]}, {"perm": ("ints", [2, 0, 1])}),
    case("slice", "slice", {"x": [4, 6]},
         {"start": ("ints", [1, 0]), "limit": ("ints", [4, 6]),
          "stride": ("ints", [1, 2])}),
    case("concat", "concat", {"a": [2, 3], "b": [2, 2]}, {"axis": ("i", 1)}),
    case("broadcast_to", "broadcast_to", {"x": [3, 1]},
         {"shape": ("ints", [2, 3, 4])}),
]


def model_for(c):
    params, tensors, inputs = [], {}, []
    for name, shape in c["params"].items():
        value = rng.standard_normal(shape).astype(np.float32)
        if c["positive"]:
            value = np.abs(value) + 0.5
        tensors[name] = value
        params.append({"name": name, "shape": shape})
        inputs.append(name)
    for name, value in c["frozen"].items():
        tensors[name] = value
        params.append({"name": name, "shape": list(value.shape),
                       "trainable": False, "init": {"kind": "zeros"}})
        if not c["derived"]:
            inputs.append(name)
    prelude, values = [], {}
    for name, (op, args) in c["derived"].items():
        prelude.append({"op": op, "inputs": args, "outputs": [name]})
        values[name] = torch_model.run_op(
            op, [torch.from_numpy(tensors[a]) for a in args], {})
        inputs.append(name)
    for name, (shape, high) in c["ints"].items():
        tensors[name] = rng.integers(0, high, shape).astype(np.int64)
        params.append({"name": name, "shape": shape, "dtype": "i64",
                       "trainable": False, "init": {"kind": "zeros"}})
        inputs.append(name)
    attrs = [{"name": k, v[0]: v[1]} for k, v in c["attrs"].items()]
    # The op's output shape, from torch, sizes the weighting tensor.
    out = torch_model.run_op(c["op"], [values[n] if n in values else
                                       torch.from_numpy(tensors[n])
                                       for n in inputs],
                             {k: v[1] for k, v in c["attrs"].items()})
    tensors["w_out"] = rng.standard_normal(list(out.shape)).astype(np.float32)
    params.append({"name": "w_out", "shape": list(out.shape),
                   "trainable": False, "init": {"kind": "zeros"}})
    nodes = prelude + [
        {"name": c["name"], "op": c["op"], "inputs": inputs, "outputs": ["y"],
         "attrs": attrs},
        {"op": "mul", "inputs": ["y", "w_out"], "outputs": ["yw"]},
        {"op": "reduce_sum", "inputs": ["yw"], "outputs": ["loss"]},
    ]
    spec = {"name": c["name"], "params": params, "nodes": nodes, "loss": "loss",
            "training": {"batch_size": 1, "optimizer": {"kind": "sgd"}}}
    return spec, tensors


def run_ours(tgc, workdir, c, spec, tensors):
    base = os.path.join(workdir, c["name"])
    with open(base + ".json", "w") as f:
        json.dump(spec, f)
    subprocess.run([tgc, base + ".json", "-o", base + ".exe", "--opt-level=1"],
                   check=True)

    def grads(params, tag):
        safetensors_np.save(base + "." + tag + ".in.safetensors", params)
        subprocess.run([base + ".exe", "--init-from",
                        base + "." + tag + ".in.safetensors", "--dump-grads",
                        base + "." + tag + ".out.safetensors", "--threads", "1",
                        "--quiet"], check=True)
        out, _ = safetensors_np.load(base + "." + tag + ".out.safetensors")
        return out

    return grads


def check(tgc, workdir, c):
    spec, tensors = model_for(c)
    grads = run_ours(tgc, workdir, c, spec, tensors)
    ours = grads(tensors, "base")

    torch_params = {k: torch.tensor(v, requires_grad=k in c["params"])
                    for k, v in tensors.items()}
    loss, _ = torch_model.Model(spec).forward(torch_params, {})
    loss.backward()
    failures = []
    rel_loss = abs(float(ours["loss"]) - loss.item()) / max(1.0, abs(loss.item()))
    if rel_loss > RTOL:
        failures.append("loss %g vs torch %g" % (float(ours["loss"]), loss.item()))
    for name in c["params"]:
        ref = torch_params[name].grad.numpy()
        got = ours[name]
        scale = max(np.abs(ref).max(), 1e-3)
        err = np.abs(got - ref).max() / scale
        if err > RTOL:
            failures.append("%s: max error %.2e relative to torch" % (name, err))
        # Central differences of our own loss along a random direction.
        direction = rng.standard_normal(ref.shape).astype(np.float32)
        h = 1e-2 * max(1.0, float(np.abs(tensors[name]).max()))
        plus = dict(tensors)
        minus = dict(tensors)
        plus[name] = tensors[name] + h * direction
        minus[name] = tensors[name] - h * direction
        fd = (float(grads(plus, "plus")["loss"]) -
              float(grads(minus, "minus")["loss"])) / (2 * h)
        analytic = float(np.sum(got.astype(np.float64) * direction))
        fd_err = abs(fd - analytic) / max(1.0, abs(analytic))
        if c["op"] in ("relu", "abs", "maximum", "minimum", "max_pool2d",
                       "reduce_max"):
            fd_err = 0.0  # kinks: a finite step may cross them
        if fd_err > FD_RTOL:
            failures.append("%s: finite differences %.6g vs analytic %.6g" %
                            (name, fd, analytic))
    return failures


def main():
    tgc, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    wanted = set(sys.argv[3:])
    failed = 0
    for c in CASES:
        if wanted and c["name"] not in wanted:
            continue
        try:
            failures = check(tgc, workdir, c)
        except subprocess.CalledProcessError as e:
            failures = ["command failed: %s" % e]
        status = "ok" if not failures else "FAIL"
        print("%-20s %s" % (c["name"], status))
        for f in failures:
            print("    " + f)
        failed += bool(failures)
    print("%d passed, %d failed" % (len([c for c in CASES if not wanted or
                                         c["name"] in wanted]) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
