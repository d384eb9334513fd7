#!/usr/bin/env python3
"""Brute force over every choice of a tiny problem: prints `optimum C` (the
least valid cost) or `infeasible`, and with a solution file `solution C`
(its cost, as the contest's evaluate.py would score it) or `invalid`.

    brute.py PROBLEM.json [SOLUTION.json]
"""
import gzip
import itertools
import json
import sys

FORBIDDEN = 10**18


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)["problem"]


def score(p, choice):
    costs, usages = p["nodes"]["costs"], p["nodes"]["usages"]
    total = 0
    for i, s in enumerate(choice):
        if costs[i][s] >= FORBIDDEN:
            return None
        total += costs[i][s]
    for (u, v), c in zip(p["edges"]["nodes"], p["edges"]["costs"]):
        x = c[choice[u] * len(costs[v]) + choice[v]]
        if x >= FORBIDDEN:
            return None
        total += x
    limit = p.get("usage_limit")
    if limit is not None:
        end = max((b for a, b in p["nodes"]["intervals"]), default=0)
        for t in range(end):
            live = sum(usages[i][s] for i, s in enumerate(choice)
                       if p["nodes"]["intervals"][i][0] <= t < p["nodes"]["intervals"][i][1])
            if live > limit:
                return None
    return total


p = load(sys.argv[1])
scores = [score(p, c) for c in itertools.product(*[range(len(c)) for c in p["nodes"]["costs"]])]
valid = [s for s in scores if s is not None]
print("optimum %g" % min(valid) if valid else "infeasible")
if len(sys.argv) > 2:
    s = score(p, json.load(open(sys.argv[2])))
    print("solution %g" % s if s is not None else "invalid")
