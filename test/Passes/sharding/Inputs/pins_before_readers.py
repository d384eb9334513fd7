"""Checks that each tg.sharding_constraint tg-auto-shard wrote for a reader
("solver: as OP reads it") stands just before that reader: the next op that
is not such a pin reads its result. Prints how many pins were checked, or
the first pin out of place (and exits 1)."""
import re
import sys

lines = open(sys.argv[1]).read().splitlines()
pin = re.compile(r'^\s*(%[\w#]+) = tg\.sharding_constraint .*solver: as (\S+) reads it')
checked = 0
for i, line in enumerate(lines):
    m = pin.match(line)
    if not m:
        continue
    value, reader = m.group(1), m.group(2)
    j = i + 1
    while j < len(lines) and pin.match(lines[j]):
        j += 1
    nxt = lines[j] if j < len(lines) else ""
    if reader not in nxt or not re.search(re.escape(value) + r'\b', nxt):
        print(f"line {i + 1}: {value} pinned for {reader}, but the next op "
              f"is: {nxt.strip()}")
        sys.exit(1)
    checked += 1
print(f"pins {checked}, each just before its reader")
