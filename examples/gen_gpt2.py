#!/usr/bin/env python3
"""Writes the GPT-2 model files (gpt2-tiny.json, gpt2-124m.json) in tgc's
model file format (frontend/schema/model.fbs, JSON text form).

One function builds both sizes, so the tiny model a test trains in seconds and
the 124M model the benchmarks run are the same graph. The graph follows
GPT-2 / nanoGPT / llm.c: learned position embeddings, pre-norm blocks
(layer_norm -> causal attention -> residual, layer_norm -> MLP with tanh GELU
-> residual), a final layer_norm, and the LM head tied to the token embedding
(matmul with wte transposed). Parameter names and layouts are Hugging Face's
GPT-2 checkpoint keys ("h.0.attn.c_attn.weight", [in, out] like its Conv1D),
so pretrained weights can be loaded by name.

--from-config builds the model a Hugging Face GPT-2 config.json describes
(n_layer, n_head, n_embd, n_inner, vocab_size, n_positions,
layer_norm_epsilon, activation_function), so that the checkpoint beside it
loads with the executable's --init-from DIR. Its training table is a short
fine-tuning run (FINETUNE below; the flags change it). Dropout is not in the
graph: fine-tuning runs without it.

Batch size and sequence length are baked into the reshape and slice
attributes (the tg dialect has static shapes), so change them here and
regenerate rather than editing the training table by hand.

    python3 examples/gen_gpt2.py                 # rewrites both files
    python3 examples/gen_gpt2.py --check         # exits 1 if they are stale
    python3 examples/gen_gpt2.py --preset tiny --layers 4 -o my.json
    python3 examples/gen_gpt2.py --from-config gpt2/config.json -o gpt2.json

Plain python3, no dependencies.
"""

import argparse
import json
import math
import os
import sys

# Each preset: model shape and the training table. 124m follows llm.c's
# GPT-2 (124M) run: 524288 tokens per step (8 x 1024 x 64 micro-batches),
# lr 6e-4 with 700 warmup steps and cosine decay to 0 over 18865 steps
# (10B tokens of FineWeb), AdamW betas (0.9, 0.95), weight decay 0.1,
# gradient clipping at 1.0, bf16.
PRESETS = {
    "tiny": dict(name="gpt2-tiny", layers=2, heads=4, d=128, vocab=256,
                 ctx=64, batch=16, seq=64, grad_accum=1, steps=2000,
                 lr=1e-3, min_lr=1e-4, warmup=100, precision="fp32"),
    "124m": dict(name="gpt2-124m", layers=12, heads=12, d=768, vocab=50257,
                 ctx=1024, batch=8, seq=1024, grad_accum=64, steps=18865,
                 lr=6e-4, min_lr=0.0, warmup=700, precision="bf16"),
}

OUTPUT_FILES = {"tiny": "gpt2-tiny.json", "124m": "gpt2-124m.json"}

# The training table of a model made from a checkpoint's config.
FINETUNE = dict(batch=4, seq=256, grad_accum=1, steps=1000, lr=1e-4,
                min_lr=1e-5, warmup=10, precision="fp32")

# Hugging Face's activation_function values and the GELU each computes.
GELUS = {"gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu_fast": "tanh",
         "gelu": "none"}


def normal(std):
    return {"kind": "normal", "std": std}


ZEROS = {"kind": "zeros"}
ONES = {"kind": "ones"}


def attr(name, value):
    """One node attribute, its value field chosen by the Python type."""
    if isinstance(value, bool):
        return {"name": name, "b": value}
    if isinstance(value, int):
        return {"name": name, "i": value}
    if isinstance(value, float):
        return {"name": name, "f": value}
    if isinstance(value, str):
        return {"name": name, "s": value}
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return {"name": name, "ints": value}
    raise TypeError("no attribute field for %r" % (value,))


class Graph:
    """Collects params and nodes; each node's output tensor is named after
    the node, so a diagnostic naming a node names the tensor too."""

    def __init__(self):
        self.params = []
        self.nodes = []

    def param(self, name, shape, init):
        self.params.append({"name": name, "shape": shape, "init": init})
        return name

    def op(self, name, op, inputs, **attrs):
        node = {"name": name, "op": op, "inputs": inputs, "outputs": [name]}
        if attrs:
            node["attrs"] = [attr(k, v) for k, v in attrs.items()]
        self.nodes.append(node)
        return name

    def linear(self, prefix, x, fan_in, fan_out, std):
        """y = x @ W + b with HF Conv1D names and [in, out] layout."""
        w = self.param(prefix + ".weight", [fan_in, fan_out], normal(std))
        b = self.param(prefix + ".bias", [fan_out], ZEROS)
        mm = self.op(prefix + ".matmul", "matmul", [x, w])
        return self.op(prefix, "add", [mm, b])

    def layer_norm(self, prefix, x, d, eps=1e-5):
        w = self.param(prefix + ".weight", [d], ONES)
        b = self.param(prefix + ".bias", [d], ZEROS)
        if eps == 1e-5:  # the op's default
            return self.op(prefix, "layer_norm", [x, w, b])
        return self.op(prefix, "layer_norm", [x, w, b], eps=eps)


