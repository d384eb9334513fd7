#!/usr/bin/env python3
"""Feeds mutated inputs to tg-opt and tg-translate and checks that none crashes.

Usage: fuzz_tg_opt.py --tool PATH/tg-opt --seed-file ops.mlir
                      [--count 200] [--seed 1] [--work-dir DIR] [--jobs N]
       fuzz_tg_opt.py --mode model --tool PATH/tg-translate
                      --seed-file model.json [--seed-file more.json ...]
                      [--count 300] [--seed 1] [--work-dir DIR] [--jobs N]

--mode mlir (the default) mutates a tg IR file: the seed whole, or cut into
one `// -----` chunk per function so that a mutation in one function leaves
the others to reach the verifier and the folders, with a few random
mutations: byte flips, a truncation, deleted or duplicated lines, numbers
replaced by edge values, and element types swapped. Each input runs through
`tg-opt -split-input-file -canonicalize -cse`, which parses, verifies, folds
and prints; when tg-opt accepts an input, what it printed must be accepted
again (the printer and the parser agree).

--mode model mutates model files for `tg-translate --import-model`: JSON text
(byte flips, truncations, line edits, edge numbers, swapped op, dtype,
attribute and tensor names, and mutations of the parsed JSON tree: keys
dropped or added, values of the wrong kind, lists shuffled), binary .tgm files
written from the seeds (byte and word overwrites with edge offsets,
truncations, insertions, random bytes behind a valid header), and the tg IR
of the seeds mutated as above for `tg-translate --export-model`. When an
import is accepted, exporting it and importing the result must give the
same IR.

Either way a tool may accept an input (exit 0) or reject it with a diagnostic
(exit 1 and "error:" on stderr); any other exit, a signal, a sanitizer report
or a hang is a failure. The mutations are drawn from a seeded generator, so a run is
reproducible; a failing input is kept in the work directory and named in the
report.
"""

import argparse
import concurrent.futures
import glob
import json
import os
import random
import re
import shutil
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

# Model files: numbers on the edges of the schema's integer types and of the
# shape rules, and names from every vocabulary the importer resolves.
JSON_EDGE_NUMBERS = [
    "0", "1", "-1", "2", "3", "-2", "7", "100", "65536", "2147483647",
    "2147483648", "-2147483649", "4294967296", "4611686018427387904",
    "9223372036854775807", "-9223372036854775808", "18446744073709551616",
    "1e308", "1e999", "-0.0", "0.5", "nan", "inf", "-inf",
]
OP_NAMES = [
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "compare",
    "select", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "relu",
    "silu", "sigmoid", "gelu", "cast", "matmul", "reduce_sum", "reduce_mean",
    "reduce_max", "softmax", "log_softmax", "layer_norm", "rms_norm",
    "dropout", "embedding", "cross_entropy", "attention", "conv2d",
    "max_pool2d", "avg_pool2d", "flatten", "reshape", "transpose", "slice",
    "concat", "broadcast_to", "constant", "gelu_grad", "layer_norm_grad",
    "embedding_grad", "all_reduce", "lr_schedule", "global_norm",
    "optimizer_update", "nonsense", "",
]
MODEL_WORDS = [
    "f32", "bf16", "f16", "f8e4m3", "f8e5m2", "i32", "i64", "i1", "f64",
    "zeros", "ones", "constant", "normal", "uniform", "xavier_uniform",
    "kaiming_normal", "file", "batch", "seq", "", "axis", "dims", "keepdim",
    "perm", "shape", "start", "limit", "stride", "padding", "kernel_size",
    "transpose_rhs", "causal", "scale", "eps", "approximate", "tanh",
    "reduction", "none", "sum", "dtype", "value", "adamw", "sgd", "cosine",
    "fp32", "bf16",
]
JSON_SYNTAX_BYTES = b"0123456789-+.,:[]{}\"' \nabcdefilnorstu_"
JSON_STRING = re.compile(rb'"([^"\\\n]*)"')
JSON_NUMBER = re.compile(rb"-?\b\d+(\.\d+)?([eE][-+]?\d+)?\b")
# 32-bit values that make FlatBuffers offsets and lengths point elsewhere.
EDGE_WORDS = [0, 1, 2, 4, 8, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF,
              0x80000000, 0xFFFFFFFC, 0xFFFFFFFF]


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


def flip_bytes(data, rng, syntax=SYNTAX_BYTES):
    if not data:
        return data
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        pos = rng.randrange(len(data))
        data[pos] = (rng.choice(syntax) if rng.random() < 0.8
                     else rng.randrange(256))
    return bytes(data)


def truncate(data, rng):
    return data[:rng.randrange(len(data))] if data else data


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

#===----------------------------------------------------------------------===#
# Model file mutations
#===----------------------------------------------------------------------===#


