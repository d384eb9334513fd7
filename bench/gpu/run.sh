#!/usr/bin/env bash
#===- run.sh - GPT-2 124M training throughput on one GPU: tgc vs PyTorch ---===#
#
# One command on a GPU node (see README.md):
#
#   bench/gpu/run.sh [--steps N] [--warmup N] [--batch B] [--accum K]
#                    [--from DIR] [--work DIR] [--cuda-graph] [--no-torch]
#
# 1. Builds tgc's CUDA executable of examples/gpt2-124m.json in bf16
#    (micro-batch B, default the example's 8; sequence 1024):
#     - with tgc when there is one ($TGC, tgc on PATH, or build*/bin/tgc in
#       this checkout), or
#     - with CMake from a folder `tgc --emit=cuda` wrote elsewhere (--from
#       DIR, default bench/gpu/gpt2-124m-cuda when it exists): for a machine
#       with nvcc but no LLVM. Its runtime is this checkout's runtime/.
# 2. Writes a synthetic token shard and trains N steps after W warm-up steps
#    (K micro-batches of B x 1024 tokens per step, default 1).
# 3. Prints tokens/s, step time and MFU, the medians over the steps after the
#    warm-up; then, when PyTorch imports and sees the GPU, the same model in
#    PyTorch eager and with torch.compile (torch_gpt2.py), one line each.
#
# Nothing is written under bench/results/: the numbers go to stdout (and the
# logs to the --work folder, default $TMPDIR/tgc-bench-gpu).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/bench/gpu

steps=20
warmup=5
batch=
accum=1
from=
work=${TMPDIR:-/tmp}/tgc-bench-gpu
graph=
torch=1
usage() { sed -n '4,7p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --accum) accum=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --cuda-graph) graph=--cuda-graph; shift ;;
    --no-torch) torch=; shift ;;
    -h|--help) usage 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage 1 ;;
  esac
done
mkdir -p "$work"
python=${PYTHON:-python3}
log() { echo "bench: $*" >&2; }

# tgc, if this machine has one.
tgc=${TGC:-}
if [[ -z $tgc && -z $from ]]; then
  tgc=$(command -v tgc || true)
  if [[ -z $tgc ]]; then
    for candidate in "$root"/build*/bin/tgc; do
      [[ -x $candidate ]] && { tgc=$candidate; break; }
    done
  fi
fi

seq=1024
if [[ -n $tgc && -z $from ]]; then
  model=$root/examples/gpt2-124m.json
  if [[ -n $batch && $batch != 8 ]]; then
    # Batch and sequence are baked into the model's shapes: regenerate it.
    model=$work/gpt2-124m-b$batch.json
    "$python" "$root/examples/gen_gpt2.py" --preset 124m --batch "$batch" -o "$model"
  fi
  batch=${batch:-8}
  exe=$work/gpt2-124m
  log "compiling $model with $tgc (bf16, micro-batch $batch x $seq)"
  "$tgc" "$model" --target=cuda --precision=bf16 -o "$exe"
else
  dir=${from:-$here/gpt2-124m-cuda}
  if [[ ! -f $dir/CMakeLists.txt ]]; then
    echo "run.sh: no tgc here and no emitted folder at $dir." >&2
    echo "  Where tgc is built:  tgc examples/gpt2-124m.json --emit=cuda -o bench/gpu/gpt2-124m-cuda" >&2
    echo "  then bring that folder here (or pass --from DIR)." >&2
    exit 1
  fi
  manifest=$(ls "$dir"/*.manifest.json | head -n 1)
  built=$("$python" -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['training']['batch_size'], m['training']['seq_len'], m['model'], m['precision'])" "$manifest")
  read -r dir_batch seq name precision <<< "$built"
  if [[ -n $batch && $batch != "$dir_batch" ]]; then
    echo "run.sh: $dir was compiled for micro-batch $dir_batch, not --batch $batch (re-emit it)" >&2
    exit 1
  fi
  batch=$dir_batch
  log "building $dir ($name, $precision, micro-batch $batch x $seq) with CMake against $root/runtime"
  cmake -S "$dir" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
    -DTGC_RUNTIME_ROOT="$root" > "$work/cmake-configure.log"
  cmake --build "$work/build" -j "$(nproc)" > "$work/cmake-build.log"
  exe=$work/build/$name
fi

# Data: enough tokens for every step, never wrapping.
per_step=$((batch * accum * seq))
tokens=$(((steps + warmup + 2) * per_step + 1))
log "writing $tokens synthetic tokens"
"$python" "$here/make_shard.py" "$work/tokens.bin" "$tokens" 50257

log "training $((warmup + steps)) steps of $((batch * accum)) x $seq tokens"
"$exe" --data "$work/tokens.bin" --batch-size $((batch * accum)) \
  --steps $((warmup + steps)) --no-shuffle --log "$work/tgc.jsonl" --quiet $graph
label="tgc${graph:+ (CUDA graph)}"
"$python" "$here/summarize.py" "$work/tgc.jsonl" "$warmup" "$label"

if [[ -n $torch ]]; then
  if "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
    if [[ $accum != 1 ]]; then
      log "PyTorch runs one micro-batch per step: compare with --accum 1"
    fi
    for mode in eager compile; do
      "$python" "$here/torch_gpt2.py" --mode $mode --batch "$batch" \
        --seq "$seq" --steps "$steps" --warmup "$warmup"
    done
  else
    log "PyTorch with CUDA is not importable by $python: no PyTorch lines"
  fi
fi
