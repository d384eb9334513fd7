#!/usr/bin/env python3
"""Writes a token shard in llm.c's layout: make_tokens.py PATH COUNT VOCAB [SEED]."""
import sys

import numpy as np

path, count, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
header = np.zeros(256, np.int32)
header[:3] = [20240520, 1, count]
tokens = np.random.default_rng(seed).integers(0, vocab, count).astype(np.uint16)
with open(path, "wb") as f:
    f.write(header.tobytes())
    f.write(tokens.tobytes())
