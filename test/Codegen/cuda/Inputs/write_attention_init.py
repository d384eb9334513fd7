#!/usr/bin/env python3
"""Writes the weights of Inputs/attention-mask-gqa.json for
attention-emulation.test: write_attention_init.py OUT.safetensors.

Random q, kv, bias and w_out; `keep` (whose log is the padding mask) keeps
the first 4 keys of batch 0 and no key of batch 1, whose queries then see
nothing (-inf everywhere) and get zeros.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "Integration", "lib"))
import safetensors_np  # noqa: E402

rng = np.random.default_rng(7)
keep = np.zeros([2, 1, 1, 6], np.float32)
keep[0, :, :, :4] = 1.0
tensors = {
    "q": rng.standard_normal([2, 4, 6, 8]).astype(np.float32),
    "kv": rng.standard_normal([2, 2, 6, 8]).astype(np.float32),
    "bias": rng.standard_normal([1, 4, 6, 6]).astype(np.float32),
    "keep": keep,
    "w_out": rng.standard_normal([2, 4, 6, 8]).astype(np.float32),
}
safetensors_np.save(sys.argv[1], tensors)
