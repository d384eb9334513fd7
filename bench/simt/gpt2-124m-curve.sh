#!/usr/bin/env bash
# GPT-2 124M's generated CUDA, at its real launch configurations, trained for
# STEPS steps on the host (tgc --target=cuda --simt) against the CPU
# executable from the same initial weights on the same batches: the loss
# curve in fp32 within 1e-4 relative at every step, in bf16 within 2e-2.
#
# `make test` runs this model for one batch only (gpt2-124m-emulation.test
# and its bf16 twin: loss and gradients): a step takes the host about 16 s,
# so the 20-step curves (about 7 minutes on 2 cores) run here, via
# `make cuda-curves`, and their figures go to bench/results.
#
# The model: one layer of GPT-2 124M (768 wide, 12 heads of 64, an MLP of
# 3072, a sequence of 1024), a micro-batch of 1 and a vocabulary of 8209 (the
# same remainder modulo 64 as 50257, so the same vectorized paths and 1024
# threads a row in the cross-entropy), so that every kernel of the step runs
# with the block shapes and shared memory it has in the 124M model. Warm-up
# of 2 steps at a learning rate of 6e-4, so that the 20 steps move the
# weights (the default warm-up would keep the learning rate near zero).
#
#   bench/simt/gpt2-124m-curve.sh [BUILD_DIR] [STEPS]   (build, 20)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
steps=${2:-20}
work=$(mktemp -d)
python=/usr/bin/python3
[[ -x $python ]] || python=python3
trap 'rm -rf "$work"' EXIT
tgc=$build/bin/tgc
[[ -x $tgc ]] || { echo "gpt2-124m-curve: no $tgc (run make build)" >&2; exit 1; }

"$python" "$here/test/Integration/Inputs/make_tokens.py" "$work/tokens.bin" \
  200000 8209 > /dev/null
"$python" "$here/examples/gen_gpt2.py" --preset 124m --layers 1 --batch 1 \
  --grad-accum 1 --vocab 8209 --warmup 2 --lr 6e-4 --steps "$steps" \
  -o "$work/gpt2-124m.json"

seconds() { date +%s.%N; }
t0=$(seconds)
"$tgc" "$work/gpt2-124m.json" -o "$work/cpu"
"$tgc" "$work/gpt2-124m.json" --target=cuda --simt --precision=fp32 -o "$work/fp32"
"$tgc" "$work/gpt2-124m.json" --target=cuda --simt --precision=bf16 -o "$work/bf16"
t1=$(seconds)

train() { # EXE NAME THREADS
  local start
  start=$(seconds)
  "$work/$1" --data "$work/tokens.bin" --init-from "$work/init.safetensors" \
    --no-shuffle --steps "$steps" --threads "$3" --log "$work/$2.jsonl" --quiet
  echo "$2: $steps steps in $("$python" -c "print('%.0f' % ($(seconds) - $start))") s"
}
"$work/cpu" --data "$work/tokens.bin" --steps 0 \
  --save-final "$work/init.safetensors" --quiet
train cpu cpu 2
# The two host CUDA runs side by side: each keeps about one core busy.
train fp32 fp32 1 > "$work/fp32.time" &
fp32=$!
train bf16 bf16 1 > "$work/bf16.time" &
bf16=$!
wait $fp32
wait $bf16
cat "$work/fp32.time" "$work/bf16.time"
echo "compiling the three executables: $("$python" -c "print('%.0f' % ($t1 - $t0))") s"

"$python" - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def losses(name):
    return {e["step"]: e["loss"] for e in map(json.loads, open(f"{work}/{name}.jsonl"))
            if "loss" in e}
cpu, runs = losses("cpu"), {"fp32": (losses("fp32"), 1e-4), "bf16": (losses("bf16"), 2e-2)}
print("step      cpu         fp32 (rel)           bf16 (rel)")
for s in sorted(cpu):
    row = f"{s:4d}  {cpu[s]:.6f}"
    for name, (log, _) in runs.items():
        v = log.get(s, float("nan"))
        row += f"   {v:.6f} ({abs(v - cpu[s]) / abs(cpu[s]):.1e})"
    print(row)
ok = True
for name, (log, rtol) in runs.items():
    worst = max(abs(log.get(s, float("inf")) - cpu[s]) / abs(cpu[s]) for s in cpu)
    agree = set(log) == set(cpu) and worst <= rtol
    ok &= agree
    print(f"{name}: {len(log)} steps, largest relative difference {worst:.2e} "
          f"(bound {rtol:g}): {'agrees' if agree else 'DIFFERS'}")
print(f"loss moved from {cpu[min(cpu)]:.4f} to {cpu[max(cpu)]:.4f}")
sys.exit(0 if ok else 1)
PY
