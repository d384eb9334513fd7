#!/usr/bin/env bash
# tg-remat judged by the step's peak, on GPT-2 124M (bf16, sequence 1024,
# micro-batch 8, as the CUDA target plans it): for peak budgets of 1/2,
# 1/3 and 1/5 of the planned peak without recomputation, and full's peak,
# what `tgc --memory-budget` chooses now (tg-remat by peak) beside what the
# search over tg-remat's activation budget chose before (the same scan and
# bisection, redone here with tg-opt, each try planned by tgc), and
# selective and full. Every row is the same IR of the same model; only
# tg-remat's choice changes. Planned peak: the executable's arena, the
# largest step function's #tg.arena after tg-plan-memory (CUDA rules:
# 256-byte alignment, attention statistics).
# FLOPs: tg::flopCount's.
#
#   bench/remat/peak.sh [BUILD_DIR]      (default: build)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$build/bin/tgc" "$build/bin/tg-opt" "$here" "$work" <<'PY'
import re, subprocess, sys, time
tgc, tgopt, root, work = sys.argv[1:5]
sys.path.insert(0, f"{root}/bench/remat")
from remat_ir import run, arena_peak as peak_of, remat_record
model = f"{root}/examples/gpt2-124m.json"

def compile_memory(*flags, source=model):
    out = f"{work}/mem.mlir"
    t = time.time()
    run(tgc, source, "--target=cuda", "--compile-to=memory", "--emit=mlir", "-o", out, *flags)
    text = open(out).read()
    return peak_of(text), remat_record(text) if "tg.remat" in text else None, time.time() - t

opt = f"{work}/opt.mlir"
run(tgc, model, "--target=cuda", "--compile-to=optimizer", "--emit=mlir",
    "--mlir-print-debuginfo", "-o", opt)

def by_activation_budget(kept):
    """tg-remat{activation-budget} then tgc to the plan: (peak, added FLOPs)."""
    out = f"{work}/remat.mlir"
    run(tgopt, opt, "--pass-pipeline=builtin.module(func.func(tg-remat{remat=auto "
        f"activation-budget={kept} solver=min-cut}}))", "-o", out)
    peak, r, _ = compile_memory(source=out)
    return peak, r("added_flops"), r

none_peak, _, _ = compile_memory()
full_peak, full, _ = compile_memory("--remat=full")
sel_peak, sel, _ = compile_memory("--remat=selective")
step = full("step_flops")
_, _, r0 = by_activation_budget(2**62)
kept_all, kept_least = int(r0("kept_bytes_before")), int(r0("min_kept_bytes"))

