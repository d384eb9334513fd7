"""Read and write safetensors files with only json and numpy.

Follows the published layout: an 8-byte little-endian header length, a JSON
header mapping tensor names to {dtype, shape, data_offsets} (plus an optional
"__metadata__" string map), then the raw little-endian data.
"""

import json
import struct

import numpy as np

_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16,
           "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
           "U8": np.uint8, "BOOL": np.bool_}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def load(path):
    """Returns ({name: ndarray}, metadata dict)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    meta = header.pop("__metadata__", {}) or {}
    tensors = {}
    for name, info in header.items():
        dtype = info["dtype"]
        if dtype == "BF16":
            begin, end = info["data_offsets"]
            raw = np.frombuffer(data[base + begin:base + end], dtype=np.uint16)
            arr = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            begin, end = info["data_offsets"]
            arr = np.frombuffer(data[base + begin:base + end],
                                dtype=_DTYPES[dtype])
        tensors[name] = arr.reshape(info["shape"]).copy()
    return tensors, meta


def save(path, tensors, metadata=None):
    header = {}
    offset = 0
    blobs = []
    for name, arr in tensors.items():
        # ascontiguousarray would turn a scalar into shape [1].
        arr = np.asarray(arr, order="C")
        raw = arr.tobytes()
        header[name] = {"dtype": _NAMES[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)
