#!/usr/bin/env bash
#===- run_step.sh - A generated CUDA training step, on the host ------------===#
#
#   run_step.sh PYTHON MAKE_TOKENS WORKDIR PROGRAM [ARGS...]
#
# Writes a token shard (make_tokens.py, 40000 tokens of a 256-word vocabulary)
# into WORKDIR and trains PROGRAM (a `tgc --emit=cuda` executable built
# against runtime/cuda/simt) on it for two steps; passes when it exits 0
# and its log has both steps, with finite values.
#
#===----------------------------------------------------------------------===#
set -eu
if [ $# -lt 4 ]; then
  echo "usage: run_step.sh PYTHON MAKE_TOKENS WORKDIR PROGRAM [ARGS...]" >&2
  exit 2
fi
python=$1 make_tokens=$2 work=$3
shift 3
# make_tokens.py needs numpy: the first interpreter that has it (Debian's
# /usr/bin/python3 may, where CMake found another).
for candidate in "$python" /usr/bin/python3 python3; do
  if "$candidate" -c "import numpy" 2>/dev/null; then
    python=$candidate
    break
  fi
done
mkdir -p "$work"
"$python" "$make_tokens" "$work/tokens.bin" 40000 256
rm -f "$work/log.jsonl"
"$@" --data "$work/tokens.bin" --steps 2 --log "$work/log.jsonl"
steps=$(grep -c '"step"' "$work/log.jsonl" || true)
if [ "$steps" -lt 2 ]; then
  echo "run_step.sh: $steps step(s) in $work/log.jsonl, expected 2" >&2
  exit 1
fi
if grep -qiE '\b(nan|inf|infinity)\b' "$work/log.jsonl"; then
  echo "run_step.sh: a non-finite value in $work/log.jsonl" >&2
  cat "$work/log.jsonl" >&2
  exit 1
fi
echo "run_step.sh: 2 steps"
