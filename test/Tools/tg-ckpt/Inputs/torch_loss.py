#!/usr/bin/env python3
"""PyTorch reads a consolidated checkpoint: the safetensors file is parsed
the way safetensors.torch.load_file does it (header, then torch.frombuffer
per tensor), its parameters go into the model file's graph in PyTorch
(Integration/lib/torch_model.py), and the loss on the first batch of the
token file, in file order, is compared with the executable's
(--dump-grads writes it).

Usage: torch_loss.py MODEL.json CHECKPOINT TOKENS.bin DUMP.safetensors
"""
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "Integration", "lib"))
import safetensors_np  # noqa: E402
import torch_model  # noqa: E402

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
          "I64": torch.int64, "I32": torch.int32}


def load_torch(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        out[name] = torch.frombuffer(raw, dtype=DTYPES[info["dtype"]]).reshape(
            info["shape"]).clone()
    return out


def main():
    model_file, checkpoint, tokens_file, dump = sys.argv[1:5]
    spec = json.load(open(model_file))
    tensors = load_torch(checkpoint)
    model = torch_model.Model(spec)
    params = {name: tensors[name] for name in model.param_names}
    tok, tgt = [i for i in spec["inputs"] if i.get("dtype") in ("i32", "i64")]
    batch, seq = tok["shape"]
    tokens = np.fromfile(tokens_file, dtype=np.uint16, offset=1024)
    rows = np.stack([tokens[r * seq:r * seq + seq + 1] for r in range(batch)])
    inputs = {tok["name"]: torch.tensor(rows[:, :-1].astype(np.int64)),
              tgt["name"]: torch.tensor(rows[:, 1:].astype(np.int64))}
    with torch.no_grad():
        loss, _ = model.forward(params, inputs)
    ours = float(safetensors_np.load(dump)[0]["loss"])
    err = abs(loss.item() - ours) / abs(ours)
    print("%d tensors read by torch; loss %.6f, ours %.6f: %s" %
          (len(tensors), loss.item(), ours, "agree" if err < 1e-5 else
           "DIFFERENT (rel %.2e)" % err))
    return 0 if err < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
