#!/usr/bin/env bash
# Calibrates planning/cost/clusters/cpu-local.json by measurement on this
# machine, in the setting the multi-process CPU tests run in: mpirun with
# --oversubscribe over TCP loopback (the flags of test/lit.cfg.py), one
# OpenMP thread per process (--threads 1).
#
#   1. builds tgc_runtime and tgc_cpu_kernels (ninja) and compiles
#      bench/sharding/collectives.cpp against them with the command tgc's
#      host compile uses for generated code (compiler/pipeline/HostCompile.cpp);
#   2. times runtime/comm's all-reduce, all-gather and reduce-scatter for
#      1 KiB .. 64 MiB on 2 and 4 processes, --runs times over (the machine
#      is shared: the fit takes the median over the runs);
#   3. times sgemm (tgc::cpu::gemm) and a triad per process with 4 processes
#      at once, and with one process alone for comparison;
#   4. fits alpha and bandwidth per kind and process count
#      (fit_collectives.py) and prints the tables; with --write-spec FILE
#      writes the spec for 4 processes per node there.
#
#   bench/sharding/calibrate.sh [--build DIR] [--runs N] [--out DIR]
#                               [--write-spec FILE] [--max-wait SECONDS]
#                               [--across best|median]
#   e.g. bench/sharding/calibrate.sh --write-spec planning/cost/clusters/cpu-local.json
#
# The raw CSV files stay in --out (default: a new folder under /tmp). Given
# an --out that holds runs already, the script adds --runs more and fits
# them all, so a quiet moment later can improve an earlier calibration. The
# fit takes the best of the runs (see fit_collectives.py; --across median
# for their median). Each
# run of 64 MiB on 4 processes takes about a second; the whole script about
# a minute per --runs on the 2-core machine, all under nice.
#
# The machine is shared, and a niced benchmark measures what the others leave
# it: before each run the script waits (up to --max-wait seconds, default
# 120) until the other processes keep less than half a core busy over 2 s,
# and writes what it saw as a comment line ("# busy_cores 0.12") at the top
# of the run's CSV file, so the fit's reader can tell quiet runs from loaded
# ones.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=$here/build
runs=3
out=""
spec=""
max_wait=120
across=best
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --write-spec) spec=$2; shift 2 ;;
    --max-wait) max_wait=$2; shift 2 ;;
    --across) across=$2; shift 2 ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
  esac
done
[ -n "$out" ] || out=$(mktemp -d /tmp/tgc-calibrate.XXXXXX)
mkdir -p "$out"
python=/usr/bin/python3 # has numpy (the pyenv python3 on PATH may not)

# 1. The runtime as generated programs link it.
nice ninja -C "$build" tgc_runtime tgc_cpu_kernels >/dev/null
cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
cxx=${CXX:-$(cache CMAKE_CXX_COMPILER)}
mpi_link=$(cache TGC_MPI_LINK_FLAGS)
if [ "$(cache TGC_HAVE_MPI)" != ON ]; then
  echo "calibrate.sh: $build's tgc_runtime has no MPI backend" >&2
  exit 1
fi
exe=$out/collectives
# shellcheck disable=SC2086  # mpi_link is a space-separated list
nice "$cxx" -std=c++17 -O3 -march=native -fopenmp -I"$here" \
  "$here/bench/sharding/collectives.cpp" -o "$exe" -L"$build/lib" \
  -ltgc_runtime -ltgc_cpu_kernels -lopenblas $mpi_link -lpthread

mpirun=(mpirun --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo
        --mca oob_tcp_if_include lo)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
export OMP_NUM_THREADS=1

# Cores kept busy by everyone over 2 s (this script sleeps meanwhile).
busy_cores() {
  local a b
  read -r -a a < <(grep '^cpu ' /proc/stat)
  sleep 2
  read -r -a b < <(grep '^cpu ' /proc/stat)
  local total=0 idle i
  for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
  idle=$((b[4] - a[4] + b[5] - a[5]))
  awk -v t="$total" -v i="$idle" -v n="$(nproc)" \
    'BEGIN { printf "%.2f", (t > 0) ? (t - i) / t * n : 0 }'
}
# Waits for a quiet machine (or --max-wait), then prints the comment line.
wait_quiet() {
  local start=$SECONDS busy
  busy=$(busy_cores)
  while awk -v b="$busy" 'BEGIN { exit !(b > 0.5) }' &&
      [ $((SECONDS - start)) -lt "$max_wait" ]; do
    sleep 3
    busy=$(busy_cores)
  done
  echo "# busy_cores $busy (others, over 2 s before the run; waited $((SECONDS - start)) s)"
}

# 2. Collectives; the process counts interleave so that a burst of load
# from elsewhere on the machine spoils one run of each rather than all of
# one count.
first=$(( $(find "$out" -name 'collectives-p2-run*.csv' | wc -l) + 1 ))
last=$((first + runs - 1))
for run in $(seq "$first" "$last"); do
  for p in 2 4; do
    file=$out/collectives-p$p-run$run.csv
    echo "collectives: $p processes, run $run of $first-$last" >&2
    wait_quiet >"$file"
    nice "${mpirun[@]}" -np "$p" "$exe" >>"$file"
  done
done

# 3. Compute: 4 processes at once, and one alone.
for run in $(seq "$first" "$last"); do
  echo "compute: run $run of $first-$last" >&2
  wait_quiet >"$out/compute-p4-run$run.csv"
  nice "${mpirun[@]}" -np 4 "$exe" --compute >>"$out/compute-p4-run$run.csv"
  wait_quiet >"$out/compute-p1-run$run.csv"
  nice "$exe" --compute >>"$out/compute-p1-run$run.csv"
done

echo "raw measurements: $out" >&2
# 4. The fit, over every run in $out.
args=(--across "$across")
for file in "$out"/collectives-p*-run*.csv; do args+=(--collectives "$file"); done
for file in "$out"/compute-p*-run*.csv; do args+=(--compute "$file"); done
[ -n "$spec" ] && args+=(--write-spec "$spec")
"$python" "$here/bench/sharding/fit_collectives.py" "${args[@]}"
