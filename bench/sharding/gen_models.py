#!/usr/bin/env python3
"""Writes the large model files that bench/sharding/scale.sh plans: GPT-3
6.7B and 175B, and Llama-2 70B, in tgc's model file format (JSON text form of
frontend/schema/model.fbs).

The files are generated at run time (into a build or temp directory), never
committed: they only describe shapes and initialisers, but the 175B file
still has 96 layers' worth of params and nodes.

    python3 bench/sharding/gen_models.py [DIR]          # default build/scale-models
    python3 bench/sharding/gen_models.py DIR --check    # also print parameter counts
    python3 bench/sharding/gen_models.py --tiny-llama FILE  # the tests' Llama

GPT-3 reuses examples/gen_gpt2.py's graph (the GPT-2 architecture GPT-3 also
has: learned positions, pre-norm blocks with biases, tanh GELU, LM head tied
to the token embedding) with Brown et al. 2020's shapes (Table 2.1). Two
differences from the paper's model, both deliberate:
  * the vocabulary is 50257 padded to 51200, as Megatron-LM pads it
    (--make-vocab-size-divisible-by 128 times the tensor-parallel degree 8),
    so that the embedding splits evenly over tp = 2, 4 and 8 (+0.94 % of the
    embedding's parameters, +0.8 % of the 6.7B model's and +0.2 % of the
    175B model's FLOPs in the LM head);
  * attention is dense in every layer (GPT-3 alternates dense and locally
    banded sparse layers; Megatron-LM's GPT-3 configurations are dense too).

Llama-2 70B (Touvron et al. 2023): 80 layers, d_model 8192, 64 query heads
and 8 key/value heads (grouped-query attention, which tg.attention takes
directly), SwiGLU MLP with d_ff 28672, RMSNorm (no biases anywhere), rotary
position embeddings computed in the graph (tg.iota, sin, cos: no
parameters), untied LM head, vocabulary 32000, sequence 4096. Nothing is
approximated in the shapes; the rotary tables are computed once and shared
by all layers (a few elementwise ops per layer on q and k).

The Llama graph is examples/gen_llama.py's; layouts are [in, out] (x @ W) as
in examples/gen_gpt2.py, the Llama names Hugging Face's keys (whose
nn.Linear stores [out, in]).

Plain python3, no dependencies.
"""

import argparse
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import gen_gpt2  # noqa: E402  (Graph, build, to_json of the GPT-2 graph)
import gen_llama  # noqa: E402  (the Llama graph)

# GPT-3 shapes from Brown et al. 2020, Table 2.1 (n_layers, d_model,
# n_heads, n_ctx 2048). The training table's batch is a placeholder: tgc
# --batch-size sets the micro-batch per data replica for each mesh.
GPT3 = {
    "gpt3-6.7b": dict(name="gpt3-6.7b", layers=32, heads=32, d=4096,
                      vocab=51200, ctx=2048, batch=1, seq=2048, grad_accum=1,
                      steps=143000, lr=1.2e-4, min_lr=1.2e-5, warmup=375,
                      precision="bf16"),
    "gpt3-175b": dict(name="gpt3-175b", layers=96, heads=96, d=12288,
                      vocab=51200, ctx=2048, batch=1, seq=2048,
                      grad_accum=1, steps=143000, lr=0.6e-4, min_lr=0.6e-5,
                      warmup=375, precision="bf16"),
}

LLAMA2_70B = dict(name="llama2-70b", layers=80, heads=64, kv_heads=8,
                  d=8192, d_ff=28672, vocab=32000, batch=1, seq=4096,
                  rope_theta=10000.0, eps=1e-5, steps=500000, lr=1.5e-4,
                  min_lr=1.5e-5, warmup=2000, precision="bf16")

# Published parameter counts, for --check.
PUBLISHED = {"gpt3-6.7b": 6.7e9, "gpt3-175b": 175.0e9, "llama2-70b": 70e9}


def models():
    out = {name: gen_gpt2.build(cfg) for name, cfg in GPT3.items()}
    out[LLAMA2_70B["name"]] = gen_llama.build(LLAMA2_70B)
    return out


def count_params(model):
    total = 0
    for p in model["params"]:
        n = 1
        for s in p["shape"]:
            n *= s
        total += n
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", nargs="?",
                        default=os.path.join(HERE, "..", "..", "build",
                                             "scale-models"),
                        help="output directory (default build/scale-models)")
    parser.add_argument("--check", action="store_true",
                        help="print each model's parameter count beside the "
                        "published size")
    parser.add_argument("--tiny-llama", metavar="FILE",
                        help="write only the test-sized Llama to FILE")
    args = parser.parse_args()
    if args.tiny_llama:
        with open(args.tiny_llama, "w") as f:
            f.write(gen_gpt2.to_json(gen_llama.build(gen_llama.PRESETS["tiny"])))
        return
    os.makedirs(args.dir, exist_ok=True)
    for name, model in models().items():
        path = os.path.join(args.dir, name + ".json")
        text = gen_gpt2.to_json(model)
        # Rewrite only when the content changed, so reruns keep mtimes.
        try:
            with open(path) as f:
                same = f.read() == text
        except OSError:
            same = False
        if not same:
            with open(path, "w") as f:
                f.write(text)
        if args.check:
            n = count_params(model)
            print("%-12s %16d params (%.2fB; published %.1fB, %+.1f%%)  %s"
                  % (name, n, n / 1e9, PUBLISHED[name] / 1e9,
                     100.0 * (n / PUBLISHED[name] - 1), path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
