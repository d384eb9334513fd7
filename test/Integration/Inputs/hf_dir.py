#!/usr/bin/env python3
"""Hugging Face model directories for the tests, with json and numpy only.

    hf_dir.py config gpt2-tiny|mistral-tiny FILE   a config.json
    hf_dir.py legacy IN OUT    IN as the original GPT-2 checkpoints are: no
                               "transformer." prefix, the causal-mask buffers
                               h.N.attn.bias and a copy of the tied head
    hf_dir.py shard IN OUT N   IN's single file split into N shards + index
    hf_dir.py names DIR        each tensor's name and shape, sorted
"""

import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import safetensors_np  # noqa: E402

CONFIGS = {
    # examples/gpt2-tiny.json's shapes.
    "gpt2-tiny": {"model_type": "gpt2", "n_layer": 2, "n_head": 4,
                  "n_embd": 128, "vocab_size": 256, "n_positions": 64,
                  "activation_function": "gelu_new",
                  "layer_norm_epsilon": 1e-5, "torch_dtype": "float32"},
    # Mistral-style: tied head, explicit head_dim, a sliding window longer
    # than the sequence.
    "mistral-tiny": {"model_type": "mistral", "num_hidden_layers": 2,
                     "hidden_size": 64, "intermediate_size": 96,
                     "num_attention_heads": 4, "num_key_value_heads": 1,
                     "head_dim": 16, "vocab_size": 256,
                     "max_position_embeddings": 128, "rms_norm_eps": 1e-6,
                     "rope_theta": 1000000.0, "sliding_window": 64,
                     "tie_word_embeddings": True, "hidden_act": "silu",
                     "torch_dtype": "bfloat16"},
}


def read(path):
    index = os.path.join(path, "model.safetensors.index.json")
    if not os.path.exists(index):
        return safetensors_np.load(os.path.join(path, "model.safetensors"))[0]
    with open(index) as f:
        files = sorted(set(json.load(f)["weight_map"].values()))
    out = {}
    for file in files:
        out.update(safetensors_np.load(os.path.join(path, file))[0])
    return out


def write_shards(out, tensors, n, total=0):
    """`tensors` in `n` files, in order, with model.safetensors.index.json."""
    names = list(tensors)
    per = (len(names) + n - 1) // n
    weight_map = {}
    for s in range(n):
        file = "model-%05d-of-%05d.safetensors" % (s + 1, n)
        part = {k: tensors[k] for k in names[s * per:(s + 1) * per]}
        safetensors_np.save(os.path.join(out, file), part, {"format": "pt"})
        weight_map.update({k: file for k in part})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total},
                   "weight_map": weight_map}, f, indent=1)


def main():
    cmd = sys.argv[1]
    if cmd == "config":
        with open(sys.argv[3], "w") as f:
            json.dump(CONFIGS[sys.argv[2]], f, indent=2)
        return
    if cmd == "names":
        for name, value in sorted(read(sys.argv[2]).items()):
            print(name, list(value.shape))
        return
    src, out = sys.argv[2], sys.argv[3]
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(src, "config.json"), out)
    tensors = read(src)
    if cmd == "legacy":
        prefix = "transformer."
        legacy = {k[len(prefix):] if k.startswith(prefix) else k: v
                  for k, v in tensors.items()}
        t = legacy["wpe.weight"].shape[0]
        layers = sorted({k.split(".")[1] for k in legacy if k.startswith("h.")})
        for i in layers:
            legacy["h.%s.attn.bias" % i] = np.tril(
                np.ones((t, t), np.float32)).reshape(1, 1, t, t)
        legacy["lm_head.weight"] = legacy["wte.weight"]
        safetensors_np.save(os.path.join(out, "model.safetensors"), legacy,
                            {"format": "pt"})
    elif cmd == "shard":
        write_shards(out, tensors, int(sys.argv[4]))
    else:
        sys.exit("hf_dir.py: unknown command " + cmd)


if __name__ == "__main__":
    main()
