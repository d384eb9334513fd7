#!/usr/bin/env python3
"""Writes a variant of a model file for the tests.

Usage: edit_model.py IN OUT [OLD=NEW ...] [--drop-outputs]
                            [--dropout AFTER P SEED] [--untrainable GLOB]

OLD=NEW renames a tensor (a parameter, input or node output) everywhere it
is used; --drop-outputs removes the model's `outputs` list; --dropout puts a
dropout node (probability P, seed SEED) after the tensor AFTER;
--untrainable marks the parameters whose names match GLOB (fnmatch)
"trainable": false.
"""
import fnmatch
import json
import sys


def main():
    args = sys.argv[1:]
    src, dst = args[0], args[1]
    model = json.load(open(src))
    rest = args[2:]
    renames = {}
    while rest:
        a = rest.pop(0)
        if a == "--drop-outputs":
            model.pop("outputs", None)
        elif a == "--untrainable":
            glob = rest.pop(0)
            for p in model.get("params", []):
                if fnmatch.fnmatchcase(p["name"], glob):
                    p["trainable"] = False
        elif a == "--dropout":
            after, p, seed = rest.pop(0), float(rest.pop(0)), int(rest.pop(0))
            out = after + ".dropout"
            for node in model["nodes"]:
                node["inputs"] = [out if t == after else t
                                  for t in node.get("inputs", [])]
            index = next(i for i, n in enumerate(model["nodes"])
                         if after in n["outputs"])
            model["nodes"].insert(index + 1, {
                "name": out, "op": "dropout", "inputs": [after],
                "outputs": [out],
                "attrs": [{"name": "p", "f": p}, {"name": "seed", "i": seed}]})
        else:
            old, new = a.split("=")
            renames[old] = new

    def rename(t):
        return renames.get(t, t)

    for p in model.get("params", []):
        p["name"] = rename(p["name"])
    for i in model.get("inputs", []):
        i["name"] = rename(i["name"])
    for n in model["nodes"]:
        n["inputs"] = [rename(t) for t in n.get("inputs", [])]
        n["outputs"] = [rename(t) for t in n.get("outputs", [])]
    if "outputs" in model:
        model["outputs"] = [rename(t) for t in model["outputs"]]
    model["loss"] = rename(model["loss"])
    json.dump(model, open(dst, "w"), indent=1)


if __name__ == "__main__":
    main()
