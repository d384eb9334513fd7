#!/usr/bin/env python3
"""Writes a Llama-style decoder in tgc's model file format (JSON text form
of frontend/schema/model.fbs): from a preset, or from a Hugging Face
config.json (Llama 1/2/3, Mistral), so that the checkpoint beside it loads
with --init-from.

The graph follows Hugging Face's LlamaForCausalLM: token embedding, pre-norm
blocks (RMSNorm -> attention with rotary position embeddings and grouped-
query heads -> residual, RMSNorm -> SwiGLU MLP -> residual), a final RMSNorm
and the LM head (its own weight, or the embedding's when
tie_word_embeddings). No biases. The rotary tables are computed in the
graph (tg.iota, exp, sin, cos: no parameters) with the rotate-half
convention, and rope_scaling of type linear or llama3 is applied to the
inverse frequencies as transformers does.

Parameter names are Hugging Face's keys ("model.layers.0.self_attn.q_proj.
weight"); layouts are [in, out] (x @ W), the transpose of nn.Linear's
[out, in], which the runtime's name table undoes when it reads or writes a
Hugging Face directory.

    python3 examples/gen_llama.py --preset tiny -o llama-tiny.json
    python3 examples/gen_llama.py --from-config ckpt/config.json \\
        --batch 4 --seq 256 --lr 1e-4 -o llama.json

Batch size and sequence length are baked into the graph (static shapes);
the training table comes from the preset (or, with --from-config, from the
fine-tuning defaults below) and the flags. Plain python3, no dependencies.
"""

import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_gpt2  # noqa: E402  (Graph, build, to_json)

PRESETS = {
    # The test-sized Llama (fp32, 4 layers, d_model 64, 4 query and 2
    # key/value heads): what the pipeline tests train.
    "tiny": dict(name="llama-tiny", layers=4, heads=4, kv_heads=2, d=64,
                 d_ff=128, vocab=256, batch=8, seq=32, rope_theta=10000.0,
                 eps=1e-5, steps=100, lr=1e-3, min_lr=1e-4, warmup=10,
                 precision="fp32"),
}

# The training table of a model made from a checkpoint's config: a short
# fine-tuning run (flags change each).
FINETUNE = dict(batch=4, seq=256, steps=1000, lr=1e-4, min_lr=1e-5,
                warmup=10, precision="fp32")

LLAMA_TYPES = ("llama", "mistral")


def rope_inv_freq(g, cfg, D):
    """The [T, D/2] table of inverse frequencies (theta^(-2i/D)), scaled as
    the config's rope_scaling asks; returns the node name."""
    T, half = cfg["seq"], D // 2
    idx = g.op("rope.idx", "iota", [], shape=[T, half], dimension=1)
    scale = g.op("rope.scale", "constant", [],
                 value=-2.0 * math.log(cfg["rope_theta"]) / D)
    inv_freq = g.op("rope.inv_freq", "exp",
                    [g.op("rope.exponent", "mul", [idx, scale])])
    scaling = cfg.get("rope_scaling")
    if not scaling:
        return inv_freq
    kind, factor = scaling["kind"], scaling["factor"]

    def const(name, value):
        return g.op("rope." + name, "constant", [], value=value)

    if kind == "linear":
        # Positions divided by the factor: the frequencies are.
        return g.op("rope.inv_freq.linear", "mul",
                    [inv_freq, const("inv_factor", 1.0 / factor)])
    # llama3: frequencies whose wavelength is below original/high keep
    # their value, those above original/low are divided by the factor, and
    # in between they are blended by s = (original / wavelength - low) /
    # (high - low), the smooth factor; clamping s to [0, 1] covers all
    # three ranges in one expression: inv_freq * ((1 - s) / factor + s).
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    original = scaling["original_max_position_embeddings"]
    s = g.op("rope.smooth.ratio", "mul",
             [inv_freq, const("smooth.scale",
                              original / (2 * math.pi) / (high - low))])
    s = g.op("rope.smooth.shift", "sub",
             [s, const("smooth.offset", low / (high - low))])
    s = g.op("rope.smooth.floor", "maximum", [s, const("zero", 0.0)])
    s = g.op("rope.smooth", "minimum", [s, const("one", 1.0)])
    blend = g.op("rope.blend.weight", "mul",
                 [s, const("blend.slope", 1.0 - 1.0 / factor)])
    blend = g.op("rope.blend", "add",
                 [blend, const("blend.base", 1.0 / factor)])
    return g.op("rope.inv_freq.llama3", "mul", [inv_freq, blend])


