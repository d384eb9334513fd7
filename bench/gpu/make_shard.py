#!/usr/bin/env python3
"""Writes a synthetic token shard in llm.c's layout (runtime/data/TokenData.h):
a 256 x int32 header (magic 20240520, version 1, token count), then uint16
tokens drawn uniformly from [0, VOCAB).

    make_shard.py PATH COUNT VOCAB [SEED]

Plain python3 (no numpy): the GPU node may not have it.
"""
import array
import random
import sys


def main():
    path, count, vocab = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    header = array.array("i", [0] * 256)
    header[0], header[1], header[2] = 20240520, 1, count
    rng = random.Random(seed)
    tokens = array.array("H", (rng.randrange(vocab) for _ in range(count)))
    if sys.byteorder != "little":
        header.byteswap()
        tokens.byteswap()
    with open(path, "wb") as f:
        header.tofile(f)
        tokens.tofile(f)


if __name__ == "__main__":
    main()
