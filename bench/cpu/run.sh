#!/usr/bin/env bash
#===- run.sh - CPU train-step time: tgc against PyTorch eager -------------===#
#
# Builds tgc if needed, then times the MLP, the CNN, gpt2-tiny (batch 32)
# and GPT-2 124M shapes (fp32, batch 4, sequence 128), AdamW, with our
# executables and with PyTorch eager from the same initial weights on the
# same batches, at 1 thread and at all cores (TGC_BENCH_THREADS="1,2"
# overrides), PyTorch at its fastest thread split; ends with a table per
# thread count: ms/step, speedup, GFLOP/s beside the same run's sgemm
# throughput, and both sides' first loss. Extra arguments go to bench.py
# (--steps, --rounds, --models); see bench.py for how it stays fair.
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${TGC_BUILD:-$root/build}
[[ -x $build/bin/tgc ]] || make -C "$root" build
# OpenBLAS's kernels by what the CPU can do (its model may be masked);
# PyTorch's kernels choose by the CPU's features anyway.
source "$root/scripts/openblas-core.sh"
# Debian's torch belongs to /usr/bin/python3.
python=/usr/bin/python3
"$python" -c "import torch" 2>/dev/null || {
  echo "bench: PyTorch is not importable by $python (apt-get install python3-torch)" >&2
  exit 1
}
threads=${TGC_BENCH_THREADS:-1,$(nproc)}
exec "$python" "$root/bench/cpu/bench.py" "$build/bin/tgc" "$build/bench-cpu" \
  --threads "$threads" "$@"