def before(budget):
    """The search tgc ran before: activation budgets from the least kept
    up (5), then bisection to keptAll/200, at most 16 tries; full where it
    fits at fewer FLOPs."""
    tries, found, fit, over = 0, None, kept_all, kept_all
    for i in range(4, -1, -1):
        kept = kept_least + (kept_all - kept_least) * i // 5
        peak, flops, _ = by_activation_budget(kept); tries += 1
        if peak <= budget:
            found, fit = (peak, flops), kept
            break
        over = kept
    while found and over - fit > max(kept_all // 200, 1 << 16) and tries < 15:
        mid = fit + (over - fit) // 2
        peak, flops, _ = by_activation_budget(mid); tries += 1
        if peak <= budget:
            found, fit = (peak, flops), mid
        else:
            over = mid
    if full_peak <= budget and (not found or full("added_flops") < found[1]):
        return full_peak, full("added_flops"), "full"
    return (*found, "auto") if found else (None, None, "does not fit")

print(f"GPT-2 124M, bf16, seq 1024, micro-batch 8 (CUDA plan): planned peak without "
      f"recomputation {none_peak / 1e9:.3f} GB; the step is {step / 1e12:.3f} TFLOP\n")
print("| peak budget | method | planned peak | FLOPs added | of the step | tries | tgc time |")
print("|---|---|---|---|---|---|---|")
def row(name, method, peak, flops, tries="-", secs=None):
    if peak is None:
        print(f"| {name} | {method} | does not fit | - | - | {tries} | - |")
        return
    print(f"| {name} | {method} | {peak / 1e9:.3f} GB | {flops / 1e9:.1f} GFLOP | "
          f"{100 * flops / step:.2f}% | {tries} | " + (f"{secs:.1f} s |" if secs else "- |"))
row("-", "none", none_peak, 0)
row("-", "selective", sel_peak, sel("added_flops"))
row("-", "full", full_peak, full("added_flops"))
for name, budget in (("1/2", none_peak // 2), ("1/3", none_peak // 3),
                     ("1/5", none_peak // 5), ("full's", full_peak)):
    label = f"{name} ({budget / 1e9:.3f} GB)"
    try:
        peak, r, secs = compile_memory(f"--memory-budget={budget}")
        text = open(f"{work}/mem.mlir").read()
        how = re.search(r'policy = "(\w+)"', text[text.index("@train_step"):]).group(1)
        row(label, f"by peak (now): {how}", peak, r("added_flops"), int(r("tries")), secs)
    except subprocess.CalledProcessError as e:
        msg = next(l for l in e.stderr.splitlines() if "error:" in l)
        msg = msg[msg.index("error:") + 7:]
        print(f"| {label} | by peak (now) | {msg} | | | | |")
    peak, flops, how = before(budget)
    row(label, f"by bytes kept (before): {how}", peak, flops)
PY

# The search (solver=min-cut, what a step of more than 10 moves gets)
# against every choice planned (solver=exact, what tgc's default runs on
# at most 10), where the moves are few enough to plan them all: the CNN
# (fp32, CPU rules; the MLP's peak is its gradients, nothing fits below
# 95%), @train_step, at budgets of 90% to 65% of its peak without
# recomputation.
python3 - "$build/bin/tgc" "$build/bin/tg-opt" "$here" "$work" <<'PY'
import subprocess, sys
tgc, tgopt, root, work = sys.argv[1:5]
sys.path.insert(0, f"{root}/bench/remat")
from remat_ir import run, remat_record

print("\n| model | peak budget | search (min-cut by peak) | every choice (exact) | FLOPs over the optimum |")
print("|---|---|---|---|---|")
for name in ("cnn",):
    opt = f"{work}/{name}-opt.mlir"
    run(tgc, f"{root}/examples/{name}.json", "--compile-to=optimizer", "--emit=mlir", "-o", opt)
    def choose(budget, solver):
        out = run(tgopt, opt, "--pass-pipeline=builtin.module(func.func(tg-remat{remat=auto "
                  f"peak-budget={budget} solver={solver} least-peak-over-budget=true}}))")
        r = remat_record(out)
        return r("planned_peak"), r("added_flops"), r("fits"), r("planned_peak_before"), r("step_flops")
    none = choose(1 << 62, "min-cut")[3]
    for frac in (0.9, 0.8, 0.75, 0.7, 0.65):
        budget = int(none * frac)
        cells = []
        got = {}
        for solver in ("min-cut", "exact"):
            peak, flops, fits, _, step = choose(budget, solver)
            fitted = fits
            got[solver] = (fitted, flops)
            cells.append((f"{int(peak)} B, {100 * flops / step:.2f}%" if fitted
                          else f"does not fit (least {int(peak)} B)"))
        if got["min-cut"][0] and got["exact"][0]:
            gap = f"{100 * (got['min-cut'][1] - got['exact'][1]) / max(got['exact'][1], 1):.1f}%"
        elif got["exact"][0]:
            gap = "the search does not fit"
        else:
            gap = "-"
        print(f"| {name} (without: {int(none)} B) | {frac:.0%} ({budget} B) | {cells[0]} | {cells[1]} | {gap} |")
PY