def build(cfg):
    L, H, Hkv, C = cfg["layers"], cfg["heads"], cfg["kv_heads"], cfg["d"]
    F, V, B, T = cfg["d_ff"], cfg["vocab"], cfg["batch"], cfg["seq"]
    D = cfg.get("head_dim") or C // H
    if H % Hkv:
        raise ValueError("heads=%d is not a multiple of kv_heads=%d"
                         % (H, Hkv))
    if D % 2:
        raise ValueError("the head size %d is odd: rotary embeddings rotate "
                         "pairs" % D)
    half = D // 2
    std = 0.02
    g = gen_gpt2.Graph()
    normal, ones = gen_gpt2.normal, gen_gpt2.ONES

    def linear(name, x, fan_in, fan_out):
        w = g.param(name + ".weight", [fan_in, fan_out], normal(std))
        return g.op(name, "matmul", [x, w])

    def rms_norm(name, x):
        w = g.param(name + ".weight", [C], ones)
        return g.op(name, "rms_norm", [x, w], eps=cfg["eps"])

    def heads(name, x, n):
        t = g.op(name + ".split", "reshape", [x], shape=[-1, T, n, D])
        return g.op(name + ".heads", "transpose", [t], perm=[0, 2, 1, 3])

    # Rotary tables [T, D]: angle[t, i] = t * inv_freq[i] for the first
    # half, repeated for the second (the rotate-half convention of HF Llama).
    pos = g.op("rope.pos", "iota", [], shape=[T, half], dimension=0)
    angle = g.op("rope.angle", "mul", [pos, rope_inv_freq(g, cfg, D)])
    angle = g.op("rope.angle2", "concat", [angle, angle], axis=1)
    cos = g.op("rope.cos", "cos", [angle])
    sin = g.op("rope.sin", "sin", [angle])

    def rope(name, x, n):
        x1 = g.op(name + ".x1", "slice", [x], start=[0, 0, 0, 0],
                  limit=[-1, n, T, half])
        x2 = g.op(name + ".x2", "slice", [x], start=[0, 0, 0, half],
                  limit=[-1, n, T, D])
        rot = g.op(name + ".rot", "concat",
                   [g.op(name + ".neg", "neg", [x2]), x1], axis=3)
        return g.op(name, "add", [g.op(name + ".cos", "mul", [x, cos]),
                                  g.op(name + ".sin", "mul", [rot, sin])])

    emb = g.param("model.embed_tokens.weight", [V, C], normal(std))
    x = g.op("tok_emb", "embedding", [emb, "idx"])
    for i in range(L):
        p = "model.layers.%d" % i
        h = rms_norm(p + ".input_layernorm", x)
        a = p + ".self_attn"
        q = heads(a + ".q", linear(a + ".q_proj", h, C, H * D), H)
        k = heads(a + ".k", linear(a + ".k_proj", h, C, Hkv * D), Hkv)
        v = heads(a + ".v", linear(a + ".v_proj", h, C, Hkv * D), Hkv)
        q = rope(a + ".q_rope", q, H)
        k = rope(a + ".k_rope", k, Hkv)
        y = g.op(a + ".sdpa", "attention", [q, k, v], causal=True)
        y = g.op(a + ".merge", "transpose", [y], perm=[0, 2, 1, 3])
        y = g.op(a + ".merged", "reshape", [y], shape=[-1, T, H * D])
        y = linear(a + ".o_proj", y, H * D, C)
        x = g.op(p + ".resid_1", "add", [x, y])

        h = rms_norm(p + ".post_attention_layernorm", x)
        m = p + ".mlp"
        gate = linear(m + ".gate_proj", h, C, F)
        up = linear(m + ".up_proj", h, C, F)
        h = g.op(m + ".act", "mul", [g.op(m + ".silu", "silu", [gate]), up])
        h = linear(m + ".down_proj", h, F, C)
        x = g.op(p + ".resid_2", "add", [x, h])

    x = rms_norm("model.norm", x)
    if cfg.get("tie"):
        logits = g.op("logits", "matmul", [x, emb], transpose_rhs=True)
    else:
        logits = linear("lm_head", x, C, V)
    loss = g.op("loss", "cross_entropy", [logits, "targets"])
    # The inputs (idx, targets: [batch, seq]) and the training table are
    # those of the GPT graph (built here with one tiny layer, whose params
    # and nodes are dropped); only the optimizer's exclusions (RMSNorm
    # gains; there are no biases) and eps differ.
    frame = gen_gpt2.build(dict(
        name=cfg["name"], layers=1, heads=1, d=8, vocab=V, ctx=T, batch=B,
        seq=T, grad_accum=cfg.get("grad_accum", 1), steps=cfg["steps"],
        lr=cfg["lr"], min_lr=cfg["min_lr"], warmup=cfg["warmup"],
        precision=cfg["precision"]))
    frame["training"]["optimizer"].update(
        eps=1e-5, no_decay=["*layernorm.weight", "model.norm.weight"])
    return dict(frame, params=g.params, nodes=g.nodes, loss=loss)


