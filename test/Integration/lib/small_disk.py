"""A small disk for the full-disk tests: a tmpfs mounted for a while."""

import contextlib
import subprocess


@contextlib.contextmanager
def small_disk(path, size):
    """Mounts a tmpfs of `size` bytes at `path` for the block when this
    process may (root); yields whether it did, and unmounts after."""
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=%d" % size, "tmpfs", path],
        stderr=subprocess.DEVNULL).returncode == 0
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", path])