def build(cfg):
    L, H, C = cfg["layers"], cfg["heads"], cfg["d"]
    V, ctx, B, T = cfg["vocab"], cfg["ctx"], cfg["batch"], cfg["seq"]
    if C % H:
        raise ValueError("d=%d is not divisible by heads=%d" % (C, H))
    if T > ctx:
        raise ValueError("seq=%d is longer than the context %d" % (T, ctx))
    D = C // H
    F = cfg.get("d_ff") or 4 * C
    eps = cfg.get("eps", 1e-5)
    std = 0.02
    # GPT-2 scales the init of the projections into the residual stream by
    # 1/sqrt(number of residual additions).
    proj_std = 0.02 / math.sqrt(2 * L)

    g = Graph()
    wte = g.param("wte.weight", [V, C], normal(std))
    wpe = g.param("wpe.weight", [ctx, C], normal(std))

    # Positions 0..T-1 are the first T rows of wpe: a slice, so the model
    # needs no position-id input and the gradient reaches exactly those rows.
    tok = g.op("tok_emb", "embedding", [wte, "idx"])
    pos = g.op("pos_emb", "slice", [wpe], start=[0, 0], limit=[T, C])
    x = g.op("emb", "add", [tok, pos])

    for i in range(L):
        p = "h.%d" % i
        h = g.layer_norm(p + ".ln_1", x, C, eps)
        qkv = g.linear(p + ".attn.c_attn", h, C, 3 * C, std)
        heads = {}
        # The batch is -1 (a slice's limit: the dim's end; a reshape's:
        # what the elements leave), so tgc --batch-size can change it.
        for j, part in enumerate("qkv"):
            t = g.op("%s.attn.%s" % (p, part), "slice", [qkv],
                     start=[0, 0, j * C], limit=[-1, T, (j + 1) * C])
            t = g.op("%s.attn.%s.split" % (p, part), "reshape", [t],
                     shape=[-1, T, H, D])
            heads[part] = g.op("%s.attn.%s.heads" % (p, part), "transpose",
                               [t], perm=[0, 2, 1, 3])
        y = g.op(p + ".attn.sdpa", "attention",
                 [heads["q"], heads["k"], heads["v"]], causal=True)
        y = g.op(p + ".attn.merge", "transpose", [y], perm=[0, 2, 1, 3])
        y = g.op(p + ".attn.merged", "reshape", [y], shape=[-1, T, C])
        y = g.linear(p + ".attn.c_proj", y, C, C, proj_std)
        x = g.op(p + ".resid_1", "add", [x, y])

        h = g.layer_norm(p + ".ln_2", x, C, eps)
        h = g.linear(p + ".mlp.c_fc", h, C, F, std)
        h = g.op(p + ".mlp.gelu", "gelu", [h],
                 approximate=cfg.get("gelu", "tanh"))
        h = g.linear(p + ".mlp.c_proj", h, F, C, proj_std)
        x = g.op(p + ".resid_2", "add", [x, h])

    x = g.layer_norm("ln_f", x, C, eps)
    # Tied embeddings: the LM head is wte itself, [V, C], used transposed.
    logits = g.op("logits", "matmul", [x, wte], transpose_rhs=True)
    loss = g.op("loss", "cross_entropy", [logits, "targets"])

    return {
        "name": cfg["name"],
        "params": g.params,
        "inputs": [
            {"name": "idx", "shape": [B, T], "dtype": "i32",
             "dim_names": ["batch", "seq"]},
            {"name": "targets", "shape": [B, T], "dtype": "i64",
             "dim_names": ["batch", "seq"]},
        ],
        "nodes": g.nodes,
        "loss": loss,
        "training": {
            "optimizer": {
                "kind": "adamw", "lr": cfg["lr"], "beta1": 0.9, "beta2": 0.95,
                "eps": 1e-8, "weight_decay": 0.1,
                # nanoGPT/llm.c decay only the 2-D weights (matmuls and both
                # embeddings), not biases or layer norm gains.
                "no_decay": ["*.bias", "*.ln_1.weight", "*.ln_2.weight",
                             "ln_f.weight"],
                "clip_grad_norm": 1.0,
            },
            "schedule": {
                "kind": "cosine", "warmup_steps": cfg["warmup"],
                "total_steps": cfg["steps"], "min_lr": cfg["min_lr"],
            },
            "batch_size": B,
            "seq_len": T,
            "grad_accum": cfg["grad_accum"],
            "steps": cfg["steps"],
            "precision": cfg["precision"],
            "seed": 0,
        },
    }


