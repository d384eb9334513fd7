#!/usr/bin/env bash
# What a checkpoint costs the training loop, synchronous against
# --checkpoint-async, on GPT-2 124M's state (fp32 on this CPU, AdamW: 124M
# parameters and two moments, 1.5 GB a checkpoint). A step is one sequence
# of 64 tokens (--batch-size 1: no accumulation), so that it takes seconds
# on a CPU: the stall depends on the state, not on the step. Runs of STEPS
# steps with --checkpoint-every EVERY (far enough apart that a write ends
# before the next checkpoint; a wait for one would count as stall),
# alternating the two modes REPEATS times, and from their logs the median
# stall per checkpoint (the time the loop stood still: the whole write, or
# the snapshot into host memory) and the median step time. The target: the
# asynchronous stall at most 10% of the synchronous write.
#
#   bench/checkpoint/run.sh [BUILD_DIR] [STEPS] [REPEATS] [EVERY]   (build, 10, 2, 3)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
steps=${2:-10}
repeats=${3:-2}
every=${4:-3}
work=$(mktemp -d)
# Debian's python3 has numpy; a python3 first on PATH may not.
python=/usr/bin/python3
[[ -x $python ]] || python=python3
trap 'rm -rf "$work"' EXIT

"$python" "$here/examples/gen_gpt2.py" --preset 124m --batch 1 --seq 64 \
  -o "$work/gpt2-124m-seq64.json"
"$build/bin/tgc" "$work/gpt2-124m-seq64.json" -o "$work/gpt2"
"$python" "$here/test/Integration/Inputs/make_tokens.py" "$work/tokens.bin" \
  200000 50257 > /dev/null

"$python" - "$work" "$steps" "$repeats" "$every" <<'PY'
import json, statistics, subprocess, sys
work, steps, repeats, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
stall = {"sync": [], "async": []}
step_ms = {"sync": [], "async": []}
for r in range(repeats):
    for mode in ["sync", "async"]:
        ck, log = f"{work}/ck-{mode}-{r}", f"{work}/{mode}-{r}.jsonl"
        flags = ["--checkpoint-async"] if mode == "async" else []
        subprocess.run([f"{work}/gpt2", "--data", f"{work}/tokens.bin",
                        "--steps", str(steps), "--batch-size", "1",
                        "--checkpoint-dir", ck,
                        "--checkpoint-every", str(every), "--keep-checkpoints", "1",
                        "--quiet", "--log", log] + flags, check=True)
        entries = [json.loads(l) for l in open(log)]
        # The last checkpoint (at the end of the run) is synchronous in both.
        stall[mode] += [e["checkpoint_stall_ms"] for e in entries
                        if "checkpoint" in e and e["step"] < steps]
        step_ms[mode] += [e["step_ms"] for e in entries
                          if "step_ms" in e and e["step"] > 1]
s, a = statistics.median(stall["sync"]), statistics.median(stall["async"])
print("GPT-2 124M's state (fp32, AdamW), one sequence of 64 a step; %d checkpoints each"
      % len(stall["sync"]))
print("| mode | stall per checkpoint (median) | step time (median, steps 2..) |")
print("| --- | --- | --- |")
print("| synchronous | %.0f ms | %.0f ms |" % (s, statistics.median(step_ms["sync"])))
print("| --checkpoint-async | %.0f ms | %.0f ms |" % (a, statistics.median(step_ms["async"])))
print("asynchronous stall / synchronous write: %.3f (target <= 0.10)" % (a / s))
PY
