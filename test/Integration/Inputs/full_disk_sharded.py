#!/usr/bin/env python3
"""A sharded checkpoint that cannot be written stops a run over two
processes with an error on every rank, a non-zero exit, the checkpoint
before it intact and nothing incomplete that --resume would take.

The checkpoint directory is a tmpfs with room for one and a half
checkpoints (the second fails with ENOSPC on whichever rank runs out), when
this process may mount one (root). Otherwise the second checkpoint's
partial directory is blocked by a plain file of that name, which fails the
save at its first stage the same way.

Usage: full_disk_sharded.py WORKDIR EXE -- TRAINING FLAGS...
"""

import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from small_disk import small_disk  # noqa: E402

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"]


def size_of(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))


def main():
    work, exe = sys.argv[1], sys.argv[2]
    flags = sys.argv[sys.argv.index("--") + 1:]
    shutil.rmtree(work, ignore_errors=True)
    ckpt = os.path.join(work, "ckpt")
    probe = os.path.join(work, "probe")
    os.makedirs(ckpt)
    subprocess.run(MPIRUN + [exe, "--steps", "1", "--threads", "1",
                             "--checkpoint-dir", probe, "--quiet"] + flags,
                   check=True)
    size = size_of(os.path.join(probe, "step_00000001"))
    with small_disk(ckpt, size * 3 // 2) as mounted:
        if not mounted:
            open(os.path.join(ckpt, ".step_00000010.partial"), "w").close()
        run = subprocess.run(MPIRUN + [exe, "--steps", "20", "--threads", "1",
                                       "--checkpoint-dir", ckpt,
                                       "--checkpoint-every", "5", "--quiet"] +
                             flags, capture_output=True, text=True)
        print("how: %s" % ("tmpfs" if mounted else "blocked partial directory"))
        print("exit: %d" % (1 if run.returncode else 0))
        # Each rank's error ("rank N: PATH: cannot write: ...") names the
        # step's files.
        print("error names the checkpoint: %s" %
              ("yes" if ".step_00000010.partial" in run.stderr
               else "no: " + run.stderr.strip()))
        complete = sorted(f for f in os.listdir(ckpt) if f.startswith("step_"))
        bad = [f for f in complete if subprocess.run(
            ["tg-ckpt", "info", os.path.join(ckpt, f)],
            capture_output=True).returncode != 0]
        print("complete checkpoints: " + " ".join(complete))
        print("complete checkpoints load: %s" % ("no: " + " ".join(bad) if bad
                                                  else "yes"))
        # What --resume DIR would take.
        resumed = subprocess.run(MPIRUN + [exe, "--steps", "5", "--threads",
                                           "1", "--resume", ckpt] + flags,
                                 capture_output=True, text=True)
        print("resumable from: " + " ".join(
            l for l in resumed.stdout.splitlines() if l.startswith("resumed")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