def rope_scaling_of(config, path, seq):
    """The config's rope_scaling as build() takes it (None: none)."""
    scaling = config.get("rope_scaling")
    if not scaling:
        return None
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind == "default":
        return None
    if kind == "dynamic":
        # Dynamic NTK scaling changes the frequencies only for sequences
        # longer than the trained context.
        if seq > config.get("max_position_embeddings", seq):
            raise ValueError("%s: dynamic rope_scaling at seq %d, beyond "
                             "max_position_embeddings %d, is not supported"
                             % (path, seq, config["max_position_embeddings"]))
        return None
    if kind == "linear":
        return {"kind": "linear", "factor": float(scaling["factor"])}
    if kind == "llama3":
        out = {"kind": "llama3"}
        for key in ("factor", "low_freq_factor", "high_freq_factor",
                    "original_max_position_embeddings"):
            if key not in scaling:
                raise ValueError("%s: llama3 rope_scaling without %s"
                                 % (path, key))
            out[key] = float(scaling[key])
        return out
    raise ValueError("%s: rope_scaling type %r is not supported (linear, "
                     "llama3, dynamic within the context)" % (path, kind))


def config_of(path, overrides):
    """A build() config from a Hugging Face config.json and the flags."""
    with open(path) as f:
        config = json.load(f)
    kind = config.get("model_type")
    if kind not in LLAMA_TYPES:
        raise ValueError("%s: model_type %r is not a Llama-style model (%s)"
                         % (path, kind, ", ".join(LLAMA_TYPES)))
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers",
                "num_attention_heads", "vocab_size"):
        if key not in config:
            raise ValueError("%s has no %s" % (path, key))
    if config.get("hidden_act", "silu") != "silu":
        raise ValueError("%s: hidden_act %r (the graph's MLP is SwiGLU, silu)"
                         % (path, config["hidden_act"]))
    for key in ("attention_bias", "mlp_bias"):
        if config.get(key):
            raise ValueError("%s: %s is true (the graph has no biases)"
                             % (path, key))
    cfg = dict(FINETUNE, name=os.path.basename(os.path.dirname(
        os.path.abspath(path))) or kind)
    cfg.update(layers=config["num_hidden_layers"],
               heads=config["num_attention_heads"],
               kv_heads=config.get("num_key_value_heads")
               or config["num_attention_heads"],
               d=config["hidden_size"], d_ff=config["intermediate_size"],
               vocab=config["vocab_size"],
               head_dim=config.get("head_dim"),
               eps=float(config.get("rms_norm_eps", 1e-6)),
               rope_theta=float(config.get("rope_theta", 10000.0)),
               tie=bool(config.get("tie_word_embeddings", False)))
    cfg["seq"] = min(cfg["seq"], config.get("max_position_embeddings",
                                            cfg["seq"]))
    cfg.update(overrides)
    window = config.get("sliding_window")
    if window and cfg["seq"] > window:
        raise ValueError("%s: sliding_window %d is shorter than seq %d (the "
                         "graph's attention is fully causal)"
                         % (path, window, cfg["seq"]))
    cfg["rope_scaling"] = rope_scaling_of(config, path, cfg["seq"])
    return cfg


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", choices=sorted(PRESETS))
    source.add_argument("--from-config", metavar="CONFIG",
                        help="a Hugging Face config.json (model_type llama "
                        "or mistral)")
    parser.add_argument("-o", "--output", required=True,
                        help="the model file ('-' for stdout)")
    for key in ("name", "precision"):
        parser.add_argument("--" + key.replace("_", "-"))
    for key in ("layers", "batch", "seq", "grad_accum", "steps", "warmup"):
        parser.add_argument("--" + key.replace("_", "-"), type=int)
    for key in ("lr", "min_lr"):
        parser.add_argument("--" + key.replace("_", "-"), type=float)
    args = parser.parse_args()
    overrides = {k: v for k, v in vars(args).items()
                 if k not in ("preset", "from_config", "output")
                 and v is not None}
    try:
        if args.from_config:
            cfg = config_of(args.from_config, overrides)
        else:
            cfg = dict(PRESETS[args.preset], **overrides)
        text = gen_gpt2.to_json(build(cfg))
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit("gen_llama.py: error: %s" % error)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