def json_flip_bytes(data, rng):
    return flip_bytes(data, rng, JSON_SYNTAX_BYTES)


def json_numbers(data, rng):
    return replace_match(data, JSON_NUMBER, JSON_EDGE_NUMBERS, rng)


def json_strings(data, rng):
    """Swaps quoted strings for op names, schema words or other strings of
    the same file (tensor names, so that graphs rewire)."""
    matches = list(JSON_STRING.finditer(data))
    if not matches:
        return data
    pool = [m.group(1).decode(errors="replace") for m in matches]
    for _ in range(rng.randint(1, 3)):
        m = rng.choice(matches)
        word = rng.choice([rng.choice(OP_NAMES), rng.choice(MODEL_WORDS),
                           rng.choice(pool)])
        data = data[:m.start()] + json.dumps(word).encode() + data[m.end():]
        matches = list(JSON_STRING.finditer(data))
        if not matches:
            break
    return data


def random_value(rng, depth=0):
    kind = rng.randrange(8 if depth < 2 else 6)
    if kind == 0:
        return rng.choice([0, 1, -1, 3, 2**31, -2**63, 2**62])
    if kind == 1:
        return rng.choice([0.0, -1.5, 1e-5, 1e300])
    if kind == 2:
        return rng.choice([True, False])
    if kind == 3:
        return rng.choice(OP_NAMES + MODEL_WORDS)
    if kind == 4:
        return None
    if kind == 5:
        return [rng.choice([-1, 0, 1, 2, 4]) for _ in range(rng.randrange(4))]
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(MODEL_WORDS + ["name", "op", "inputs", "outputs"]):
            random_value(rng, depth + 1) for _ in range(rng.randrange(3))}


def containers(value, out):
    if isinstance(value, dict):
        out.append(value)
        for v in value.values():
            containers(v, out)
    elif isinstance(value, list):
        out.append(value)
        for v in value:
            containers(v, out)
    return out


def json_tree(data, rng):
    """Mutates the parsed JSON: a key dropped, added or given a value of
    another kind, a list element dropped, duplicated or reordered."""
    try:
        tree = json.loads(data)
    except ValueError:
        return json_flip_bytes(data, rng)
    for _ in range(rng.randint(1, 3)):
        nodes = containers(tree, [])
        node = rng.choice(nodes)
        action = rng.randrange(4)
        if isinstance(node, dict):
            keys = list(node)
            if action == 0 and keys:
                del node[rng.choice(keys)]
            elif action == 1 or not keys:
                node[rng.choice(MODEL_WORDS + ["loss", "outputs", "name"])] = \
                    random_value(rng)
            else:
                node[rng.choice(keys)] = random_value(rng)
        elif isinstance(node, list) and node:
            i = rng.randrange(len(node))
            if action == 0:
                del node[i]
            elif action == 1:
                node.insert(rng.randrange(len(node) + 1), node[i])
            elif action == 2:
                rng.shuffle(node)
            else:
                node[i] = random_value(rng)
    return json.dumps(tree).encode()


def json_semantic(data, rng):
    """Changes that keep the file valid for the schema and so reach the
    graph: an op swapped for another, an input rewired, a shape or attribute
    value changed, a node dropped or moved, an attribute of another kind."""
    try:
        return rewire(json.loads(data), rng)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError):
        # Not a model any more (an earlier mutation broke it).
        return json_tree(data, rng)


def rewire(model, rng):
    nodes = model["nodes"]
    if not isinstance(nodes, list) or not nodes:
        raise ValueError("no nodes")
    tensors = [p.get("name", "") for p in model.get("params", [])] + \
        [i.get("name", "") for i in model.get("inputs", [])] + \
        [o for n in nodes for o in n.get("outputs", [])]
    for _ in range(rng.randint(1, 2)):
        node = rng.choice(nodes)
        action = rng.randrange(8)
        if action == 0:
            node["op"] = rng.choice(OP_NAMES[:43])
        elif action == 1 and node.get("inputs"):
            inputs = node["inputs"]
            inputs[rng.randrange(len(inputs))] = rng.choice(tensors)
        elif action == 2:
            node.setdefault("inputs", []).append(rng.choice(tensors))
        elif action == 3 and node.get("attrs"):
            attr = rng.choice(node["attrs"])
            if "ints" in attr and attr["ints"]:
                attr["ints"][rng.randrange(len(attr["ints"]))] = \
                    rng.randint(-3, 9)
            elif "i" in attr:
                attr["i"] = rng.randint(-3, 9)
            else:
                attr[rng.choice(["i", "f", "b", "s", "ints"])] = \
                    random_value(rng)
        elif action == 4:
            params = model.get("params") or model.get("inputs") or []
            if params:
                shape = rng.choice(params).setdefault("shape", [])
                if shape and rng.random() < 0.7:
                    shape[rng.randrange(len(shape))] = rng.randint(-1, 9)
                else:
                    shape.append(rng.randint(1, 4))
        elif action == 5:
            nodes.remove(node)
            if not nodes:
                break
        elif action == 6:
            i, j = rng.randrange(len(nodes)), rng.randrange(len(nodes))
            nodes[i], nodes[j] = nodes[j], nodes[i]
        else:
            node.setdefault("attrs", []).append(
                {"name": rng.choice(MODEL_WORDS),
                 rng.choice(["i", "f", "b", "s", "ints"]):
                 rng.choice([0, 1, -1, 2, [0, 1], [2, 2], "tanh", 0.5, True])})
    return json.dumps(model).encode()


