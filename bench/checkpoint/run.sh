#!/usr/bin/env bash
# What a checkpoint costs the training loop, synchronous against
# --checkpoint-async, on GPT-2 124M's state (fp32 on this CPU, AdamW: 124M
# parameters and two moments, 1.5 GB a checkpoint). The step runs sequences
# of 64 tokens, micro-batch 1, so that it takes seconds on a CPU: the stall
# depends on the state, not on the step. Runs of STEPS steps with
# --checkpoint-every 1, alternating
# the two modes REPEATS times, and from their logs the median stall per
# checkpoint (the time the loop stood still: the whole write, or the
# snapshot into host memory) and the median step time with and without a
# write in flight. The target: the asynchronous stall at most 10% of the
# synchronous write.
#
#   bench/checkpoint/run.sh [BUILD_DIR] [STEPS] [REPEATS]   (build, 4, 2)
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
steps=${2:-4}
repeats=${3:-2}
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

"$python" - "$work" "$steps" "$repeats" <<'PY'
import json, statistics, subprocess, sys
work, steps, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
stall = {"sync": [], "async": []}
step_ms = {"sync": [], "async": []}
for r in range(repeats):
    for mode in ["sync", "async"]:
        ck, log = f"{work}/ck-{mode}-{r}", f"{work}/{mode}-{r}.jsonl"
        flags = ["--checkpoint-async"] if mode == "async" else []
        subprocess.run([f"{work}/gpt2", "--data", f"{work}/tokens.bin",
                        "--steps", str(steps), "--checkpoint-dir", ck,
                        "--checkpoint-every", "1", "--keep-checkpoints", "1",
                        "--quiet", "--log", log] + flags, check=True)
        entries = [json.loads(l) for l in open(log)]
        # The last checkpoint (at the end of the run) is synchronous in both.
        stall[mode] += [e["checkpoint_stall_ms"] for e in entries
                        if "checkpoint" in e and e["step"] < steps]
        step_ms[mode] += [e["step_ms"] for e in entries
                          if "step_ms" in e and e["step"] > 1]
s, a = statistics.median(stall["sync"]), statistics.median(stall["async"])
print("GPT-2 124M's state (fp32, AdamW), micro-batch 1 x 64; %d checkpoints each"
      % len(stall["sync"]))
print("| mode | stall per checkpoint (median) | step time (median, steps 2..) |")
print("| --- | --- | --- |")
print("| synchronous | %.0f ms | %.0f ms |" % (s, statistics.median(step_ms["sync"])))
print("| --checkpoint-async | %.0f ms | %.0f ms |" % (a, statistics.median(step_ms["async"])))
print("asynchronous stall / synchronous write: %.3f (target <= 0.10)" % (a / s))
PY
