"""Reads an executable's output run with OPENBLAS_VERBOSE=2 (each load of
OpenBLAS prints "Core: NAME") and says what openblas-kernels.test checks:
argv: the log, and the case (chosen: the executable chose the kernels;
user: the user named Prescott; own: nothing preloaded)."""
import re
import sys

text = open(sys.argv[1]).read()
case = sys.argv[2]
cores = re.findall(r"^Core: (\S+)", text, re.M)
flags = set()
for line in open("/proc/cpuinfo"):
    if line.startswith("flags"):
        flags = set(line.split(":", 1)[1].split())
        break
if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
    newest = "SkylakeX"
else:
    newest = "Haswell"
old = {"prescott", "core2", "penryn", "dunnington", "nehalem", "sandybridge",
       "atom", "katmai", "coppermine", "northwood", "banias"}
blas = re.search(r"^blas: OpenBLAS kernels %s \(chosen by the executable: "
                 r"OpenBLAS took Prescott's for this CPU" % newest, text, re.M)
if case == "chosen":
    print("loads: %d, the last with the CPU's newest kernels: %s"
          % (len(cores), bool(cores) and cores[-1].lower() == newest.lower()))
elif case == "user":
    print("loads: %d, the core the user named: %s"
          % (len(cores), bool(cores) and cores[-1].lower() == "prescott"))
else:
    print("loads: %s, the last not older than AVX2: %s"
          % ("1 or 2" if 1 <= len(cores) <= 2 else len(cores),
             bool(cores) and cores[-1].lower() not in old))
print("blas line: %s" % bool(blas))
