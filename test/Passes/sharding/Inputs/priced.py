"""Reads two tg-auto-shard outputs (the IR and its breakdown file), checks
that each breakdown sums to the plan's modelled cost, and compares the
solver's cost with the priced plan's."""
import re
import sys


def read(mlir, tsv):
    attr = re.search(r"tg\.auto_shard = \{([^}]*)\}", open(mlir).read()).group(1)
    method = re.search(r'method = "([^"]*)"', attr).group(1)
    seconds = float(re.search(r"modelled_seconds = ([0-9.eE+-]+)", attr).group(1))
    total = 0.0
    with open(tsv) as f:
        header = f.readline().rstrip("\n").split("\t")
        assert header[:4] == ["role", "nodes", "node_ns", "edge_ns"], header
        for line in f:
            fields = line.rstrip("\n").split("\t")
            total += float(fields[2]) + float(fields[3])
    sums = abs(total * 1e-9 - seconds) <= 1e-6 * max(seconds, 1e-9) + 1e-9
    return method, seconds, sums


solver = read(sys.argv[1], sys.argv[2])
priced = read(sys.argv[3], sys.argv[4])
print("solver %s: breakdown %s its cost" % (solver[0], "sums to" if solver[2] else "does not sum to"))
print("tp priced: breakdown %s its cost" % ("sums to" if priced[2] else "does not sum to"))
print("solver's optimum <= tp priced: %s (%.6g s vs %.6g s)" % (solver[1] <= priced[1], solver[1], priced[1]))
