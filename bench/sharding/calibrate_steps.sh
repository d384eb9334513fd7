#!/usr/bin/env bash
# Compares the cost model's step time with measured step times: gpt2-tiny and
# a wider GPT-2 (generated at run time) under several sharding plans on 4
# processes, each plan priced by `tgc --report=sharding --report-json` against
# a cluster spec and run with mpirun as the multi-process tests run it.
#
#   bench/sharding/calibrate_steps.sh [--out DIR] [--runs N] [--steps S]
#       [--warmup W] [--cluster NAME|FILE] [--max-wait SECONDS]
#       [--wide "gen_gpt2.py flags"] [--models tiny,wide] [--no-nice]
#       [--no-fit] [--write-spec FILE]
#
# First the compute side of the spec is fitted apart from the plans: each
# model runs unsharded (--mesh=data=1), four copies at once (so that, as in
# the plans, a device is one of 4 processes on 2 cores), --runs times, and
# compare_steps.py --fit-compute solves for the device's flops_efficiency
# that prices each model's measured step (its geometric mean over the
# models, at most 1) and writes the spec with it to DIR/fitted.json
# (--write-spec FILE: there too). The plans are priced with that spec; none
# of their runs enters the fit. --no-fit prices them with --cluster as it is.
#
# Then per model and plan: compile the executable and the report with the same
# flags, run it --runs times (default 3, plans interleaved: run 1 of every
# plan, then run 2, ...) for --steps steps (default 12), and keep the median
# step_ms of the steps after the first --warmup (default 3) of each run; the
# measured figure is the median over runs. compare_steps.py then prints the
# table, the mean |relative error| and Kendall's tau (all plans and per
# model) and a kernel-overhead fit (ops per step counted by pricing each plan
# once more with device.kernel_overhead = 1 ms in a copy of the spec).
#
# The machine is shared: every run is niced (--no-nice: the runs are not), and
# before each the script waits (up to --max-wait seconds, default 30) until
# the others keep less than half a core busy over 2 s, and records what it
# saw (and the load average) in DIR/runs.csv. TGC=PATH picks the compiler
# (default build/bin/tgc; a copy keeps a rebuild from breaking a long run).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tgc=${TGC:-$root/build/bin/tgc}
py=/usr/bin/python3
out=/tmp/calibrate_steps
runs=3
steps=12
warmup=3
cluster=cpu-local
max_wait=30
models=tiny,wide
nice=(nice)
wide="--layers 2 --heads 8 --d 512 --batch 4"
fit=1
write_spec=""
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --cluster) cluster=$2; shift 2 ;;
    --max-wait) max_wait=$2; shift 2 ;;
    --wide) wide=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --no-nice) nice=(); shift ;;
    --no-fit) fit=0; shift ;;
    --write-spec) write_spec=$2; shift 2 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
# A cluster name is a file in planning/cost/clusters; a path is used as is.
spec=$cluster
[ -f "$spec" ] || spec=$root/planning/cost/clusters/$cluster.json
[ -f "$spec" ] || { echo "no cluster spec $cluster" >&2; exit 1; }

# shellcheck disable=SC2054
mpirun=(mpirun --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo
        --mca oob_tcp_if_include lo)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)

# Models: gpt2-tiny as shipped; the wide one from gen_gpt2.py.
declare -A model_file
for m in ${models//,/ }; do
  case $m in
    tiny) model_file[tiny]=$root/examples/gpt2-tiny.json ;;
    wide)
      # shellcheck disable=SC2086
      $py "$root/examples/gen_gpt2.py" --preset tiny --name gpt2-wide $wide \
        -o "$out/gpt2-wide.json"
      model_file[wide]=$out/gpt2-wide.json ;;
    *) echo "unknown model $m (tiny, wide)" >&2; exit 2 ;;
  esac
done

# The plans: label, mesh, sharding flags.
plans=(
  "dp|data=4|--shard=dp"
  "zero1|data=4|--shard=zero1"
  "zero3|data=4|--shard=zero3"
  "tp4|tp=4|--shard=tp"
  "tp|data=2,tp=2|--shard=tp"
  "sp|data=2,tp=2|--shard=sp"
  "auto|data=2,tp=2|--auto-shard --shard-seed=1"
)

tokens=$out/tokens.bin
[ -f "$tokens" ] || $py "$root/test/Integration/Inputs/make_tokens.py" \
  "$tokens" 200000 256

# Cores kept busy by everyone over 2 s (this script sleeps meanwhile).
busy_cores() {
  local a b
  read -r -a a < <(grep '^cpu ' /proc/stat)
  sleep 2
  read -r -a b < <(grep '^cpu ' /proc/stat)
  awk -v u=$((b[1] + b[2] + b[3] + b[6] + b[7] - a[1] - a[2] - a[3] - a[6] - a[7])) \
      -v t=$((b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + b[7] - a[1] - a[2] - a[3] - a[4] - a[5] - a[6] - a[7])) \
      -v n="$(nproc)" 'BEGIN { printf "%.2f", t ? u / t * n : 0 }'
}
wait_quiet() {
  local start=$SECONDS busy
  busy=$(busy_cores)
  while awk -v b="$busy" 'BEGIN { exit !(b > 0.5) }' &&
      [ $((SECONDS - start)) -lt "$max_wait" ]; do
    busy=$(busy_cores)
  done
  echo "$busy,$((SECONDS - start))"
}

