#!/usr/bin/env python3
"""Checkpoint files around given JSON text (Python escapes decoded), for the
tests of broken JSON:

  raw_checkpoint.py safetensors PATH HEADER N  a .safetensors file whose
                                               header is HEADER, then N zero
                                               bytes of data
  raw_checkpoint.py index DIR TEXT             a sharded checkpoint directory
                                               whose index.json holds TEXT
"""
import os
import struct
import sys


def decoded(text):
    return text.encode("latin-1").decode("unicode_escape").encode("latin-1")


command, args = sys.argv[1], sys.argv[2:]
if command == "safetensors":
    header = decoded(args[1])
    with open(args[0], "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + bytes(int(args[2])))
elif command == "index":
    os.makedirs(args[0], exist_ok=True)
    with open(os.path.join(args[0], "index.json"), "wb") as f:
        f.write(decoded(args[1]))
else:
    sys.exit("raw_checkpoint.py: unknown command " + command)