def to_json(model):
    """Readable JSON: one param, input or node per line."""
    def one(value):
        return json.dumps(value, separators=(", ", ": "))

    lines = ["{"]
    keys = list(model)
    for k, key in enumerate(keys):
        comma = "," if k + 1 < len(keys) else ""
        value = model[key]
        if isinstance(value, list) and value and isinstance(value[0], dict):
            lines.append('  "%s": [' % key)
            for n, item in enumerate(value):
                lines.append("    " + one(item) + ("," if n + 1 < len(value) else ""))
            lines.append("  ]" + comma)
        elif isinstance(value, dict):
            lines.append('  "%s": {' % key)
            sub = list(value)
            for n, s in enumerate(sub):
                lines.append('    "%s": %s%s' % (s, one(value[s]),
                                               "," if n + 1 < len(sub) else ""))
            lines.append("  }" + comma)
        else:
            lines.append('  "%s": %s%s' % (key, one(value), comma))
    lines.append("}")
    return "\n".join(lines) + "\n"


def config_of(path, overrides):
    """A build() config from a Hugging Face GPT-2 config.json and the
    flags."""
    with open(path) as f:
        config = json.load(f)
    if config.get("model_type") != "gpt2":
        raise ValueError("%s: model_type %r is not gpt2 (examples/gen_llama.py "
                         "reads llama and mistral)"
                         % (path, config.get("model_type")))
    for key in ("n_layer", "n_head", "n_embd", "vocab_size"):
        if key not in config:
            raise ValueError("%s has no %s" % (path, key))
    act = config.get("activation_function", "gelu_new")
    if act not in GELUS:
        raise ValueError("%s: activation_function %r is not one of %s"
                         % (path, act, ", ".join(sorted(GELUS))))
    if not config.get("scale_attn_weights", True):
        raise ValueError("%s: scale_attn_weights is false (the graph's "
                         "attention scales by 1/sqrt(head size))" % path)
    if config.get("scale_attn_by_inverse_layer_idx"):
        raise ValueError("%s: scale_attn_by_inverse_layer_idx is not "
                         "supported" % path)
    if not config.get("tie_word_embeddings", True):
        raise ValueError("%s: tie_word_embeddings is false (GPT-2's head is "
                         "the token embedding)" % path)
    ctx = config.get("n_positions", config.get("n_ctx", 1024))
    cfg = dict(FINETUNE, name=os.path.basename(os.path.dirname(
        os.path.abspath(path))) or "gpt2")
    cfg.update(layers=config["n_layer"], heads=config["n_head"],
               d=config["n_embd"], d_ff=config.get("n_inner"),
               vocab=config["vocab_size"], ctx=ctx,
               eps=float(config.get("layer_norm_epsilon", 1e-5)),
               gelu=GELUS[act])
    cfg["seq"] = min(cfg["seq"], ctx)
    cfg.update(overrides)
    return cfg


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", choices=sorted(PRESETS),
                        help="write one preset (default: both, to examples/)")
    parser.add_argument("--from-config", metavar="CONFIG",
                        help="build the model of a Hugging Face GPT-2 "
                        "config.json (needs -o)")
    parser.add_argument("-o", "--output", help="file for --preset (default: "
                        "its file in examples/; '-' for stdout)")
    parser.add_argument("--check", action="store_true",
                        help="compare with the files on disk instead of "
                        "writing; exit 1 when they differ")
    for key in ("name", "precision"):
        parser.add_argument("--" + key.replace("_", "-"))
    for key in ("layers", "heads", "d", "vocab", "ctx", "batch", "seq",
                "grad_accum", "steps", "warmup"):
        parser.add_argument("--" + key.replace("_", "-"), type=int)
    for key in ("lr", "min_lr"):
        parser.add_argument("--" + key.replace("_", "-"), type=float)
    args = parser.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    presets = [args.preset] if args.preset else sorted(PRESETS)
    overrides = {k: v for k, v in vars(args).items()
                 if k in PRESETS["tiny"] and v is not None}
    if args.from_config:
        if args.preset or args.check or not args.output:
            parser.error("--from-config takes -o and no --preset or --check")
        try:
            text = to_json(build(config_of(args.from_config, overrides)))
        except (OSError, ValueError, KeyError, TypeError) as error:
            parser.exit(1, "gen_gpt2.py: error: %s\n" % error)
        if args.output == "-":
            sys.stdout.write(text)
        else:
            with open(args.output, "w") as f:
                f.write(text)
        return 0
    if overrides and not args.preset:
        parser.error("size and training options need --preset")
    stale = False
    for preset in presets:
        cfg = dict(PRESETS[preset], **overrides)
        text = to_json(build(cfg))
        path = args.output or os.path.join(here, OUTPUT_FILES[preset])
        if path == "-":
            sys.stdout.write(text)
            continue
        if args.check:
            try:
                with open(path) as f:
                    current = f.read()
            except OSError:
                current = None
            if current != text:
                print("%s is stale: run %s" % (path, " ".join(sys.argv[:1])),
                      file=sys.stderr)
                stale = True
            continue
        with open(path, "w") as f:
            f.write(text)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
