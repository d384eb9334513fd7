#!/usr/bin/env python3
"""Sends SIGTERM (or SIGINT) to a training run once it has taken a step and
prints how it ended: its exit status, the last line of its stderr, and the
checkpoints it left.

Usage: terminate.py SIGNAL EXE WORKDIR -- TRAINING FLAGS...
"""
import glob
import json
import os
import signal
import subprocess
import sys
import time


def main():
    sig = getattr(signal, sys.argv[1])
    exe, work = sys.argv[2], sys.argv[3]
    flags = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "run.jsonl")
    run = subprocess.Popen([exe, "--log", log, "--quiet"] + flags,
                           stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    # Wait for the first logged step.
    while time.time() < deadline and run.poll() is None:
        if os.path.exists(log) and any('"loss"' in l for l in open(log)):
            break
        time.sleep(0.005)
    run.send_signal(sig)
    _, err = run.communicate(timeout=120)
    lines = [l for l in err.splitlines() if l.strip()]
    print("exit:", run.returncode)
    print("last line:", lines[-1] if lines else "")
    ckpts = sorted(os.path.basename(p) for p in
                   glob.glob(os.path.join(work, "ckpt", "*.safetensors")))
    print("checkpoints:", " ".join(ckpts) if ckpts else "none")


if __name__ == "__main__":
    sys.exit(main())
