#!/usr/bin/env bash
# The pipelined plans bench/sharding/scale.sh recommends at scale, built:
# tgc --target=cuda --emit=cuda writes each plan's CUDA program (every
# chunk's F, B and W and every stage's update a step program, the
# PipelineDesc tables), and --report=memory plans each stage. Per plan: the
# wall time of the emit, the .cu's size, its step programs, the device
# arena (the largest function's, now that a pipelined executable leaves
# the whole step's functions out), and per stage the parameters, optimizer
# state and gradient sums its device holds and its planned peak. nvcc is
# not run (a 10-15 MB source; the GPU machine compiles it), so the
# programs are emitted, not compiled.
#
#   bench/pipeline/emit-scale.sh [BUILD_DIR]     (default build)
#
# The plans (bench/results/scale-2026-11-27.md's "best" column, as
# --auto-shard found them there; here priced and planned with the presets
# Megatron-LM uses at the same mesh, so that the run needs no solver), and
# the first again with full recomputation (which reaches a pipeline's
# stages since tg-remat runs before tg-pipeline-split):
#   llama2-70b  data=32,tp=4 x pp=4 (20 virtual), micro-batch 1 x 64, megatron
#   gpt3-175b   data=16,tp=8 x pp=8 (12 virtual), micro-batch 2 x 64, megatron,
#               --remat=full
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
tgc=$build/bin/tgc
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=/usr/bin/python3
[[ -x $python ]] || python=python3
"$python" "$here/bench/sharding/gen_models.py" "$work" > /dev/null

plans=(
  "llama2-70b|llama2-70b|--mesh=data=32,tp=4 --pipeline-stages=4 --virtual-stages=20 --batch-size=1 --grad-accum=64 --shard=megatron"
  "llama2-70b-remat|llama2-70b|--mesh=data=32,tp=4 --pipeline-stages=4 --virtual-stages=20 --batch-size=1 --grad-accum=64 --shard=megatron --remat=full"
  "gpt3-175b|gpt3-175b|--mesh=data=16,tp=8 --pipeline-stages=8 --virtual-stages=12 --batch-size=2 --grad-accum=64 --shard=megatron --remat=full"
)
echo "| model | plan | emit (s) | .cu (MB) | step programs | device arena (GB) |"
echo "| --- | --- | --- | --- | --- | --- |"
for entry in "${plans[@]}"; do
  label=${entry%%|*}
  rest=${entry#*|}
  model=${rest%%|*}
  flags=${rest#*|}
  common=(--cluster=h100-sxm-8 --target=cuda $flags)
  start=$(date +%s.%N)
  # shellcheck disable=SC2068
  "$tgc" "$work/$model.json" ${common[@]} --emit=cuda -o "$work/$label" \
    > "$work/$label.log" 2>&1
  end=$(date +%s.%N)
  cu=$work/$label/$model.cu
  programs=$(grep -c "tgc::cuda::runStep(" "$cu")
  # Constants and intermediates (the manifest's arena_bytes).
  arena=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["arena_bytes"])' \
    "$work/$label/$model.manifest.json")
  printf "| %s | %s | %.1f | %.1f | %d | %.1f |\n" "$model" "$flags" \
    "$(echo "$end - $start" | bc)" \
    "$(echo "$(stat -c %s "$cu") / 1000000" | bc -l)" "$programs" \
    "$(echo "$arena / 1000000000" | bc -l)"
  # shellcheck disable=SC2068
  "$tgc" "$work/$model.json" ${common[@]} --report=memory \
    > "$work/$label.memory" 2>&1
done
for entry in "${plans[@]}"; do
  label=${entry%%|*}
  rest=${entry#*|}
  echo
  echo "$label (${rest#*|}), per stage (tgc --report=memory):"
  echo '```'
  grep -E "^pipelined|^stage [0-9]+:|its functions read|its update's|summed over the micro-batches|^  slot buffers|the largest of its functions" \
    "$work/$label.memory" || cat "$work/$label.memory"
  echo '```'
done
