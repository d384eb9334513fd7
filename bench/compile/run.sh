#!/usr/bin/env bash
#===- run.sh - Compile time against model depth ---------------------------===#
#
# Times `tgc --emit=cpp` and `tgc --emit=cuda` (IR passes and emitter, no
# host compiler) on GPT-2 124M-shaped model files of 2 to 384 layers
# (examples/gen_gpt2.py --preset 124m --layers N) and prints, per emitter,
# the seconds, the seconds per added layer and that figure over its value at
# 12 layers: a flat last column is compile time linear in depth (issue 13).
# Each time is the median of --runs runs (default 11; 5 from 96 layers on,
# 3 at 384).
# --host-build also times the CPU executable's build, `tgc model.json -o
# EXE` (the passes, the units, c++ -O3 on them side by side, the link),
# once per size at --host-layers (default 2 12 48 96): cold (an empty build
# cache of its own), warm (the same build again), and with every layer
# inline and no cache (--outline-layers=false; skipped above --flat-layers,
# default 48, where it takes minutes).
# --cuda-build times the CUDA executable's build with nvcc, `tgc model.json
# --target=cuda -o EXE` (the passes, the .cu, nvcc -O3 for sm_90 and the
# link), at --host-layers: cold (an empty build cache), warm (the same
# build again: the .cu's object from the cache, then the link), and with
# every layer inline and no cache (--outline-layers=false, up to
# --flat-layers). Needs nvcc and the CUDA runtime built (no GPU).
# --step-time runs the two executables of gpt2-tiny (batch 16) and of GPT-2
# 124M shapes (12 layers, batch 4, sequence 128, as bench/cpu) side by side,
# --step-rounds rounds (default 3) of 4 steps each, alternating, and prints
# each one's median step_ms and their ratio.
# Builds nothing: point --build at a build directory (default build/).
#
#   bench/compile/run.sh [--build DIR] [--layers "2 12 24 48 96 192 384"]
#                        [--runs N] [--host-build] [--host-layers "2 12 48 96"]
#                        [--flat-layers N] [--cuda-build] [--step-time]
#                        [--step-rounds N]
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
layers="2 12 24 48 96 192 384"
runs=""
host_build=0
cuda_build=0
host_layers="2 12 48 96"
flat_layers=48
step_time=0
step_rounds=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --layers) layers=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --host-build) host_build=1; shift ;;
    --cuda-build) cuda_build=1; shift ;;
    --host-layers) host_layers=$2; shift 2 ;;
    --flat-layers) flat_layers=$2; shift 2 ;;
    --step-time) step_time=1; shift ;;
    --step-rounds) step_rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
