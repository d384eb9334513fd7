#!/usr/bin/env bash
# tg-remat on GPT-2 124M (bf16, sequence 1024, micro-batch 8, as the CUDA
# target plans it) and the solve time on 96 layers of GPT-3 175B's shapes:
# for each policy and activation budget (1/2, 1/3, 1/5 of what the
# backward reads without recomputation, and full's), the activation bytes
# kept, the planned peak, the FLOPs added (tg::flopCount, % of the step's)
# and the solve time, with the min-cut and with CBC's exact optimum side by
# side. Then real runs of gpt2-tiny on this CPU for each policy: the arena
# the executable allocates and the median step time.
#
#   bench/remat/run.sh [BUILD_DIR]      (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
tgc=$build/bin/tgc
tgopt=$build/bin/tg-opt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$tgc" "$tgopt" "$here" "$work" <<'PY'
import json, re, statistics, subprocess, sys, time
tgc, tgopt, root, work = sys.argv[1:5]
sys.path.insert(0, f"{root}/bench/remat")
from remat_ir import run, step_peak as peak_of, remat_record as record

model = f"{root}/examples/gpt2-124m.json"
opt = f"{work}/gpt2.mlir"
run(tgc, model, "--target=cuda", "--compile-to=optimizer", "--emit=mlir",
    "--mlir-print-debuginfo", "-o", opt)

def remat(options):
    """tg-remat with `options`, then through tg-plan-memory: (record, peak)."""
    out = f"{work}/remat.mlir"
    t = time.time()
    run(tgopt, opt, "--pass-pipeline=builtin.module(func.func(tg-remat{%s}))" % options,
        "-o", out)
    wall = time.time() - t
    mem = f"{work}/mem.mlir"
    run(tgc, out, "--target=cuda", "--compile-to=memory", "--emit=mlir", "-o", mem)
    return record(open(out).read()), peak_of(open(mem).read()), wall

none_peak = peak_of(run(tgc, model, "--target=cuda", "--compile-to=memory", "--emit=mlir"))
full, full_peak, _ = remat("remat=full")
before = full("kept_bytes_before")
step = full("step_flops")
print(f"GPT-2 124M, bf16, seq 1024, micro-batch 8 (CUDA plan): the backward reads "
      f"{before / 1e9:.3f} GB of activations; the step is {step / 1e12:.3f} TFLOP "
      f"(tg::flopCount); planned peak without recomputation {none_peak / 1e9:.3f} GB\n")
print("| policy | solver | activations kept | less | planned peak | FLOPs added | of the step | solve |")
print("|---|---|---|---|---|---|---|---|")
def row(name, solver, r, peak):
    kept = r("kept_bytes")
    print(f"| {name} | {solver} | {kept / 1e9:.3f} GB | {before / max(kept, 1):.2f}x | "
          f"{peak / 1e9:.3f} GB | {r('added_flops') / 1e9:.1f} GFLOP | "
          f"{100 * r('added_flops') / step:.2f}% | {r('solve_seconds'):.3f} s |")
print(f"| none | - | {before / 1e9:.3f} GB | 1.00x | {none_peak / 1e9:.3f} GB | 0 | 0.00% | - |")
sel, sel_peak, _ = remat("remat=selective")
row("selective", "-", sel, sel_peak)
row("full", "-", full, full_peak)
budgets = [("auto 2x", before / 2), ("auto 3x", before / 3), ("auto 5x", before / 5),
           ("auto at full's bytes", full("kept_bytes"))]
for name, budget in budgets:
    for solver in ("min-cut", "exact"):
        r, peak, _ = remat(f"remat=auto activation-budget={int(budget)} solver={solver}")
        row(name, solver, r, peak)

# 96 layers of GPT-3 175B: d 12288, 96 heads, sequence 2048, micro-batch 1.
big = f"{work}/gpt3.json"
run("python3", f"{root}/examples/gen_gpt2.py", "--preset", "124m", "--name", "gpt3-shapes",
    "--layers", "96", "--heads", "96", "--d", "12288", "--ctx", "2048", "--seq", "2048",
    "--batch", "1", "-o", big)
opt = f"{work}/gpt3.mlir"
run(tgc, big, "--target=cuda", "--compile-to=optimizer", "--emit=mlir", "--mlir-print-debuginfo",
    "-o", opt)
print()
print("| 96 layers of GPT-3 175B shapes (seq 2048, micro-batch 1, bf16) | activations kept | less | FLOPs added | solve (tg-remat) |")
print("|---|---|---|---|---|")
base = None
for name, frac in (("auto 3x", 3), ("auto 5x", 5), ("auto 10x", 10), ("auto 20x", 20)):
    out = f"{work}/gpt3-remat.mlir"
    if base is None:
        run(tgopt, opt, "--pass-pipeline=builtin.module(func.func(tg-remat{remat=full}))", "-o", out)
        base = record(open(out).read())("kept_bytes_before")
    run(tgopt, opt, "--pass-pipeline=builtin.module(func.func(tg-remat{remat=auto "
        f"activation-budget={int(base / frac)} solver=min-cut}}))", "-o", out)
    r = record(open(out).read())
    print(f"| {name}, min-cut | {r('kept_bytes') / 1e9:.2f} GB of {base / 1e9:.2f} GB | "
          f"{base / r('kept_bytes'):.2f}x | {100 * r('added_flops') / r('step_flops'):.2f}% | "
          f"{r('solve_seconds'):.2f} s |")

# --batch-size=auto for an 80 GB device (H100), global batch 512.
print()
print("| GPT-2 124M, --batch-size=auto --device-memory=80GB --target=cuda | chosen |")
print("|---|---|")
for name, flags in (("remat none", []), ("remat selective", ["--remat=selective"]),
                    ("remat full", ["--remat=full"]), ("remat auto", ["--remat=auto"])):
    out = subprocess.run([tgc, model, "--target=cuda", "--batch-size=auto", "--device-memory=80GB",
                          "--compile-to=memory", "--emit=mlir", "-o", f"{work}/b.mlir", *flags],
                         check=True, capture_output=True, text=True).stderr
    why = re.search(r"--batch-size=auto: (.*)", out).group(1)
    print(f"| {name} | {why} |")

# Real runs: gpt2-tiny on this CPU, 30 steps per policy.
tokens = f"{work}/tokens.bin"
run("/usr/bin/python3", f"{root}/test/Integration/Inputs/make_tokens.py", tokens, "40000", "256")
print()
print("| gpt2-tiny, CPU fp32 | arena (executable) | median step | final loss (30 steps) |")
print("|---|---|---|---|")
for name, flags in (("none", []), ("selective", ["--remat=selective"]), ("full", ["--remat=full"]),
                    ("auto, --memory-budget=15MB", ["--memory-budget=15MB"])):
    exe = f"{work}/tiny"
    run(tgc, f"{root}/examples/gpt2-tiny.json", "-o", exe, *flags)
    log = f"{work}/tiny.jsonl"
    run(exe, "--data", tokens, "--steps", "30", "--threads", "2", "--log", log, "--quiet")
    lines = [json.loads(l) for l in open(log)]
    arena = lines[0]["arena_bytes"]
    steps = [l["step_ms"] for l in lines if "step_ms" in l][5:]
    loss = [l["loss"] for l in lines if "loss" in l][-1]
    print(f"| {name} | {arena / 1e6:.2f} MB | {statistics.median(steps):.1f} ms | {loss:.7g} |")
PY
