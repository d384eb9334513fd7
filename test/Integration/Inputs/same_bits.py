"""Checks that runs agree bit for bit: same_bits.py KEY A.jsonl B.jsonl ...
compares the logged KEY at every step, or, for .safetensors files, every
tensor's bytes, with the first file's. Prints "bit-identical" or what
differs."""
import json, struct, sys


def values(path, key):
    if path.endswith(".safetensors"):
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(n))
            data = f.read()
        return {name: data[t["data_offsets"][0]:t["data_offsets"][1]]
                for name, t in header.items() if name != "__metadata__"}
    with open(path) as f:
        return [e[key] for e in map(json.loads, f) if key in e]


key, paths = sys.argv[1], sys.argv[2:]
first = values(paths[0], key)
bad = [p for p in paths[1:] if values(p, key) != first]
print("bit-identical" if not bad else "DIFFERENT: " + " ".join(bad))
sys.exit(1 if bad else 0)