# A model file's micro-batch (its training table's batch_size).
micro_batch() {
  $py -c 'import json,sys; print(json.load(open(sys.argv[1]))["training"]["batch_size"])' "$1"
}
# The spec IN with device.FIELD set to VALUE and named NAME, written to OUT.
spec_variant() { # IN OUT NAME FIELD VALUE
  $py - "$@" <<'EOF'
import json, sys
src, dst, name, field, value = sys.argv[1:6]
s = json.load(open(src))
s["device"][field] = float(value)
s["name"] = name
json.dump(s, open(dst, "w"), indent=2)
EOF
}

# The compute fit: each model unsharded, four copies at once (3x --steps
# each, so that the copies' staggered starts and ends stay outside the
# median), priced at the spec's flops_efficiency and at half of it.
pricing=$spec
if [ "$fit" = 1 ]; then
  half=$($py -c 'import json,sys; print(json.load(open(sys.argv[1]))["device"].get("flops_efficiency", 1.0) / 2)' "$spec")
  spec_variant "$spec" "$out/half-efficiency.json" half-efficiency \
    flops_efficiency "$half"
  echo "model|batch" >"$out/unsharded.csv"
  for m in ${models//,/ }; do
    file=${model_file[$m]}
    micro=$(micro_batch "$file")
    echo "$m|$micro" >>"$out/unsharded.csv"
    base=$out/unsharded-$m
    [ -f "$base.exe" ] || nice "$tgc" "$file" --mesh=data=1 -o "$base.exe"
    nice "$tgc" "$file" --mesh=data=1 --cluster="$spec" --report=sharding \
      --report-json="$base.report.json" >/dev/null
    nice "$tgc" "$file" --mesh=data=1 --cluster="$out/half-efficiency.json" \
      --report=sharding --report-json="$base.half.json" >/dev/null
  done
  for ((r = 1; r <= runs; r++)); do
    tail -n +2 "$out/unsharded.csv" | while IFS="|" read -r m batch; do
      base=$out/unsharded-$m
      wait_quiet >/dev/null
      for c in 1 2 3 4; do
        "${nice[@]}" "$base.exe" --data "$tokens" --batch-size "$batch" \
          --steps $((3 * steps)) --threads 1 --log "$base.run$r.copy$c.jsonl" \
          --no-shuffle --quiet </dev/null &
      done
      wait
      echo "run $r: $m unsharded (4 copies) done" >&2
    done
  done
  $py "$here/compare_steps.py" --fit-compute --dir "$out" --warmup "$warmup" \
    --spec "$spec" -o "$out/fitted.json" | tee "$out/fit.md"
  pricing=$out/fitted.json
  [ -n "$write_spec" ] && cp "$out/fitted.json" "$write_spec"
fi

# The pricing spec with a 1 ms per-op overhead: (its compute - the spec's) /
# 1 ms counts the ops the model prices per step.
spec_variant "$pricing" "$out/overhead-1ms.json" overhead-1ms kernel_overhead 1e-3

# Compile: executable, report, report with the overhead spec (files an
# earlier call left in --out are kept: delete them to recompile).
echo "model|plan|mesh|flags|batch" >"$out/plans.csv"
for m in ${models//,/ }; do
  file=${model_file[$m]}
  micro=$(micro_batch "$file")
  for p in "${plans[@]}"; do
    IFS='|' read -r label mesh flags <<<"$p"
    data=1
    [[ $mesh =~ data=([0-9]+) ]] && data=${BASH_REMATCH[1]}
    base=$out/$m-$label
    echo "$m|$label|$mesh|$flags|$((micro * data))" >>"$out/plans.csv"
    # Compiled in an earlier call with this --out and the same pricing
    # spec: kept (the auto-shard plan depends on the spec).
    [ -f "$base.exe" ] && [ -f "$base.report.json" ] && [ -f "$base.overhead.json" ] &&
      cmp -s "$pricing" "$base.spec.json" && continue
    cp "$pricing" "$base.spec.json"
    rm -f "$base".run*.jsonl
    # shellcheck disable=SC2086
    nice "$tgc" "$file" --mesh="$mesh" $flags --cluster="$pricing" -o "$base.exe"
    # shellcheck disable=SC2086
    nice "$tgc" "$file" --mesh="$mesh" $flags --cluster="$pricing" \
      --report=sharding --report-json="$base.report.json" >"$base.report.txt"
    # shellcheck disable=SC2086
    nice "$tgc" "$file" --mesh="$mesh" $flags --cluster="$out/overhead-1ms.json" \
      --report=sharding --report-json="$base.overhead.json" >/dev/null
  done
done

# Run: plans interleaved, so that a busy spell of the machine spreads over
# all plans instead of one.
echo "model,plan,run,busy_cores,waited_s,start_utc,loadavg" >"$out/runs.csv"
for ((r = 1; r <= runs; r++)); do
  tail -n +2 "$out/plans.csv" | while IFS="|" read -r m label mesh flags batch; do
    base=$out/$m-$label
    quiet=$(wait_quiet)
    echo "$m,$label,$r,$quiet,$(date -u +%H:%M:%S),$(cut -d' ' -f1 /proc/loadavg)" >>"$out/runs.csv"
    "${nice[@]}" "${mpirun[@]}" -np 4 "$base.exe" --data "$tokens" --batch-size "$batch" \
      --steps "$steps" --threads 1 --log "$base.run$r.jsonl" --no-shuffle \
      --quiet </dev/null
    echo "run $r: $m $label done" >&2
  done
done

$py "$here/compare_steps.py" --dir "$out" --warmup "$warmup" | tee "$out/table.md"
