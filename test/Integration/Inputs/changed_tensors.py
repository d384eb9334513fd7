#!/usr/bin/env python3
"""Says of each tensor of two safetensors files whether its bytes are the
same or changed: changed_tensors.py A B prints "NAME same" or "NAME changed"
for each name of A, sorted."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import safetensors_np  # noqa: E402

a, _ = safetensors_np.load(sys.argv[1])
b, _ = safetensors_np.load(sys.argv[2])
for name in sorted(a):
    same = name in b and a[name].tobytes() == b[name].tobytes()
    print(name, "same" if same else "changed")
