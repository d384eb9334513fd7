#!/usr/bin/env bash
#===- demo.sh - Compile the example models and train them on real data ----===#
#
# The README's first command (`make demo`) runs this after the build:
#   1. every example model file is imported and verified, and the IR of the
#      MLP is printed;
#   2. the 8x8 digits that Debian's python3-sklearn ships become training and
#      validation files (tg-data csv), and examples/mlp.json is compiled and
#      trained on them;
#   3. the Python standard library's sources (real text from the python3.11
#      package) become byte-level token shards (tg-data text), and
#      examples/gpt2-tiny.json is compiled and trained on them: on the GPU
#      (bf16, --target=cuda) when nvidia-smi sees one and nvcc is here, else
#      on the CPU (TGC_DEMO_TARGET=cpu|cuda chooses);
#   4. it ends with the MLP's held-out accuracy and gpt2-tiny's first and
#      last validation loss.
# Everything it writes goes to $TGC_DEMO_DIR (default build/demo).
#
# Usage: scripts/demo.sh [BUILD_DIR]
#
#===----------------------------------------------------------------------===#
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
bin=$build/bin
work=${TGC_DEMO_DIR:-$build/demo}
threads=${TGC_THREADS:-$(nproc)}
mkdir -p "$work"
# OpenBLAS's kernels by what the CPU can do (its model may be masked).
source "$root/scripts/openblas-core.sh"

digits=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
text=/usr/lib/python3.11
for needed in "$digits" "$text"; do
  if [[ ! -e $needed ]]; then
    echo "demo: $needed is missing; run scripts/setup.sh (python3-sklearn, python3.11)" >&2
    exit 1
  fi
done

section() { printf '\n== %s ==\n' "$1"; }

section "Import and verify every example"
for model in "$root"/examples/*.json; do
  "$bin/tg-translate" --import-model "$model" > "$work/$(basename "$model" .json).mlir"
  echo "$(basename "$model"): $(grep -c ' = tg\.' "$work/$(basename "$model" .json).mlir") ops"
done
section "examples/mlp.json as tg IR"
cat "$work/mlp.mlir"

section "MLP on the 8x8 digits"
"$bin/tg-data" csv "$digits" -o "$work/digits" --val-fraction 0.2
"$bin/tgc" "$root/examples/mlp.json" -o "$work/mlp"
"$work/mlp" --data "$work/digits_train.tgcls" --val-data "$work/digits_val.tgcls" \
  --steps 300 --eval-every 100 --threads "$threads" --log "$work/mlp.jsonl" \
  | tee "$work/mlp.out"

target=${TGC_DEMO_TARGET:-}
if [[ -z $target ]]; then
  target=cpu
  if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1 &&
     { command -v nvcc > /dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; }; then
    target=cuda
  fi
fi
section "gpt2-tiny on the Python standard library's sources ($target)"
"$bin/tg-data" text "$text" --glob '*.py' --max-bytes 4000000 \
  --val-fraction 0.05 -o "$work/pytext"
"$bin/tgc" "$root/examples/gpt2-tiny.json" --target="$target" -o "$work/gpt2-tiny"
"$work/gpt2-tiny" --data "$work/pytext_train.bin" --val-data "$work/pytext_val.bin" \
  --steps 400 --eval-every 100 --eval-batches 32 --threads "$threads" \
  --log "$work/gpt2-tiny.jsonl" | tee "$work/gpt2-tiny.out"

section "Results"
grep '^accuracy:' "$work/mlp.out"
grep '^val_loss:' "$work/gpt2-tiny.out"
