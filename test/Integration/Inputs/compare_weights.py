#!/usr/bin/env python3
"""Compares the tensors of two safetensors files:
compare_weights.py A B RTOL (each tensor's max error relative to its scale)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import safetensors_np  # noqa: E402

a, _ = safetensors_np.load(sys.argv[1])
b, _ = safetensors_np.load(sys.argv[2])
rtol = float(sys.argv[3])
bad = []
if sorted(a) != sorted(b):
    bad.append("different tensors: %s vs %s" % (sorted(a), sorted(b)))
for name in sorted(set(a) & set(b)):
    scale = max(float(np.abs(b[name]).max()), 1e-3)
    err = float(np.abs(a[name].astype(np.float64) - b[name]).max()) / scale
    if err > rtol:
        bad.append("%s: max error %.2e relative" % (name, err))
for line in bad:
    print(line)
if bad:
    print("DIFFERENT")
    sys.exit(1)
print("%d tensors agree" % len(a))
