#!/usr/bin/env bash
# Per-process memory of GPT-2 124M's partitioned training step at 8 ranks,
# as tgc plans it (--report=memory; compile time only, no GPU or MPI):
# ZeRO-0 (dp), ZeRO-1, ZeRO-2, ZeRO-3 on --mesh=data=8 and Megatron-style
# tensor parallelism on --mesh=tp=8 and on --mesh=data=2,tp=4, all with
# --grad-accum 2 so that the gradients are a buffer of their own (the
# accumulators). For each: the
# bytes of parameters, accumulated gradients and optimizer state per rank,
# their sum per parameter of the model, beside the ZeRO paper's figures for
# mixed-precision Adam (Rajbhandari et al. 2020: 2 + 2 + 12 bytes/param) and
# the figure our layout should give at N = 8, and the arena (activations and
# temporaries). Then the collectives in each partitioned step, all-gathers
# split into parameters and activations/inputs. Once for --target=cpu
# (fp32) and once for --target=cuda --precision=bf16 (when it compiles).
#
#   bench/sharding/memory.sh [BUILD_DIR]      (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
tgc=$build/bin/tgc

python3 - "$tgc" "$here" <<'PY'
import json, re, subprocess, sys
tgc, root = sys.argv[1:3]
model = f"{root}/examples/gpt2-124m.json"
N = 8
param_names = {p["name"] for p in json.load(open(model))["params"]}

STRATEGIES = [  # name, flags, textbook bytes/param (mixed-precision Adam), ours
    ("ZeRO-0 (dp)", ["--mesh=data=8", "--shard=dp"], 16, 4 + 4 + 8),
    ("ZeRO-1", ["--mesh=data=8", "--shard=zero1"], 4 + 12 / N, 4 + 4 + 8 / N),
    ("ZeRO-2", ["--mesh=data=8", "--shard=zero2"], 2 + 14 / N, 4 + (4 + 8) / N),
    ("ZeRO-3", ["--mesh=data=8", "--shard=zero3"], 16 / N, 16 / N),
    ("TP", ["--mesh=tp=8", "--shard=tp"], 16 / N, 16 / N),
    # GPT-2 124M's 12 heads do not divide over 8, so TP 8 cannot split the
    # attention by heads (Megatron-LM requires it); over 4 they do.
    ("TP 4 x DP 2", ["--mesh=data=2,tp=4", "--shard=tp"], 16 / 4, 16 / 4),
]
TARGETS = [("cpu (fp32)", []), ("cuda, bf16", ["--target=cuda", "--precision=bf16"])]
UNITS = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
ELEMENT = {"f32": 4, "bf16": 2, "f16": 2, "f64": 8}

def tgc_run(*args):
    return subprocess.run([tgc, model, "--grad-accum", "2", *args], capture_output=True, text=True)

def train_step_report(text):
    """The @train_step section of --report=memory: {category: bytes}."""
    section = text[text.index("@train_step:"):]
    section = section[:section.find("\n\n")] if "\n\n" in section else section
    out = {"arena": float(re.search(r"arena ([\d.]+) (\w+)", section).group(1)) *
           UNITS[re.search(r"arena [\d.]+ (\w+)", section).group(1)]}
    for line in section.splitlines()[1:]:
        m = re.match(r"\s+(\S.*?)\s{2,}([\d.]+) (\w+)", line)
        if m:
            out[m.group(1)] = float(m.group(2)) * UNITS[m.group(3)]
    return out

def param_element_bytes(flags):
    """Bytes per element of the @train_step arguments that are parameters."""
    ir = subprocess.run([tgc, model, "--grad-accum", "2", *flags, "--compile-to=memory",
                         "--emit=mlir"], check=True, capture_output=True, text=True).stdout
    sig = ir[ir.index("func.func @train_step"):]
    sig = sig[:sig.index("\n")]
    types = set(re.findall(r"tensor<[\dx]*x(\w+)> \{[^}]*tg\.param = ", sig))
    assert len(types) == 1, f"parameters of several element types: {types}"
    return ELEMENT[types.pop()], sorted(set(re.findall(r"tensor<[\dx]*x(\w+)>", sig)))

