#!/usr/bin/env python3
"""Checks that a training log's arena is the planned peak: the largest of
the step functions' arenas (@train_step, @forward_backward, @forward), which
the executable allocates once: arena_is_plan.py run.jsonl plan.mlir (tgc
--compile-to=memory)."""
import json
import re
import sys

arena = json.loads(open(sys.argv[1]).readline())["arena_bytes"]
text = open(sys.argv[2]).read()
planned = max(int(m) for m in re.findall(
    r"func\.func @\w+\(.*?tg\.arena = #tg\.arena<bytes = (\d+)", text))
print("arena equals the plan" if arena == planned else "DIFFERENT", arena, planned)
