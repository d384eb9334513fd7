# -*- Python -*-
# lit configuration for tgc: the tools under test come from build/bin, lit and
# FileCheck from Debian's LLVM 22. Features for optional machinery (torch,
# mpi, cuda, simt) are added only when that thing really works here.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config

config.name = "tgc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".json"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tgc_obj_root, "test")

config.environment["FILECHECK_OPTS"] = (
    "-enable-var-scope --allow-unused-prefixes=false")
# tgc's build cache (compiled layer bodies and steps) for the whole suite,
# inside the build tree: tests that build the same program share objects,
# and nothing is written to the user's ~/.cache.
config.environment["TGC_CACHE_DIR"] = os.path.join(config.test_exec_root,
                                                   "build-cache")

llvm_config.use_default_substitutions()
config.substitutions.append(("%tgc_src", config.tgc_src_root))
config.substitutions.append(("%tgc_obj", config.tgc_obj_root))
config.substitutions.append(("%examples", os.path.join(config.tgc_src_root, "examples")))
# The 8x8 digits Debian's python3-sklearn ships (scripts/setup.sh installs it).
config.substitutions.append(
    ("%digits", "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"))

tool_dirs = [config.tgc_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["tg-opt"], tool_dirs)
for tool in ["tg-translate", "tgc", "tg-data", "tg-shard-solve", "tg-ckpt"]:
    if os.path.exists(os.path.join(config.tgc_tools_dir, tool)):
        llvm_config.add_tool_substitutions([tool], tool_dirs)
# Our tools first, then LLVM's (not, count, FileCheck), then the system's.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.tgc_tools_dir, append_path=True)


def python_with(module):
    """The interpreter that imports `module` (Debian's torch lives in /usr/bin/python3)."""
    for python in ["/usr/bin/python3", shutil.which("python3")]:
        if python and os.path.exists(python):
            if subprocess.run([python, "-c", "import " + module],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                return python
    return None


python = python_with("numpy") or "/usr/bin/python3"
config.substitutions.append(("%python", python))
if python_with("torch"):
    config.available_features.add("torch")
    config.substitutions.append(("%torch_python", python_with("torch")))
else:
    lit_config.note("torch is not importable: tests that REQUIRE torch are skipped")
# tgc built with ONNX import (libonnx-dev), and the onnx Python package that
# writes the tests' models (python3-onnx).
if getattr(config, "tgc_have_onnx", False):
    config.available_features.add("onnx-import")
else:
    lit_config.note("tgc was built without ONNX: tests that REQUIRE onnx-import are skipped")
if python_with("onnx"):
    config.available_features.add("onnx-python")
    config.substitutions.append(("%onnx_python", python_with("onnx")))
else:
    lit_config.note("onnx is not importable: tests that REQUIRE onnx-python are skipped")
# COIN-OR CBC, tg-remat's exact solver (scripts/setup.sh installs it).
if shutil.which("cbc"):
    config.available_features.add("cbc")
else:
    lit_config.note("no cbc: tests that REQUIRE cbc (tg-remat's exact solver) are skipped")

# x86-64 with AVX2 and FMA: OpenBLAS has kernels newer than its fallback
# (openblas-kernels.test).
try:
    with open("/proc/cpuinfo") as cpuinfo:
        cpu_flags = next((l.split(":", 1)[1].split() for l in cpuinfo
                          if l.startswith("flags")), [])
except OSError:
    cpu_flags = []
if {"avx2", "fma"} <= set(cpu_flags):
    config.available_features.add("avx2")
else:
    lit_config.note("no AVX2 and FMA: openblas-kernels.test is skipped")

if shutil.which("mpirun"):
    config.available_features.add("mpi")
    # Loopback only, more ranks than cores, and root where CI runs as root.
    mpirun = ["mpirun", "--oversubscribe", "--mca", "btl", "self,tcp",
              "--mca", "btl_tcp_if_include", "lo",
              "--mca", "oob_tcp_if_include", "lo"]
    if os.geteuid() == 0:
        mpirun.append("--allow-run-as-root")
    config.substitutions.append(("%mpirun", " ".join(mpirun)))
else:
    lit_config.note("mpirun not found: tests that REQUIRE mpi are skipped")
if shutil.which("nvidia-smi") and subprocess.run(
        ["nvidia-smi", "-L"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("cuda")
# simt: the CUDA half built for this host (runtime/cuda/simt), which
# `tgc --target=cuda --simt` links: CUDA executables run without a GPU.
# Tests that run CUDA executables REQUIRE `cuda || simt` and build them with
# %cuda_target: on the GPU when there is one, else on the host.
if os.path.exists(os.path.join(config.tgc_obj_root, "lib",
                               "libtgc_runtime_cuda_simt.a")):
    config.available_features.add("simt")
if "cuda" in config.available_features:
    config.substitutions.append(("%cuda_target", "--target=cuda"))
elif "simt" in config.available_features:
    config.substitutions.append(("%cuda_target", "--target=cuda --simt"))
    lit_config.note("no GPU visible: tests that REQUIRE cuda || simt run "
                    "their CUDA executables on the host (runtime/cuda/simt)")
else:
    lit_config.note("no GPU visible and no runtime/cuda/simt: tests that "
                    "REQUIRE cuda are skipped")
if shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"):
    config.available_features.add("nvcc")
