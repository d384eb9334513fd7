#!/usr/bin/env bash
#===- run.sh - CPU train-step time: tgc against PyTorch eager -------------===#
#
# Builds tgc if needed, then times the MLP, the CNN and gpt2-tiny (batch 32,
# AdamW) with our executables and with PyTorch eager, alternating, with the
# same thread count (default: all cores; TGC_BENCH_THREADS overrides), and
# ends with one line per model:
#   MODEL: ours X ms/step, pytorch Y ms/step, speedup Y/X
# Extra arguments go to bench.py (--steps, --rounds, --models).
#
#===----------------------------------------------------------------------===#
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${TGC_BUILD:-$root/build}
[[ -x $build/bin/tgc ]] || make -C "$root" build
# Debian's torch belongs to /usr/bin/python3.
python=/usr/bin/python3
"$python" -c "import torch" 2>/dev/null || {
  echo "bench: PyTorch is not importable by $python (apt-get install python3-torch)" >&2
  exit 1
}
threads=${TGC_BENCH_THREADS:-$(nproc)}
exec "$python" "$root/bench/cpu/bench.py" "$build/bin/tgc" "$build/bench-cpu" \
  --threads "$threads" "$@"