tgc=$build/bin/tgc
[[ -x $tgc ]] || { echo "run.sh: no $tgc; build first (make build) or pass --build DIR" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

model() { # N -> the model file of N layers
  local file=$work/gpt2-$1.json
  [[ -f $file ]] || python3 "$root/examples/gen_gpt2.py" --preset 124m \
    --layers "$1" --name "gpt2-$1l" -o "$file"
  echo "$file"
}

seconds() { # command... -> wall seconds
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null
  end=$(date +%s%N)
  awk -v ns=$((end - start)) 'BEGIN { printf "%.4f\n", ns / 1e9 }'
}

median() { # numbers... -> their median
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
    END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

runs_for() { # N -> runs: the small sizes' differences are a few ms
  if [[ -n $runs ]]; then echo "$runs"
  elif (( $1 >= 384 )); then echo 3
  elif (( $1 >= 96 )); then echo 5
  else echo 11; fi
}

# One row per size: layers, then seconds per emitter.
table=$work/table
: > "$table"
for n in $layers; do
  file=$(model "$n")
  cpp=() cuda=()
  for ((r = 0; r < $(runs_for "$n"); ++r)); do
    cpp+=("$(seconds "$tgc" "$file" --emit=cpp -o "$work/step.cpp")")
    rm -rf "$work/cuda"
    cuda+=("$(seconds "$tgc" "$file" --emit=cuda -o "$work/cuda")")
  done
  echo "$n $(median "${cpp[@]}") $(median "${cuda[@]}")" >> "$table"
done

# s/layer is the cost of the layers added since the previous size,
# (t(N) - t(prev)) / (N - prev), as issue 13 measures it: the fixed cost of
# starting tgc drops out. "vs 12" is that over its value at 12 layers (the
# second size when 12 is not run); the spread is the largest over the
# smallest of those from 12 layers on.
report() { # title, columns (name:field of the table) ...
  echo "$1"
  shift
  awk -v names="$*" '
    BEGIN { k = split(names, col, " ")
            printf "%6s", "layers"
            for (c = 1; c <= k; ++c) { split(col[c], nf, ":")
              printf "  %8s %8s %6s", nf[1] " s", "s/layer", "vs 12" }
            print "" }
    { rows[NR] = $0 }
    END {
      for (c = 1; c <= k; ++c) { split(col[c], nf, ":"); f[c] = nf[2] + 1 }
      base = 2
      for (i = 2; i <= NR; ++i) { split(rows[i], v, " "); if (v[1] == 12) base = i }
      for (i = 1; i <= NR; ++i) {
        split(rows[i], v, " ")
        printf "%6d", v[1]
        for (c = 1; c <= k; ++c) {
          if (i == 1) { printf "  %8.3f %8s %6s", v[f[c]], "-", "-"; continue }
          split(rows[i - 1], p, " ")
          per[i, c] = (v[f[c]] - p[f[c]]) / (v[1] - p[1])
          printf "  %8.3f %8.4f", v[f[c]], per[i, c]
          if (i < base) { printf " %6s", "-"; continue }
          ratio = per[i, c] / per[base, c]
          printf " %6.2f", ratio
          if (!(c in lo) || ratio < lo[c]) lo[c] = ratio
          if (!(c in hi) || ratio > hi[c]) hi[c] = ratio }
        print "" }
      if (NR < 2) exit
      split(rows[base], b, " ")
      printf "spread of s/layer from %d layers on:", b[1]
      for (c = 1; c <= k; ++c) { split(col[c], nf, ":")
        printf " %s %.2fx", nf[1], hi[c] / lo[c] }
      print "" }' "$table"
}
report "tgc --emit=cpp and --emit=cuda, GPT-2 124M shapes (median of runs; $(nproc) cores)" \
  "cpp:1 cuda:2"

if [[ $host_build == 1 ]]; then
  # A build cache of our own: cold is an empty one, warm the same build again.
  export TGC_CACHE_DIR=$work/cache
  echo
  echo "CPU executable build, tgc -o EXE (passes, units, c++ -O3, link), 1 run each; $(nproc) cores"
  printf '%6s  %10s  %10s  %10s  %12s\n' layers "cold s" "warm s" "inline s" "inline/cold"
  for n in $host_layers; do
    file=$(model "$n")
    rm -rf "$TGC_CACHE_DIR"
    cold=$(seconds "$tgc" "$file" -o "$work/exe")
    warm=$(seconds "$tgc" "$file" -o "$work/exe")
    flat=-
    if (( n <= flat_layers )); then
      flat=$(seconds "$tgc" "$file" --outline-layers=false --build-cache=false -o "$work/exe")
    fi
    awk -v n="$n" -v c="$cold" -v w="$warm" -v f="$flat" 'BEGIN {
      printf "%6d  %10.2f  %10.2f  %10s  %12s\n", n, c, w,
        f == "-" ? "-" : sprintf("%.2f", f), f == "-" ? "-" : sprintf("%.2f", f / c) }'
  done
  unset TGC_CACHE_DIR
fi

if [[ $cuda_build == 1 ]]; then
  export TGC_CACHE_DIR=$work/cuda-cache
  echo
  echo "CUDA executable build, tgc --target=cuda -o EXE (passes, .cu, nvcc, link), 1 run each; $(nproc) cores"
  printf '%6s  %10s  %10s  %10s  %12s\n' layers "cold s" "warm s" "inline s" "inline/cold"
  for n in $host_layers; do
    file=$(model "$n")
    rm -rf "$TGC_CACHE_DIR"
    cold=$(seconds "$tgc" "$file" --target=cuda -o "$work/cuda-exe")
    warm=$(seconds "$tgc" "$file" --target=cuda -o "$work/cuda-exe")
    flat=-
    if (( n <= flat_layers )); then
      flat=$(seconds "$tgc" "$file" --target=cuda --outline-layers=false \
        --build-cache=false -o "$work/cuda-exe" 2> /dev/null)
    fi
    awk -v n="$n" -v c="$cold" -v w="$warm" -v f="$flat" 'BEGIN {
      printf "%6d  %10.2f  %10.2f  %10s  %12s\n", n, c, w,
        f == "-" ? "-" : sprintf("%.2f", f), f == "-" ? "-" : sprintf("%.2f", f / c) }'
  done
  unset TGC_CACHE_DIR
fi

[[ $step_time == 1 ]] || exit 0
tokens=$work/tokens.bin
python3 - "$tokens" <<'PY'
import random, struct, sys
random.seed(0)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<256i", *([20240520, 1, 200000] + [0] * 253)))
    f.write(struct.pack("<200000H", *(random.randrange(256) for _ in range(200000))))
PY
python3 "$root/examples/gen_gpt2.py" --preset tiny -o "$work/tiny.json"
python3 "$root/examples/gen_gpt2.py" --preset 124m --layers 12 --batch 4 \
  --seq 128 --vocab 256 --grad-accum 1 -o "$work/g124.json"
echo
echo "Step time, layer bodies against every layer inline (median step_ms of $step_rounds rounds x 4 steps, alternating; 1 thread)"
printf '%-10s  %10s  %10s  %6s\n' model "bodies ms" "inline ms" ratio
for m in tiny:16 g124:4; do
  name=${m%%:*} batch=${m##*:}
  "$tgc" "$work/$name.json" --build-cache=false -o "$work/$name-bodies"
  "$tgc" "$work/$name.json" --build-cache=false --outline-layers=false -o "$work/$name-inline"
  for ((r = 0; r < step_rounds; ++r)); do
    for kind in bodies inline; do
      "$work/$name-$kind" --data "$tokens" --batch-size "$batch" --steps 4 \
        --threads 1 --no-shuffle --quiet --log "$work/$name-$kind-$r.jsonl"
    done
  done
  python3 - "$work" "$name" "$step_rounds" <<'PY'
import json, statistics, sys
work, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
def ms(kind):
    # The first step of each run warms up; the rest are timed.
    return statistics.median(
        e["step_ms"] for r in range(rounds)
        for e in map(json.loads, open(f"{work}/{name}-{kind}-{r}.jsonl"))
        if e.get("step", 1) > 1 and "step_ms" in e)
b, i = ms("bodies"), ms("inline")
print(f"{name:<10}  {b:10.1f}  {i:10.1f}  {b / i:6.3f}")
PY
done
