# Sourced by scripts that run CPU executables (scripts/demo.sh,
# bench/cpu/run.sh). OpenBLAS picks its kernels by the CPU's model when the
# library loads, and on a CPU whose model it does not know (a virtual
# machine that masks it) falls back to its oldest, Prescott's (SSE3): 3.6x
# slower steps on the development VM
# (bench/results/openblas-coretype-2026-11-30.md). tgc's executables choose
# the same way themselves (runtime/train/BlasCore.cpp); this is for what
# runs beside them in the same OpenBLAS, PyTorch the reference first, so
# that both sides get the same kernels. Unless the caller chose,
# name the core by what the CPU can do: SkylakeX's kernels need AVX-512
# F/BW/DQ/VL, Haswell's AVX2 and FMA.
if [[ -z ${OPENBLAS_CORETYPE:-} && -r /proc/cpuinfo ]]; then
  openblas_flags=$(grep -m1 '^flags' /proc/cpuinfo)
  openblas_has() { for f; do [[ " $openblas_flags " == *" $f "* ]] || return 1; done; }
  if openblas_has avx512f avx512bw avx512dq avx512vl; then
    export OPENBLAS_CORETYPE=SkylakeX
  elif openblas_has avx2 fma; then
    export OPENBLAS_CORETYPE=Haswell
  fi
  unset -f openblas_has
  unset openblas_flags
fi
