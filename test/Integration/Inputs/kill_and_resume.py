#!/usr/bin/env python3
"""Kills a training run with SIGKILL once it has written a checkpoint,
resumes it, and checks that the result is bit-identical to a run that was
never interrupted: the same loss at every step and byte-identical final
parameters and optimizer state.

Usage: kill_and_resume.py EXE WORKDIR STEPS -- TRAINING FLAGS...
"""

import glob
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import safetensors_np  # noqa: E402


def losses(log):
    return {e["step"]: e["loss"] for e in map(json.loads, open(log)) if "loss" in e}


def main():
    exe, work, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    flags = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(work, exist_ok=True)
    ckpt = os.path.join(work, "ckpt")

    straight_log = os.path.join(work, "straight.jsonl")
    straight = os.path.join(work, "straight.safetensors")
    subprocess.run([exe, "--steps", str(steps), "--log", straight_log,
                    "--save-final", straight, "--quiet"] + flags, check=True)

    # The interrupted run checkpoints every step; it dies by SIGKILL (no
    # chance to clean up) as soon as a checkpoint from the first half exists.
    killed_log = os.path.join(work, "killed.jsonl")
    run = subprocess.Popen([exe, "--steps", str(steps), "--log", killed_log,
                            "--checkpoint-dir", ckpt, "--checkpoint-every", "1",
                            "--keep-checkpoints", "0", "--quiet"] + flags)
    deadline = time.time() + 60
    while not glob.glob(os.path.join(ckpt, "step_*.safetensors")):
        if run.poll() is not None or time.time() > deadline:
            break
        time.sleep(0.001)
    run.send_signal(signal.SIGKILL)
    run.wait()
    done = sorted(glob.glob(os.path.join(ckpt, "step_*.safetensors")))
    if not done:
        print("FAIL: the run wrote no checkpoint before it was killed")
        return 1
    leftovers = [f for f in os.listdir(ckpt) if not f.endswith(".safetensors")]
    # A temp file of a checkpoint being written when the kill came may stay;
    # it is never mistaken for a checkpoint.
    killed_at = int(os.path.basename(done[-1])[5:13])
    if killed_at >= steps:
        print("note: the run finished before the kill landed")
    # Resume from the newest checkpoint; a torn one would fail to load.
    resumed = os.path.join(work, "resumed.safetensors")
    subprocess.run([exe, "--steps", str(steps), "--log", killed_log,
                    "--resume", ckpt, "--save-final", resumed, "--quiet"] + flags,
                   check=True)

    a, b = losses(straight_log), losses(killed_log)
    failures = []
    for step in range(1, steps + 1):
        if a.get(step) != b.get(step):
            failures.append("step %d: loss %r uninterrupted, %r resumed" %
                            (step, a.get(step), b.get(step)))
    ta, ma = safetensors_np.load(straight)
    tb, mb = safetensors_np.load(resumed)
    if sorted(ta) != sorted(tb):
        failures.append("tensors differ: %s vs %s" % (sorted(ta), sorted(tb)))
    for name in ta:
        if name in tb and ta[name].tobytes() != tb[name].tobytes():
            failures.append("%s is not bit-identical" % name)
    print("killed after the checkpoint of step %d of %d (%d temp files left); "
          "resumed: %d tensors compared, %d steps of losses compared" %
          (killed_at, steps, len(leftovers), len(ta), steps))
    for f in failures[:10]:
        print("FAIL: " + f)
    print("bit-identical" if not failures else "DIFFERENT")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
