#!/usr/bin/env python3
"""Writes a model file whose training table asks for gradient accumulation:
write_accum_model.py MODEL.json MICRO_BATCHES OUT.json."""
import json
import sys

spec = json.load(open(sys.argv[1]))
spec.setdefault("training", {})["grad_accum"] = int(sys.argv[2])
json.dump(spec, open(sys.argv[3], "w"))