def collectives(flags):
    """Tensors moved by each kind of collective in the partitioned step (a
    variadic tg.all_reduce counts each of its operands); all-gathers by what
    they gather: parameters (their bf16 copies, or updated parameter pieces),
    batch inputs, or activations."""
    ir = subprocess.run([tgc, model, "--grad-accum", "2", *flags, "--compile-to=partition",
                         "--emit=mlir"], check=True, capture_output=True, text=True).stdout
    count = dict.fromkeys(["all_reduce", "reduce_scatter", "all_slice", "gather param",
                           "gather input", "gather activation"], 0)
    batch = "-"
    for line in ir.splitlines():
        m = re.match(r"\s*%[\w.]+(?::(\d+))? = tg\.(all_reduce|reduce_scatter|all_gather|all_slice) ",
                     line)
        if not m:
            continue
        n, kind = int(m.group(1) or 1), m.group(2)
        if kind == "all_gather":
            reshard = re.search(r'tg\.reshard = "([^"]*)"', line)
            subject = reshard.group(1).split(" for ")[0] if reshard else ""
            cast_of = re.fullmatch(r"tg\.cast \((.*)\)", subject)  # a bf16 copy
            if (subject in param_names or subject.startswith("tg.optimizer_update") or
                    (cast_of and cast_of.group(1) in param_names)):
                kind = "gather param"
            elif subject in ("idx", "targets"):
                kind = "gather input"
                if subject == "idx":
                    batch = " -> ".join(re.findall(r"tensor<[^>]*>", line)[-2:])
            else:
                kind = "gather activation"
        count[kind] += n
    return count, batch

def fmt(b):
    return f"{b / 1e6:.2f} MB" if b < 1e9 else f"{b / 1e9:.2f} GB"

for target, tflags in TARGETS:
    probe = tgc_run(*tflags, *STRATEGIES[0][1], "--report=memory")
    if probe.returncode != 0:
        print(f"## {target}: tgc failed (exit {probe.returncode})\n\n```\n{probe.stderr}```\n")
        continue
    elem, arg_types = param_element_bytes(tflags + STRATEGIES[0][1])
    base = train_step_report(probe.stdout)
    nparams = base["parameters"] / elem
    print(f"## {target}\n")
    print(f"Parameter count: {base['parameters'] / 1e6:.2f} MB of parameters at ZeRO-0 / "
          f"{elem} B per element = {nparams / 1e6:.2f} M. Element types of @train_step's "
          f"arguments: {', '.join(arg_types)}.\n")
    print("| strategy | parameters | gradients (accum.) | optimizer state | sum | bytes/param | "
          "ZeRO paper (mixed-precision Adam) | our layout, expected | measured / expected | "
          "arena (activations and temporaries) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for name, flags, textbook, ours in STRATEGIES:
        r = tgc_run(*tflags, *flags, "--report=memory")
        if r.returncode != 0:
            print(f"| {name} | tgc failed (exit {r.returncode}): "
                  f"{r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''} |||||||||")
            continue
        rep = train_step_report(r.stdout)
        p, g, o = rep["parameters"], rep.get("accumulated gradients", 0), rep["optimizer state"]
        per = (p + g + o) / nparams
        print(f"| {name} | {fmt(p)} | {fmt(g)} | {fmt(o)} | {fmt(p + g + o)} | {per:.3f} | "
              f"{textbook:.3f} | {ours:.3f} | {per / ours:.3f} | {fmt(rep['arena'])} "
              f"({fmt(rep['activations and temporaries'])}) |")
        rows.append((name, flags))
    print()
    print("| strategy | all-gathers: parameters | batch inputs | activations | "
          "reduce-scatters | all-reduces (tensors) | all-slices | the batch input `idx` gathered |")
    print("|---|---|---|---|---|---|---|---|")
    for name, flags in rows:
        c, batch = collectives(tflags + flags)
        print(f"| {name} | {c['gather param']} | {c['gather input']} | {c['gather activation']} | "
              f"{c['reduce_scatter']} | "
              f"{c['all_reduce']} | {c['all_slice']} | {batch} |")
    print()
PY
