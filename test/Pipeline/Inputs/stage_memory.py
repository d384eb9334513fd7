"""Compares tg-auto-shard's count of a pipelined plan's memory (peak_bytes
in tg.auto_shard, priced with price-current) with the same plan priced as
built (memory_bytes in tgc's --report-json: the fullest stage's), per
preset: argv is pairs of (priced IR, report JSON)."""
import json
import re
import sys

args = sys.argv[1:]
for ir, report in zip(args[0::2], args[1::2]):
    counted = int(re.search(r"peak_bytes = (\d+)", open(ir).read()).group(1))
    chosen = json.load(open(report))["chosen"]
    ratio = counted / chosen["memory_bytes"]
    print("%s: solver / built within 0.70..1.00: %s (%.3f)"
          % (chosen["plan"], 0.70 <= ratio <= 1.00, ratio))
