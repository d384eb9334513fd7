#!/usr/bin/env python3
"""Reads a tgc checkpoint with nothing but json and numpy, checking the file
against the published safetensors layout as strictly as the safetensors
library does, then hands its parameters back to the executable
(--init-from, written by this script) and checks that the executable saves
exactly the same tensors.

Usage: read_checkpoint.py EXE CHECKPOINT WORKDIR
"""

import json
import os
import struct
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import safetensors_np  # noqa: E402

SIZES = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "BOOL": 1}


def check_layout(path):
    """The rules of the safetensors format: an 8-byte little-endian header
    size, a UTF-8 JSON object (space padded), tensors with a known dtype, a
    shape and data_offsets that tile the data section exactly, in order."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), "header runs past the end of the file"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    assert isinstance(header, dict)
    meta = header.pop("__metadata__", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()), \
        "metadata must map strings to strings"
    spans = []
    for name, info in header.items():
        assert set(info) == {"dtype", "shape", "data_offsets"}, name
        assert info["dtype"] in SIZES, "%s: dtype %s" % (name, info["dtype"])
        begin, end = info["data_offsets"]
        count = int(np.prod(info["shape"])) if info["shape"] else 1
        assert end - begin == count * SIZES[info["dtype"]], "%s: size" % name
        spans.append((begin, end))
    spans.sort()
    offset = 0
    for begin, end in spans:
        assert begin == offset, "the data section has a hole or an overlap"
        offset = end
    assert 8 + n + offset == len(data), "bytes after the last tensor"
    return meta


def main():
    exe, checkpoint, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    meta = check_layout(checkpoint)
    tensors, _ = safetensors_np.load(checkpoint)
    print("metadata: " + ", ".join("%s=%s" % (k, meta[k]) for k in
                                   ("format", "model", "step") if k in meta))
    state = {k for k in tensors if k.rsplit(".", 1)[-1] in
             ("exp_avg", "exp_avg_sq", "momentum_buffer", "square_avg", "sum")}
    params = {k: v for k, v in tensors.items() if k not in state}
    print("%d parameters, %d optimizer state tensors" % (len(params), len(state)))

    # Our reader's tensors, written by our writer, loaded by the executable.
    init = os.path.join(work, "from_python.safetensors")
    safetensors_np.save(init, params)
    saved = os.path.join(work, "saved.safetensors")
    subprocess.run([exe, "--init-from", init, "--steps", "0",
                    "--save-final", saved, "--quiet"], check=True)
    check_layout(saved)
    again, _ = safetensors_np.load(saved)
    different = [k for k in params if again[k].tobytes() != params[k].tobytes()]
    for k in different:
        print("FAIL: %s changed on the way through the executable" % k)
    print("same tensors" if not different else "DIFFERENT")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