JSON_MUTATIONS = [json_flip_bytes, truncate, edit_lines, json_numbers,
                  json_numbers, json_strings, json_strings, json_tree,
                  json_tree, json_semantic, json_semantic, json_semantic,
                  json_semantic, json_semantic]


def tgm_words(data, rng):
    """Overwrites aligned 32-bit words (offsets, lengths, vtable entries)."""
    if len(data) < 4:
        return data
    data = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        pos = rng.randrange(len(data) // 4) * 4
        word = rng.choice(EDGE_WORDS + [len(data), len(data) - 4,
                                        rng.randrange(len(data) + 1)])
        data[pos:pos + 4] = (word & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(data)


def tgm_splice(data, rng):
    """Inserts or deletes a few bytes, shifting everything behind them."""
    pos = rng.randrange(len(data) + 1)
    if rng.random() < 0.5:
        return data[:pos] + bytes(rng.randrange(256)
                                  for _ in range(rng.randint(1, 8))) + data[pos:]
    return data[:pos] + data[pos + rng.randint(1, 8):]


def tgm_random(data, rng):
    """Random bytes behind a valid root offset and identifier."""
    body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
    root = rng.randrange(8, 8 + len(body) + 1)
    return root.to_bytes(4, "little") + b"TGM1" + body


def tgm_flip_byte(data, rng):
    """One byte: mostly inside strings and scalars, which the verifier lets
    through to the importer."""
    if not data:
        return data
    data = bytearray(data)
    data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


TGM_MUTATIONS = [tgm_flip_byte, tgm_flip_byte, tgm_flip_byte, flip_bytes,
                 truncate, tgm_words, tgm_words, tgm_splice, tgm_random]

#===----------------------------------------------------------------------===#
# Running the tools
#===----------------------------------------------------------------------===#


def run(args, stdin=None):
    """The exit code and output of a command; None for the code on a hang."""
    try:
        proc = subprocess.run(args, input=stdin, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, b"", b"timed out after %d s" % TIMEOUT_S
    return proc.returncode, proc.stdout, proc.stderr


def bad_exit(code, err):
    """Why a run failed the fuzz test, or None when it behaved."""
    if code is None:
        return "hang"
    # Sanitizers exit with 1 by default, and UBSan's "runtime error:" would
    # pass for a diagnostic.
    if b"Sanitizer" in err or b"runtime error:" in err:
        return "sanitizer report (exit %s)" % code
    if code == 0:
        return None
    if code == 1:
        return None if b"error:" in err else "exit 1 without a diagnostic"
    return "exit %s" % code if code > 0 else "signal %d" % -code


def check_mlir(tool, path):
    """tg-opt on a mutated IR file; returns (failures, accepted)."""
    code, out, err = run([tool, path, "-split-input-file", "-canonicalize",
                          "-cse"])
    why = bad_exit(code, err)
    if why:
        return [(path, why, err)], False
    os.remove(path)
    if code != 0:
        return [], False
    # What tg-opt printed must read back. The printed chunks are separated
    # by `// -----` again.
    printed = path.replace(".mlir", ".printed.mlir")
    with open(printed, "wb") as f:
        f.write(out)
    code, _, err = run([tool, printed])
    if code != 0:
        return [(printed, "printed form rejected (exit %s)" % code, err)], True
    os.remove(printed)
    return [], True


def check_import(tool, path):
    """tg-translate --import-model on a mutated model file. An accepted
    model must survive export and import unchanged."""
    code, out, err = run([tool, "--import-model", path,
                          "--mlir-print-debuginfo"])
    why = bad_exit(code, err)
    if why:
        return [(path, why, err)], False
    if code != 0:
        os.remove(path)
        return [], False
    _, plain, _ = run([tool, "--import-model", path])
    for fmt in ("json", "tgm"):
        code, exported, err = run([tool, "--export-model", "-",
                                   "--model-format=" + fmt], stdin=out)
        if code != 0:
            return [(path, "accepted model does not export to %s (exit %s)"
                     % (fmt, code), err)], True
        code, again, err = run([tool, "--import-model", "-",
                                "--model-format=" + fmt], stdin=exported)
        if code != 0 or again != plain:
            return [(path, "%s round trip changed the IR (exit %s)"
                     % (fmt, code), err)], True
    os.remove(path)
    return [], True


def check_export(tool, path):
    """tg-translate --export-model on mutated tg IR."""
    code, _, err = run([tool, "--export-model", path])
    why = bad_exit(code, err)
    if why:
        return [(path, why, err)], False
    os.remove(path)
    return [], code == 0


def check_onnx(tool, path):
    """tg-translate --import-onnx on a mutated ONNX file (protobuf: the
    byte mutations of .tgm files apply)."""
    weights = path + ".safetensors"
    code, _, err = run([tool, "--import-onnx", path, "--weights", weights])
    why = bad_exit(code, err)
    if why:
        return [(path, why, err)], False
    os.remove(path)
    if os.path.exists(weights):
        os.remove(weights)
    return [], code == 0


def mutate(data, mutations, rng, counts=(1, 2, 3)):
    for _ in range(rng.choice(counts)):
        data = rng.choice(mutations)(data, rng)
    return data


# Model files: mostly one mutation, so that many inputs get past the schema
# and reach the graph builder, the shape rules and the verifiers.
MODEL_COUNTS = (1, 1, 1, 1, 1, 1, 1, 2, 2, 3)


def mlir_inputs(args, rng):
    with open(args.seed_file[0], "rb") as f:
        whole = f.read()
    split = split_functions(whole.decode())
    for i in range(args.count):
        data = mutate(split if i % 2 else whole, MUTATIONS, rng)
        path = os.path.join(args.work_dir, "input-%03d.mlir" % i)
        yield path, data, check_mlir


def model_inputs(args, rng):
    """JSON (60%), .tgm (25%) and tg IR for export (15%), from the seeds."""
    json_seeds, tgm_seeds, mlir_seeds = [], [], []
    for seed in args.seed_file:
        # Initializer files sit next to the seed; the mutants need them too.
        for extra in glob.glob(os.path.join(os.path.dirname(seed),
                                            "*.safetensors")):
            shutil.copy(extra, args.work_dir)
        with open(seed, "rb") as f:
            json_seeds.append(f.read())
        code, ir, err = run([args.tool, "--import-model", seed,
                             "--mlir-print-debuginfo"])
        if code != 0:
            sys.exit("seed %s does not import:\n%s" % (seed, err.decode()))
        mlir_seeds.append(ir)
        code, tgm, err = run([args.tool, "--export-model", "-",
                              "--model-format=tgm"], stdin=ir)
        if code != 0:
            sys.exit("seed %s does not export:\n%s" % (seed, err.decode()))
        tgm_seeds.append(tgm)
    for i in range(args.count):
        kind = rng.random()
        if kind < 0.6:
            data = mutate(rng.choice(json_seeds), JSON_MUTATIONS, rng,
                          MODEL_COUNTS)
            yield (os.path.join(args.work_dir, "input-%03d.json" % i), data,
                   check_import)
        elif kind < 0.85:
            data = mutate(rng.choice(tgm_seeds), TGM_MUTATIONS, rng,
                          MODEL_COUNTS)
            yield (os.path.join(args.work_dir, "input-%03d.tgm" % i), data,
                   check_import)
        else:
            data = mutate(rng.choice(mlir_seeds), MUTATIONS, rng)
            yield (os.path.join(args.work_dir, "input-%03d.mlir" % i), data,
                   check_export)


def onnx_inputs(args, rng):
    """Mutated ONNX models (protobuf bytes), from the seeds."""
    seeds = []
    for seed in args.seed_file:
        with open(seed, "rb") as f:
            seeds.append(f.read())
    for i in range(args.count):
        data = mutate(rng.choice(seeds), TGM_MUTATIONS, rng, MODEL_COUNTS)
        yield (os.path.join(args.work_dir, "input-%03d.onnx" % i), data,
               check_onnx)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", required=True)
    parser.add_argument("--mode", choices=["mlir", "model", "onnx"],
                        default="mlir")
    parser.add_argument("--seed-file", required=True, action="append")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--work-dir", default=".")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()

    os.makedirs(args.work_dir, exist_ok=True)
    rng = random.Random(args.seed)
    # The inputs are drawn in order (reproducible), then run in parallel.
    make = {"mlir": mlir_inputs, "model": model_inputs,
            "onnx": onnx_inputs}[args.mode]
    inputs = list(make(args, rng))
    for path, data, _ in inputs:
        with open(path, "wb") as f:
            f.write(data)

    failures, accepted = [], 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for found, ok in pool.map(lambda item: item[2](args.tool, item[0]),
                                  inputs):
            failures += found
            accepted += ok

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
