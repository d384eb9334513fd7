#!/usr/bin/env python3
"""Checks that a training log's arena is @train_step's planned peak:
arena_is_plan.py run.jsonl plan.mlir (tgc --compile-to=memory)."""
import json
import re
import sys

arena = json.loads(open(sys.argv[1]).readline())["arena_bytes"]
text = open(sys.argv[2]).read()
step = text[text.index("func.func @train_step"):]
planned = int(re.search(r"tg\.arena = #tg\.arena<bytes = (\d+)", step).group(1))
print("arena equals the plan" if arena == planned else "DIFFERENT", arena, planned)
