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
# EXE` (the source, then c++ -O3 on it), once per size at --host-layers
# (default 2 12 24 48). Builds nothing: point --build at a build directory
# (default build/).
#
#   bench/compile/run.sh [--build DIR] [--layers "2 12 24 48 96 192 384"]
#                        [--runs N] [--host-build] [--host-layers "2 12 24 48"]
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build
layers="2 12 24 48 96 192 384"
runs=""
host_build=0
host_layers="2 12 24 48"
while [[ $# -gt 0 ]]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --layers) layers=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --host-build) host_build=1; shift ;;
    --host-layers) host_layers=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

[[ $host_build == 1 ]] || exit 0
: > "$table"
for n in $host_layers; do
  file=$(model "$n")
  echo "$n $(seconds "$tgc" "$file" -o "$work/exe")" >> "$table"
done
echo
report "CPU executable build, tgc -o EXE (source + c++ -O3), 1 run each" "exe:1"
