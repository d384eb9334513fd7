"""Checks tgc --pipeline-stages=auto's choice (argv: its stderr, the IR it
wrote): the chosen candidate is the one with the fastest step among those
with a plan, and the IR's mesh (its axis pp included) is the chosen one's."""
import re
import sys

steps, chosen = {}, None
for line in open(sys.argv[1]):
    m = re.match(r"tgc: --pipeline-stages=auto: (\S+?),? (?:(\d+) chunks? a "
                 r"stage, )?\d+ micro-batches: .*step ([0-9.]+) ms", line)
    if m:
        steps[(m.group(1).rstrip(","), int(m.group(2) or 1))] = float(m.group(3))
    m = re.match(r"tgc: --pipeline-stages=auto: chose (\S+)(?: with (\d+) "
                 r"chunks? a stage)?", line)
    if m:
        chosen = (m.group(1), int(m.group(2) or 1))
fastest = min(steps, key=steps.get)
print("the fastest candidate:", chosen == fastest, chosen, fastest)
ir = open(sys.argv[2]).read()
axes = re.search(r'tg.mesh @mesh \[([^]]*)\]', ir).group(1)
mesh = ",".join("%s=%s" % (n, s) for n, s in
                re.findall(r'"(\w+)" = (\d+)', axes))
virtual = re.search(r"virtual_stages = (\d+)", ir)
print("the IR's mesh is the choice's:",
      (mesh, int(virtual.group(1)) if virtual else 1) == chosen, mesh)
