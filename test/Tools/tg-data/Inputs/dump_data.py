#!/usr/bin/env python3
# dump_data.py - read tg-data's outputs with numpy, independently of tgc.
#
#   dump_data.py tokens BIN...       the shard headers and every token
#   dump_data.py rows TGCLS          the header, then "label: features" per
#                                    row, floats in their shortest float32 form
#   dump_data.py same-bytes --files F... --bins B...
#                                    checks the shards, concatenated, hold
#                                    exactly the bytes of the files
#   dump_data.py same-rows CSV TGCLS... [--scale X]
#                                    checks the files' rows, taken together,
#                                    are the CSV's rows (features / X), each
#                                    exactly once
import argparse
import gzip
import sys

import numpy as np


def read_shard(path):
    header = np.fromfile(path, dtype=np.int32, count=256)
    assert header[0] == 20240520, "%s: magic %d" % (path, header[0])
    assert header[1] == 1, "%s: version %d" % (path, header[1])
    assert not header[3:].any(), "%s: header[3:] not zero" % path
    tokens = np.fromfile(path, dtype=np.uint16, offset=256 * 4)
    assert len(tokens) == header[2], "%s: %d tokens, header says %d" % (
        path, len(tokens), header[2])
    return tokens


def read_tgcls(path):
    header = np.fromfile(path, dtype=np.int64, count=32)
    assert header[0] == 20240521 and header[1] == 1, path
    assert not header[6:].any(), "%s: header[6:] not zero" % path
    n, f, c, label_bytes = (int(v) for v in header[2:6])
    x = np.fromfile(path, dtype=np.float32, count=n * f, offset=256).reshape(n, f)
    label_type = np.int32 if label_bytes == 4 else np.int64
    y = np.fromfile(path, dtype=label_type, offset=256 + 4 * n * f)
    assert len(y) == n, "%s: %d labels for %d rows" % (path, len(y), n)
    return n, f, c, label_bytes, x, y


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    tokens = sub.add_parser("tokens")
    tokens.add_argument("bins", nargs="+")
    rows = sub.add_parser("rows")
    rows.add_argument("tgcls")
    same = sub.add_parser("same-bytes")
    same.add_argument("--files", nargs="+", required=True)
    same.add_argument("--bins", nargs="+", required=True)
    same_rows = sub.add_parser("same-rows")
    same_rows.add_argument("csv")
    same_rows.add_argument("tgcls", nargs="+")
    same_rows.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()

    if args.command == "tokens":
        for path in args.bins:
            t = read_shard(path)
            print("%d tokens: %s" % (len(t), " ".join(str(v) for v in t)))
    elif args.command == "rows":
        n, f, c, label_bytes, x, y = read_tgcls(args.tgcls)
        print("rows %d features %d classes %d label bytes %d" % (n, f, c, label_bytes))
        for row, label in zip(x, y):
            print("%d: %s" % (label, " ".join(
                np.format_float_positional(v, unique=True, trim="-") for v in row)))
    elif args.command == "same-bytes":
        want = b"".join(open(p, "rb").read() for p in args.files)
        got = np.concatenate([read_shard(p) for p in args.bins])
        if got.tolist() != list(want):
            print("MISMATCH: %d tokens, %d bytes" % (len(got), len(want)))
            sys.exit(1)
        print("tokens are the bytes: %d" % len(got))
    else:
        opener = gzip.open if args.csv.endswith(".gz") else open
        table = np.loadtxt(opener(args.csv, "rt"), delimiter=",")
        want = sorted(tuple(np.float32(v / args.scale) for v in r[:-1]) + (int(r[-1]),)
                      for r in table)
        got = []
        for path in args.tgcls:
            _, _, _, _, x, y = read_tgcls(path)
            got += [tuple(r) + (int(label),) for r, label in zip(x, y)]
        if sorted(got) != want:
            print("MISMATCH: %d rows, the CSV has %d" % (len(got), len(want)))
            sys.exit(1)
        print("rows are the CSV's rows: %d" % len(got))


if __name__ == "__main__":
    main()
