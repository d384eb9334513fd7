#!/usr/bin/env python3
"""Writes a model file with LoRA adapters spelled out as nodes, the reference
for tg-lora: lora_model.py IN OUT RANK ALPHA TARGET[,TARGET...].

As PEFT applies LoRA: each parameter `<module>.weight` whose module is a
target or ends with `.<target>` gets `<module>.lora_A` ([in, r], uniform in
+-1/sqrt(in)) and `<module>.lora_B` ([r, out], zeros), appended to the
parameters; each matmul that reads the weight (x @ W) is followed by
x @ A, then @ B, times alpha / r, added to its result; every parameter the
model had is marked "trainable": false."""
import json
import math
import sys


def main():
    src, dst, rank, alpha, targets = sys.argv[1:6]
    rank, alpha, targets = int(rank), float(alpha), targets.split(",")
    model = json.load(open(src))
    shapes = {p["name"]: p["shape"] for p in model["params"]}
    for p in model["params"]:
        p["trainable"] = False
    nodes = []
    renamed = {}
    for node in model["nodes"]:
        node["inputs"] = [renamed.get(t, t) for t in node.get("inputs", [])]
        nodes.append(node)
        if node["op"] != "matmul":
            continue
        weight = node["inputs"][1]
        module = weight[:-len(".weight")] if weight.endswith(".weight") else ""
        if not module or not any(module == t or module.endswith("." + t)
                                 for t in targets):
            continue
        d_in, d_out = shapes[weight]
        a, b = module + ".lora_A", module + ".lora_B"
        if a not in shapes:
            bound = 1.0 / math.sqrt(d_in)
            model["params"].append({"name": a, "shape": [d_in, rank], "init": {
                "kind": "uniform", "low": -bound, "high": bound}})
            model["params"].append({"name": b, "shape": [rank, d_out],
                                    "init": {"kind": "zeros"}})
            shapes[a] = shapes[b] = None
        y = node["outputs"][0]
        x = node["inputs"][0]
        nodes += [
            {"name": module + ".lora_A", "op": "matmul", "inputs": [x, a],
             "outputs": [y + ".xa"]},
            {"name": module + ".lora_B", "op": "matmul",
             "inputs": [y + ".xa", b], "outputs": [y + ".xab"]},
            {"name": module + ".lora_alpha", "op": "constant",
             "outputs": [y + ".scale"],
             "attrs": [{"name": "dtype", "s": "f32"},
                       {"name": "value", "f": alpha / rank}]},
            {"name": module + ".lora_scale", "op": "mul",
             "inputs": [y + ".xab", y + ".scale"],
             "outputs": [y + ".scaled"]},
            {"name": module + ".lora", "op": "add",
             "inputs": [y, y + ".scaled"], "outputs": [y + ".lora"]},
        ]
        renamed[y] = y + ".lora"
    model["nodes"] = nodes
    model["outputs"] = [renamed.get(t, t) for t in model.get("outputs", [])]
    model["loss"] = renamed.get(model["loss"], model["loss"])
    json.dump(model, open(dst, "w"), indent=1)


if __name__ == "__main__":
    main()
