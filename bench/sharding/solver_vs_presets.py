#!/usr/bin/env python3
"""The solver against the standard plans, per tgc run of scale.sh.

Usage: bench/sharding/solver_vs_presets.py LOGDIR  (scale.sh's OUT/logs)

Reads each run's --report=sharding text (CASE.*.out): where both the
solver's plan and some standard plan (dp, zero3, tp x dp, tp+sp x dp,
megatron) fit, the ratio is the solver's compiled step over the fastest
fitting standard plan's, on the same mesh and micro-batch. Prints a
Markdown row per case: tries, tries where the solver is no slower, the
median ratio and the worst.
"""
import glob
import re
import statistics
import sys

UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
CASES = ["gpt2-124m", "gpt3-6.7b", "llama2-70b", "gpt3-175b"]
ROW = re.compile(r"\s+(\S+(?: x dp)?)\s+([\d.]+) (s|ms|us)"
                 r"\s+\S+ \S+\s+\S+ \S+\s+\S+ \S+\s+(.*)$")


def plans(text):
    """{plan: (step seconds, fits)} of the report's "plans compared"."""
    rows = {}
    for line in text.split("plans compared", 1)[1].splitlines()[2:]:
        match = ROW.match(line)
        if not match:
            break
        name, step, unit, rest = match.groups()
        fits = "does not fit" not in rest and "failed" not in rest
        rows[name] = (float(step) * UNITS[unit], fits)
    return rows


def ratio(path):
    text = open(path).read()
    chosen = re.search(r"^plan: (.*)$", text, re.M)
    if not chosen or "plans compared" not in text:
        return None
    rows = plans(text)
    # The chosen plan's row is "auto-shard": the solver's, or a preset's
    # (then the solver has a row of its own).
    solver_chosen = chosen.group(1).strip() == "auto-shard: the solver's plan"
    solver = rows.pop("auto-shard" if solver_chosen else "solver", None)
    fitting = [step for step, fits in rows.values() if fits]
    if not solver or not solver[1] or not fitting:
        return None
    return solver[0] / min(fitting)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print("| case | tries | solver <= best preset | median ratio | worst |")
    print("|---|---|---|---|---|")
    for case in CASES:
        ratios = [r for r in (ratio(f) for f in sorted(
            glob.glob("%s/%s.*.out" % (sys.argv[1], case)))) if r is not None]
        if ratios:
            print("| %s | %d | %d | %.2f | %.2f |" % (
                case, len(ratios), sum(r <= 1 + 1e-9 for r in ratios),
                statistics.median(ratios), max(ratios)))


if __name__ == "__main__":
    main()
