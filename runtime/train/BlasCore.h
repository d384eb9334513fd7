//===- BlasCore.h - OpenBLAS's kernels for this CPU -------------*- C++ -*-===//
//
// Debian's OpenBLAS (built for every x86 core, DYNAMIC_ARCH) picks its
// kernels by the CPU's model when the library loads. A CPU whose model it
// does not know (a virtual machine that masks it) gets its oldest kernels,
// Prescott's (SSE3): a GPT-2 124M-width step ran 3.6x slower so on the
// development VM (bench/results/openblas-coretype-2026-11-30.md). The
// variable OPENBLAS_CORETYPE names the kernels instead, but is read only
// when the library loads, before main. So a CPU executable that finds
// OpenBLAS on kernels older than its CPU runs (no AVX2 where the CPU has
// AVX2 and FMA, or AVX-512 F/BW/DQ/VL) starts itself again with the
// variable set, first thing: before any thread, file or process group
// exists. A user's own OPENBLAS_CORETYPE is never overridden.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_TRAIN_BLASCORE_H
#define TGC_RUNTIME_TRAIN_BLASCORE_H

#include <string>

namespace tgc {

/// Starts the executable again (execv of /proc/self/exe with `argv`) with
/// OPENBLAS_CORETYPE set to the newest kernels the CPU runs, when
/// OpenBLAS is linked, the variable is unset and OpenBLAS chose older
/// ones; returns otherwise (also when the start fails: the run goes on
/// with the kernels it has).
void chooseBlasKernels(char **argv);

/// For the log, where the executable chose the kernels itself: "OpenBLAS
/// kernels SkylakeX (chosen by the executable: OpenBLAS took Prescott's
/// for this CPU; set OPENBLAS_CORETYPE to choose)"; "" otherwise.
std::string blasKernelsNote();

} // namespace tgc

#endif // TGC_RUNTIME_TRAIN_BLASCORE_H
