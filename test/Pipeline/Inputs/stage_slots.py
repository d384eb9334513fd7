"""Reads tgc --report=memory of pipelined plans: each stage's slot buffers
and arena.

stage_slots.py NONE FULL SELECTIVE: the slot buffers of stage 0 and 1
under full and selective recomputation as fractions of none's.
stage_slots.py --budget BYTES REPORT: whether each stage's slot buffers
and largest arena fit BYTES."""
import re
import sys

UNIT = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}


def stages(path):
    """Per stage: {'slot buffers': bytes, 'arena': bytes}."""
    out, stage = {}, None
    for line in open(path):
        m = re.match(r"stage (\d+): planned peak", line)
        if m:
            stage = int(m.group(1))
            out[stage] = {}
            continue
        m = re.match(r"  (slot buffers|arena)\s+([0-9.]+) ([kMG]?B)", line)
        if m and stage is not None:
            out[stage][m.group(1)] = float(m.group(2)) * UNIT[m.group(3)]
    return out


if sys.argv[1] == "--budget":
    budget = float(sys.argv[2])
    for s, m in sorted(stages(sys.argv[3]).items()):
        print("stage %d within the budget: %s (%.2f MB)" %
              (s, m["slot buffers"] + m["arena"] <= budget,
               (m["slot buffers"] + m["arena"]) / 1e6))
else:
    none, full, selective = (stages(p) for p in sys.argv[1:4])
    for s, bound in [(0, 0.2), (1, 1)]:
        r = full[s]["slot buffers"] / none[s]["slot buffers"]
        print("stage %d: full / none slot buffers below %g: %s (%.3f)" %
              (s, bound, r < bound, r))
    r = selective[0]["slot buffers"] / none[0]["slot buffers"]
    print("stage 0: selective / none slot buffers below 1: %s (%.3f)" %
          (r < 1, r))
