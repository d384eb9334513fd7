#!/usr/bin/env python3
"""A checkpoint that cannot be written (the disk fills up) stops the run with
an error naming the file, a non-zero exit, and the previous checkpoint
intact.

The checkpoint directory is a small tmpfs when this process may mount one
(root), else the run gets a file-size limit (RLIMIT_FSIZE), which fails the
same write the same way.

Usage: full_disk.py EXE WORKDIR -- TRAINING FLAGS...
"""

import os
import resource
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import safetensors_np  # noqa: E402
from small_disk import small_disk  # noqa: E402


def main():
    exe, work = sys.argv[1], sys.argv[2]
    flags = sys.argv[sys.argv.index("--") + 1:]
    ckpt = os.path.join(work, "ckpt")
    os.makedirs(ckpt, exist_ok=True)
    # One checkpoint's size, from a run that writes one.
    probe = os.path.join(work, "probe.safetensors")
    subprocess.run([exe, "--steps", "0", "--save-final", probe, "--quiet"] +
                   flags, check=True)
    size = os.path.getsize(probe)
    with small_disk(ckpt, size * 3 // 2) as mounted:
        limit = None
        if not mounted:
            # Room for the first checkpoint and the log, not the second.
            limit = lambda: resource.setrlimit(  # noqa: E731
                resource.RLIMIT_FSIZE, (size * 3 // 2, size * 3 // 2))
        run = subprocess.run([exe, "--steps", "20", "--checkpoint-dir", ckpt,
                              "--checkpoint-every", "5", "--quiet"] + flags,
                             capture_output=True, text=True, preexec_fn=limit)
        print("how: %s" % ("tmpfs" if mounted else "file size limit"))
        print("exit: %d" % run.returncode)
        print("stderr: " + run.stderr.strip())
        names = sorted(f for f in os.listdir(ckpt) if f.endswith(".safetensors"))
        print("checkpoints: " + " ".join(names))
        for name in names:
            tensors, meta = safetensors_np.load(os.path.join(ckpt, name))
            print("%s: step %s, %d tensors, loads" % (name, meta["step"], len(tensors)))
        print("stray files: %d" % len([f for f in os.listdir(ckpt)
                                        if not f.endswith(".safetensors")]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
