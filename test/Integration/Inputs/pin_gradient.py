"""Pins the gradient of one parameter that @forward_backward returns: first
whole, then a partial sum over an axis, so that tg-partition has to turn a
whole value into a partial sum (the first process keeps it, the others
hold zeros).

usage: pin_gradient.py IN.mlir OUT.mlir PARAM AXIS

IN is tgc's IR at the optimizer phase (a tg.mesh with AXIS in it)."""
import re
import sys

src, dst, param, axis = sys.argv[1:5]
text = open(src).read()
start = text.index("func.func @forward_backward(")
end = text.index("\n  }", start)
body = text[start:end]
# The results' attributes name the gradients: their position among the
# results is the position of the returned value.
signature = body[: body.index("{\n")]
results = signature[signature.rindex(") -> (") + 6:]
names = re.findall(r'tensor<[^>]*>(?: \{([^}]*)\})?', results)
index = next(i for i, attrs in enumerate(names)
             if f'tg.grad = "{param}"' in attrs)
ret = re.search(r"\n(\s*)return (.*) : (.*)$", body)
indent, values, types = ret.group(1), ret.group(2).split(", "), ret.group(3)
type_ = types.split(", ")[index]
rank = type_.count("x")
dims = ", ".join(["{}"] * rank)
value = values[index]
pins = (f'\n{indent}%whole_grad = tg.sharding_constraint {value} <@mesh, [{dims}]> : {type_}'
        f'\n{indent}%partial_grad = tg.sharding_constraint %whole_grad <@mesh, [{dims}], '
        f'partial = {{"{axis}"}}> : {type_}')
values[index] = "%partial_grad"
new_ret = f"{pins}\n{indent}return {', '.join(values)} : {types}"
body = body[: ret.start()] + new_ret + body[ret.end():]
open(dst, "w").write(text[:start] + body + text[end:])
