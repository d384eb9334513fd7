"""Checks that every parameter and optimizer state of a repeated layer
(`h.N.*`) has the sharding tg-auto-shard chose for the same one of layer 0.
Prints how many were checked against layer 0 (and how many layers), or the
first that differs (and exits 1)."""
import re
import sys

text = open(sys.argv[1]).read()
step = text[text.index("func.func @train_step("):]
step = step[:step.index(") -> (")]
arg = re.compile(r'tg\.(?:param|state) = "([^"]+)", tg\.sharding = '
                 r'(#tg\.sharding<[^>]*>)')
by_role = {}
layers = set()
for name, sharding in arg.findall(step):
    m = re.match(r'^(\w+)\.(\d+)\.(.*)$', name)
    if not m:
        continue
    role = (m.group(1), m.group(3))
    layers.add(int(m.group(2)))
    by_role.setdefault(role, {})[int(m.group(2))] = sharding
checked = 0
for role, per_layer in sorted(by_role.items()):
    first = per_layer[min(per_layer)]
    for layer, sharding in sorted(per_layer.items()):
        if sharding != first:
            print(f"{role[0]}.{layer}.{role[1]}: {sharding}, but "
                  f"{role[0]}.{min(per_layer)}.{role[1]}: {first}")
            sys.exit(1)
        checked += 1
print(f"layers alike: {checked} parameters and states in {len(layers)} layers")
