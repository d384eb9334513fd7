"""Compares tg-auto-shard's count of a pipelined plan's memory (peak_bytes
in tg.auto_shard, priced with price-current) with the compiled step's
estimate of the same plan (memory_bytes in tgc's --report-json), per
preset: argv is pairs of (priced IR, report JSON)."""
import json
import re
import sys

args = sys.argv[1:]
for ir, report in zip(args[0::2], args[1::2]):
    counted = int(re.search(r"peak_bytes = (\d+)", open(ir).read()).group(1))
    chosen = json.load(open(report))["chosen"]
    ratio = counted / chosen["memory_bytes"]
    print("%s: solver / compiled within 0.85..1.10: %s (%.3f)"
          % (chosen["plan"], 0.85 <= ratio <= 1.10, ratio))
