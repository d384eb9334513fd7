#!/usr/bin/env python3
"""Checks a --merge-lora save against the unmerged one of the same run:
check_lora_merge.py UNMERGED MERGED SCALE. Each adapted weight must be
W + SCALE * A @ B (computed here in float64, within 1e-6 of its scale), the
other parameters the same bytes, and neither adapters nor optimizer state
left. Prints what it checked."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import safetensors_np  # noqa: E402

unmerged, _ = safetensors_np.load(sys.argv[1])
merged, _ = safetensors_np.load(sys.argv[2])
scale = float(sys.argv[3])
bad = []
modules = sorted(n[:-len(".lora_A")] for n in unmerged if n.endswith(".lora_A"))
for module in modules:
    w = unmerged[module + ".weight"].astype(np.float64)
    a = unmerged[module + ".lora_A"].astype(np.float64)
    b = unmerged[module + ".lora_B"].astype(np.float64)
    want = w.reshape(a.shape[0], b.shape[1]) + scale * (a @ b)
    got = merged[module + ".weight"].astype(np.float64).reshape(want.shape)
    err = float(np.abs(got - want).max()) / max(float(np.abs(want).max()), 1e-3)
    if err > 1e-6:
        bad.append("%s.weight: max error %.2e relative" % (module, err))
adapted = {m + ".weight" for m in modules}
params = [n for n in unmerged
          if "lora_" not in n and not n.endswith((".exp_avg", ".exp_avg_sq"))]
for name in params:
    if name not in adapted and (name not in merged or
                                merged[name].tobytes() != unmerged[name].tobytes()):
        bad.append("%s: not the same bytes" % name)
extra = sorted(set(merged) - set(params))
if extra:
    bad.append("left in the merged file: %s" % ", ".join(extra[:4]))
for line in bad:
    print(line)
if bad:
    sys.exit(1)
print("merged %d weights of %d parameters; no adapters or state left"
      % (len(modules), len(params)))
