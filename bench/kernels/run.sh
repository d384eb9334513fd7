#!/usr/bin/env bash
#===- run.sh - Kernels and non-GEMM bytes per GPT-2 124M step ---------------===#
#
# What one training step of GPT-2 124M (bf16, sequence 1024, micro-batch 8)
# launches on a GPU, from the IR and the CUDA emitter alone (no GPU needed):
# GEMM launches, other kernel launches, all-reduce buckets, and the bytes the
# non-GEMM kernels read and write (each tensor once per launch, from the
# emitter's launch list). Fusion lowers the last three; the goal is every
# activation written once and read once per use. Also the CPU target's step
# under --fusion=none and the default: top-level ops and tg.kernel ops of
# @train_step after tg-fuse.
#
#   bench/kernels/run.sh [--build DIR] [--batch 8] [--seq 1024]
#
# Builds nothing: point --build at a build directory (default build/).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
batch=8
seq=1024
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --seq) seq=$2; shift 2 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
tgc=$build/bin/tgc
[[ -x $tgc ]] || { echo "run.sh: no $tgc; build first (make build)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/examples/gen_gpt2.py" --preset 124m --batch "$batch" \
  --seq "$seq" --precision bf16 -o "$work/gpt2.json"

"$tgc" "$work/gpt2.json" --emit=cuda --precision=bf16 -o "$work/cuda" >/dev/null
cu=$work/cuda/gpt2.cu
echo "GPT-2 124M, bf16, micro-batch $batch, sequence $seq, @train_step on CUDA"
echo "commit $(git -C "$root" rev-parse --short HEAD), $(date -u +%Y-%m-%d)"
sed -n '/^\/\/ Launches per step/,/^\/\/$/p' "$cu" | sed '$d'
grep -m1 'total kFlopsPerStep' "$cu" | sed 's|^//  *|// |'
grep -m1 '^/// .* launches, .* bytes of arena' "$cu" | sed 's|^/// |// @train_step: |'

echo
echo "CPU target (fp32), @train_step after tg-fuse:"
printf '%-12s %10s %10s\n' fusion "top ops" kernels
for rules in none elementwise all; do
  "$tgc" "$work/gpt2.json" --precision=fp32 --fusion=$rules \
    --compile-to=fusion --emit=mlir -o "$work/fused-$rules.mlir"
  awk '/func.func @train_step/ {on = 1; depth = 0; next}
       on && /^  }$/ {exit}
       on {
         # Top-level ops only: lines at the function body indentation.
         if ($0 ~ /^    [%a-z"]/ && $0 !~ /^    return/) ops++
         if ($0 ~ /^    .*tg\.kernel /) kernels++
       }
       END {printf "%d %d\n", ops, kernels}' "$work/fused-$rules.mlir" |
    { read -r ops kernels; printf '%-12s %10s %10s\n' "$rules" "$ops" "$kernels"; }
done
