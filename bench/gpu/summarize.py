#!/usr/bin/env python3
"""One line from a training executable's JSONL log (--log): the median over
the steps after the warm-up of the step time, tokens/s and MFU.

    summarize.py LOG.jsonl WARMUP LABEL
"""
import json
import statistics
import sys


def main():
    path, warmup, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    steps = [e for e in map(json.loads, open(path)) if "step_ms" in e]
    timed = [e for e in steps if e["step"] > warmup]
    if not timed:
        sys.exit("summarize: %s has no step after the %d warm-up steps"
                 % (path, warmup))
    step_ms = statistics.median(e["step_ms"] for e in timed)
    tokens = statistics.median(e.get("tokens_per_s", 0) for e in timed)
    mfu = [e["mfu"] for e in timed if "mfu" in e]
    line = "%-22s %9.0f tokens/s  %8.1f ms/step" % (label + ":", tokens, step_ms)
    line += ("  MFU %5.1f%%" % (100 * statistics.median(mfu))) if mfu \
        else "  MFU n/a (unknown GPU peak)"
    print(line + "  (median of %d steps, loss %.3f -> %.3f)"
          % (len(timed), steps[0]["loss"], steps[-1]["loss"]))


if __name__ == "__main__":
    main()
