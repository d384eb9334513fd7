#!/usr/bin/env python3
"""A sharded checkpoint whose tensors the step held in another view than
their file shape, as a tensor-parallel run over tp=3 writes it (no MPI
needed), and the check of its consolidation:

  view_checkpoint.py write DIR    DIR/step_00000001: "w" held as [4, 3, 4]
                                  (file shape [4, 12]), "b" as [3, 4] ([12]),
                                  "w.exp_avg" like "w", each split by heads
  view_checkpoint.py check FILE   FILE holds them in their file shapes with
                                  the values written (every element apart)
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "Integration", "lib"))
import safetensors_np  # noqa: E402

TP = 3
# name: (the view the step held, the file shape, the dim the heads split, first value)
TENSORS = {"w": ([4, 3, 4], [4, 12], 1, 0.5),
           "b": ([3, 4], [12], 0, 1000.5),
           "w.exp_avg": ([4, 3, 4], [4, 12], 1, 2000.5)}


def whole(name):
    view, _, _, first = TENSORS[name]
    return (np.arange(np.prod(view), dtype=np.float32) + first).reshape(view)


def write(root):
    step = os.path.join(root, "step_00000001")
    os.makedirs(step)
    entries = {}
    shards = [dict() for _ in range(TP)]
    offsets = [dict() for _ in range(TP)]
    for name, (view, file_shape, dim, _) in TENSORS.items():
        pieces = []
        for rank in range(TP):
            offset = [0] * len(view)
            offset[dim] = rank
            shape = list(view)
            shape[dim] = 1
            index = tuple(slice(o, o + s) for o, s in zip(offset, shape))
            shards[rank][name] = np.ascontiguousarray(whole(name)[index])
            offsets[rank][name] = offset
            pieces.append({"file": rank, "offset": offset, "shape": shape})
        split = [[] for _ in view]
        split[dim] = ["tp"]
        entries[name] = {"dtype": "F32", "shape": view,
                         "file_shape": file_shape, "split": split,
                         "pieces": pieces}
    files = []
    for rank in range(TP):
        files.append("rank_%05d.safetensors" % rank)
        safetensors_np.save(os.path.join(step, files[-1]), shards[rank],
                            {"format": "tgc-checkpoint-shard-1",
                             "model": "tiny", "rank": rank,
                             "offsets": json.dumps(offsets[rank])})
    index = {"format": "tgc-checkpoint-sharded-1", "model": "tiny",
             "mesh": {"tp": TP}, "metadata": {"step": "1"},
             "files": files, "tensors": entries}
    with open(os.path.join(step, "index.json"), "w") as f:
        json.dump(index, f)


def check(path):
    tensors, meta = safetensors_np.load(path)
    for name, (_, file_shape, _, _) in TENSORS.items():
        got = tensors[name]
        same = list(got.shape) == file_shape and np.array_equal(
            got.reshape(-1), whole(name).reshape(-1))
        print("%s %s %s" % (name, list(got.shape),
                            "same values" if same else "DIFFERENT"))
    print("views %s" % json.dumps(json.loads(meta["sharding"]).get("views")))


if sys.argv[1] == "write":
    write(sys.argv[2])
else:
    check(sys.argv[2])
