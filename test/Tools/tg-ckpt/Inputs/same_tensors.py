#!/usr/bin/env python3
"""Compares two safetensors files tensor by tensor, bit for bit, and the
metadata keys both training runs write: same_tensors.py A B."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "Integration", "lib"))
import safetensors_np  # noqa: E402

a, meta_a = safetensors_np.load(sys.argv[1])
b, meta_b = safetensors_np.load(sys.argv[2])
if list(a) != list(b):
    print("DIFFERENT names: %s vs %s" % (sorted(set(a) ^ set(b))[:5], len(b)))
    sys.exit(1)
bad = [k for k in a if a[k].dtype != b[k].dtype or a[k].shape != b[k].shape
       or a[k].tobytes() != b[k].tobytes()]
for key in ["format", "model", "step", "data_position", "first_loss"]:
    if meta_a.get(key) != meta_b.get(key):
        bad.append("metadata " + key)
if bad:
    print("DIFFERENT: " + ", ".join(bad[:10]))
    sys.exit(1)
print("%d tensors identical, step %s" % (len(a), meta_a["step"]))
