#!/usr/bin/env python3
"""Compares the losses of two JSONL training logs step by step:
compare_logs.py A.jsonl B.jsonl RTOL."""
import json
import sys

def losses(path):
    return {e["step"]: e["loss"] for e in map(json.loads, open(path)) if "loss" in e}

a, b, rtol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
bad = [s for s in sorted(a) if s not in b or
       abs(a[s] - b[s]) > rtol * max(abs(b[s]), 1e-6)]
if set(a) != set(b) or bad:
    for s in bad[:10]:
        print("step %d: %r vs %r" % (s, a[s], b.get(s)))
    print("DIFFERENT (%d vs %d steps)" % (len(a), len(b)))
    sys.exit(1)
print("%d steps agree" % len(a))
