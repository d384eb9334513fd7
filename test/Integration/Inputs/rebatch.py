#!/usr/bin/env python3
"""Writes a classifier model file with another batch size:
rebatch.py MODEL.json BATCH OUT.json (inputs' leading dim and the table)."""
import json
import sys

spec = json.load(open(sys.argv[1]))
batch = int(sys.argv[2])
for i in spec["inputs"]:
    i["shape"][0] = batch
spec.setdefault("training", {})["batch_size"] = batch
json.dump(spec, open(sys.argv[3], "w"))
