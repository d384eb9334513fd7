#!/usr/bin/env python3
"""Prints one metric at one step from several JSON Lines logs and whether
they are all equal or all different.

Usage: first_values.py KEY STEP LOG...
"""
import json
import sys

key, step, logs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
values = []
for log in logs:
    found = [e[key] for e in map(json.loads, open(log))
             if e.get("step") == step and key in e]
    if not found:
        print("FAIL: %s has no %s at step %d" % (log, key, step))
        sys.exit(1)
    values.append(found[0])
print("%s at step %d: %s" % (key, step, " ".join("%.9g" % v for v in values)))
if all(v == values[0] for v in values):
    print("all equal")
elif len(set(values)) == len(values):
    print("all different")
else:
    print("some equal")
