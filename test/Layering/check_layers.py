#!/usr/bin/env python3
"""Checks that no source includes a header from a folder above its own.

The folders, lowest first (each may include its own headers and those of
the folders it lists):

  runtime            the executables' runtime: plain C++, not even LLVM
  dialects           the tg dialect
  planning           cost model, cluster specs, schedules, solver, LP
  passes             every decision, as a pass
  frontend           model files to tg and back
  compiler/codegen   the emitters: translations of planned IR
  compiler/pipeline  the phases and the host-compile step
  tools, test, bench anything

Also checks that the headers CMake generates say nothing about where the
source tree is: a tool finds its files beside its binary, not through a
path compiled in.

Usage: check_layers.py <repository root>; prints each violation as
"file:line: includes X (a layer above)" and exits 1 when there is one.
"""
import pathlib
import re
import sys

ALLOWED = {
    "runtime": {"runtime"},
    "dialects": {"dialects"},
    "planning": {"dialects", "planning"},
    "passes": {"dialects", "planning", "passes"},
    "frontend": {"dialects", "frontend"},
    "compiler/codegen": {"dialects", "planning", "passes", "compiler/codegen"},
    "compiler/pipeline": {"dialects", "planning", "passes", "frontend",
                          "compiler/codegen", "compiler/pipeline"},
}
# Libraries a layer must not use, though they are not ours.
FOREIGN = {"runtime": {"llvm", "mlir"}}
PROJECT = {"runtime", "dialects", "planning", "passes", "frontend",
           "compiler/codegen", "compiler/pipeline", "tools", "test", "bench"}
SOURCES = {".h", ".cpp", ".cu", ".cuh", ".inc", ".td"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    """The layer a repository-relative path or include belongs to."""
    parts = pathlib.PurePosixPath(path).parts
    if len(parts) >= 2 and parts[0] == "compiler":
        return "compiler/" + parts[1]
    return parts[0] if parts else ""


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    problems = []
    checked = 0
    for folder, allowed in ALLOWED.items():
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SOURCES or not path.is_file():
                continue
            checked += 1
            rel = path.relative_to(root).as_posix()
            for number, line in enumerate(
                    path.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = layer_of(match.group(1))
                if target in FOREIGN.get(folder, ()):
                    problems.append(f"{rel}:{number}: includes "
                                    f"{match.group(1)} ({folder} does not "
                                    f"use {target})")
                elif target in PROJECT and target not in allowed:
                    problems.append(f"{rel}:{number}: includes "
                                    f"{match.group(1)} (layer {target} is "
                                    f"not below {folder})")
    for template in sorted(root.rglob("*.h.in")):
        if template.relative_to(root).parts[0].startswith("build"):
            continue
        text = template.read_text()
        for word in ("CMAKE_SOURCE_DIR", "PROJECT_SOURCE_DIR",
                     "CMAKE_CURRENT_SOURCE_DIR"):
            if word in text:
                problems.append(f"{template.relative_to(root).as_posix()}: "
                                f"a generated header holds @{word}@")
    for problem in problems:
        print(problem)
    print(f"layers: {checked} files checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
