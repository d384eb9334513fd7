#!/usr/bin/env python3
"""Rewrites a safetensors file of weights with one tensor poisoned.

Usage: poison_weights.py IN OUT TENSOR INDEX VALUE
VALUE is a float ("nan", "inf", "-inf", "1e30"); element INDEX of the
flattened TENSOR gets it.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import safetensors_np  # noqa: E402

src, dst, name, index, value = sys.argv[1:6]
tensors, meta = safetensors_np.load(src)
flat = tensors[name].reshape(-1)
if value.startswith("all:"):
    flat[:] = float(value[4:])
else:
    flat[int(index)] = float(value)
safetensors_np.save(dst, tensors, meta)
