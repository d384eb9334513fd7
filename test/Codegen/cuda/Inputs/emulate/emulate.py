#!/usr/bin/env python3
"""Builds a tgc-generated .cu as a host executable (see prelude.h):

    emulate.py GENERATED.cu MODEL OUT_EXE CPU_EXE

Turns each `kernel<<<grid, block, 0, stream>>>(args)` into `kernel(args)` in
it and in the runtime's step driver (runtime/cuda/StepProgram.cu, which every
generated .cu runs on), compiles both as C++ with prelude.h and emulate.cpp
(the rest of runtime/cuda and the CUDA runtime), and links them like
the CPU executable tgc builds for MODEL (CPU_EXE, built here with `tgc -v` to
learn the host compiler, the include root and the runtime's link line).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def cuda_include_dir():
    """Where nvcc finds cuda_bf16.h: asked of nvcc itself, since the nvcc on
    PATH may be a wrapper script far from the toolkit (/usr/local/bin/nvcc)."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    dry = subprocess.run([nvcc, "--dryrun", "-x", "cu", "-c", os.devnull,
                          "-o", os.devnull], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    for line in dry.stdout.splitlines():
        match = re.search(r'INCLUDES="-I([^"]+)"', line)
        if match and os.path.exists(os.path.join(match.group(1),
                                                 "cuda_bf16.h")):
            return match.group(1)
    fallback = os.path.join(os.path.dirname(os.path.dirname(
        os.path.realpath(nvcc))), "include")
    if not os.path.exists(os.path.join(fallback, "cuda_bf16.h")):
        sys.exit("emulate.py: %s does not say where cuda_bf16.h is" % nvcc)
    return fallback


def host_source(cu, out):
    """Writes `cu` to `out` with its launches turned into calls."""
    text, launches = re.subn(r"\b(\w+)<<<[^;]*?>>>\(", r"\1(",
                             open(cu).read())
    if not launches:
        sys.exit("emulate.py: no kernel launch in %s" % cu)
    with open(out, "w") as f:
        f.write(text)
    return out


def main():
    source, model, exe, cpu_exe = sys.argv[1:5]
    tgc = shutil.which("tgc")
    if not tgc:
        sys.exit("emulate.py: tgc is not on PATH")
    # The CPU executable, and the command that built it.
    built = subprocess.run([tgc, model, "-o", cpu_exe, "-v", "--opt-level=1"],
                           check=True, stderr=subprocess.PIPE, text=True)
    command = shlex.split(built.stderr.strip().splitlines()[0])
    compiler = command[0]
    include = [a for a in command if a.startswith("-I")]
    # A sanitizer build's runtime (make sanitize) needs them here too.
    sanitize = [a for a in command if a.startswith("-fsanitize")
                or a == "-fno-omit-frame-pointer"]
    link = command[next(i for i, a in enumerate(command)
                        if a.startswith("-L")):]

    host = host_source(source, exe + ".cpp")
    roots = [a[2:] for a in include] + [os.path.join(HERE, *[".."] * 5)]
    step_program = next(
        (p for p in (os.path.join(r, "runtime", "cuda", "StepProgram.cu")
                     for r in roots) if os.path.exists(p)), None)
    if not step_program:
        sys.exit("emulate.py: no runtime/cuda/StepProgram.cu under %s"
                 % " or ".join(roots))
    step_host = host_source(step_program, exe + "-StepProgram.cpp")

    cuda_include = cuda_include_dir()
    cmd = [compiler, "-std=c++17", "-O1", "-fopenmp", "-w"] + sanitize + [
           "-include", os.path.join(HERE, "prelude.h")] + include + [
        "-I" + cuda_include, host, step_host,
        os.path.join(HERE, "emulate.cpp"), "-o", exe] + link
    subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
