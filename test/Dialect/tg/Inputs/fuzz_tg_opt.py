#!/usr/bin/env python3
"""Feeds mutated copies of a tg IR file to tg-opt and checks that none crashes.

Usage: fuzz_tg_opt.py --tool PATH/tg-opt --seed-file ops.mlir
                      [--count 200] [--seed 1] [--work-dir DIR]

Each input is the seed file (whole, or cut into one `// -----` chunk per
function so that a mutation in one function leaves the others to reach the
verifier and the folders) with a few random mutations: byte flips, a
truncation, deleted or duplicated lines, numbers replaced by edge values, and
element types swapped. Each input runs through
`tg-opt -split-input-file -canonicalize -cse`, which parses, verifies, folds
and prints. tg-opt may accept an input (exit 0) or reject it with a
diagnostic (exit 1); any other exit, a signal, or a hang is a failure. When
tg-opt accepts an input, what it printed must be accepted again (the printer
and the parser agree).

The mutations are drawn from a seeded generator, so a run is reproducible; a
failing input is written to the work directory and named in the report.
"""

import argparse
import os
import random
import re
import subprocess
import sys

TIMEOUT_S = 30

# Values that sit on the edges of the shape arithmetic.
EDGE_NUMBERS = [
    "0", "1", "-1", "2", "3", "-2", "7", "100",
    "4611686018427387904", "9223372036854775807", "-9223372036854775808",
    "0.0", "-0.0", "1.0", "-1.0", "1.0e+300", "0x7FF0000000000000",
    "0x7FF8000000000000",
]
ELEMENT_TYPES = ["f32", "bf16", "f16", "f64", "i1", "i32", "i64", "i8",
                 "f8E4M3FN", "f8E5M2", "index"]
# Bytes that keep a flipped input close to something the lexer understands.
SYNTAX_BYTES = b"0123456789x?-+.,:;=<>()[]{}%@#!\"' \nabcdefiklmnoprstuvwxy_"

NUMBER = re.compile(rb"-?\b\d+(\.\d+)?(e[-+]?\d+)?\b")
TYPE = re.compile(rb"\b(" + b"|".join(t.encode() for t in ELEMENT_TYPES) +
                  rb")\b")


def split_functions(text):
    """The seed's functions, one `// -----` chunk each, without the module."""
    lines = [l for l in text.splitlines(keepends=True)
             if not l.startswith("module")]
    # The module's closing brace is the last line that is only a brace.
    del lines[max(i for i, l in enumerate(lines) if l.strip() == "}")]
    chunks, current = [], []
    for line in lines:
        if line.startswith("func.func") and current:
            chunks.append("".join(current))
            current = []
        current.append(line)
    chunks.append("".join(current))
    return "// -----\n".join(chunks).encode()


def flip_bytes(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(data))
        data[pos] = (rng.choice(SYNTAX_BYTES) if rng.random() < 0.8
                     else rng.randrange(256))
    return bytes(data)


def truncate(data, rng):
    return data[:rng.randrange(len(data))]


def edit_lines(data, rng):
    lines = data.splitlines(keepends=True)
    for _ in range(rng.randint(1, 4)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        if rng.random() < 0.6:
            del lines[i]
        else:
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
    return b"".join(lines)


def replace_match(data, pattern, choices, rng):
    matches = list(pattern.finditer(data))
    if not matches:
        return data
    for _ in range(rng.randint(1, 3)):
        m = rng.choice(matches)
        options = choices
        if data[:m.start()].endswith(b"array<"):
            # `array<index: ...>` crashes MLIR 22's own attribute parser
            # before any tg code runs (llvm/llvm-project#179045, fixed
            # upstream by #179075); leave that to upstream.
            options = [c for c in choices if c != "index"]
        new = rng.choice(options).encode()
        data = data[:m.start()] + new + data[m.end():]
        matches = list(pattern.finditer(data))
        if not matches:
            break
    return data


def replace_numbers(data, rng):
    return replace_match(data, NUMBER, EDGE_NUMBERS, rng)


def replace_types(data, rng):
    return replace_match(data, TYPE, ELEMENT_TYPES, rng)


MUTATIONS = [flip_bytes, truncate, edit_lines, replace_numbers, replace_numbers,
             replace_types, replace_types]


def run(tool, path):
    """tg-opt's exit code and output on `path`; None for the code on a hang."""
    try:
        proc = subprocess.run(
            [tool, path, "-split-input-file", "-canonicalize", "-cse"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, b"", b"timed out after %d s" % TIMEOUT_S
    return proc.returncode, proc.stdout, proc.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True)
    parser.add_argument("--seed-file", required=True)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work-dir", default=".")
    args = parser.parse_args()

    os.makedirs(args.work_dir, exist_ok=True)
    with open(args.seed_file, "rb") as f:
        whole = f.read()
    split = split_functions(whole.decode())
    rng = random.Random(args.seed)

    failures, accepted = [], 0
    for i in range(args.count):
        data = split if i % 2 else whole
        for _ in range(rng.randint(1, 3)):
            data = rng.choice(MUTATIONS)(data, rng)
        path = os.path.join(args.work_dir, "input-%03d.mlir" % i)
        with open(path, "wb") as f:
            f.write(data)

        code, out, err = run(args.tool, path)
        if code not in (0, 1):
            failures.append((path, "exit %s" % code, err))
            continue
        os.remove(path)
        if code != 0:
            continue
        accepted += 1
        # What tg-opt printed must read back. The printed chunks are
        # separated by `// -----` again.
        printed = path.replace(".mlir", ".printed.mlir")
        with open(printed, "wb") as f:
            f.write(out)
        code, _, err = run(args.tool, printed)
        if code != 0:
            failures.append((printed, "printed form rejected (exit %s)" % code,
                             err))
            continue
        os.remove(printed)

    for path, what, err in failures:
        # The diagnostics and the innermost frames of a stack dump.
        head = err.decode(errors="replace").strip().splitlines()[:25]
        print("FAIL %s: %s\n  %s" % (path, what, "\n  ".join(head)))
    print("%d inputs, %d accepted, %d rejected with a diagnostic, %d failed" %
          (args.count, accepted, args.count - accepted - len(failures),
           len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
