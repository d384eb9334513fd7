"""Rewrites a checkpoint's data position in the form tgc wrote before it
counted samples: legacy_position.py IN.safetensors OUT.safetensors CURSOR
writes {"epoch": 0, "cursor": CURSOR, "rng": ...} (the writer's own count:
micro-batches for token data), keeping the rng state and every tensor."""
import json
import struct
import sys

source, target, cursor = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(source, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()
meta = header["__metadata__"]
position = json.loads(meta["data_position"])
meta["data_position"] = json.dumps(
    {"epoch": 0, "cursor": cursor, "rng": position["rng"]})
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(target, "wb") as f:
    f.write(struct.pack("<Q", len(text)))
    f.write(text)
    f.write(data)
