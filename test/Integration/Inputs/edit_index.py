#!/usr/bin/env python3
"""Damages a sharded checkpoint's index.json for the error tests:
edit_index.py CHECKPOINT_DIR overlap|gap|swap (on fc1.weight's pieces)."""
import json
import os
import sys

path = os.path.join(sys.argv[1], "index.json")
index = json.load(open(path))
pieces = index["tensors"]["fc1.weight"]["pieces"]
if sys.argv[2] == "overlap":
    pieces[1]["offset"] = list(pieces[0]["offset"])
elif sys.argv[2] == "gap":
    pieces[1]["shape"][0] //= 2
elif sys.argv[2] == "swap":
    pieces[0]["file"], pieces[1]["file"] = pieces[1]["file"], pieces[0]["file"]
else:
    sys.exit("unknown edit " + sys.argv[2])
json.dump(index, open(path, "w"))
