//===- BlasCore.cpp - OpenBLAS's kernels for this CPU ---------------------===//

#include "runtime/train/BlasCore.h"

#include <cstdlib>
#include <cstring>
#include <unistd.h>

// OpenBLAS's, when the executable links it (CPU targets); a CUDA-only
// runtime has none.
extern "C" char *openblas_get_corename(void) __attribute__((weak));

namespace tgc {

namespace {

/// Set beside OPENBLAS_CORETYPE when the executable chose it: the log says
/// so, and the new process does not choose again.
constexpr const char *kChosenVariable = "TGC_OPENBLAS_CHOSEN";

/// The newest OpenBLAS kernels this CPU runs, or null for none newer than
/// what any x86-64 has.
const char *newestKernels() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return "Haswell";
#endif
  return nullptr;
}

/// Whether OpenBLAS's `core` kernels predate AVX2 (its Intel cores before
/// Haswell, the fallback for an unknown model first).
bool predatesAvx2(const char *core) {
  for (const char *old :
       {"Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Sandybridge",
        "Atom", "Katmai", "Coppermine", "Northwood", "Banias"})
    if (strcasecmp(core, old) == 0)
      return true;
  return false;
}

} // namespace

void chooseBlasKernels(char **argv) {
  if (!openblas_get_corename || std::getenv("OPENBLAS_CORETYPE") ||
      std::getenv(kChosenVariable))
    return;
  const char *core = openblas_get_corename();
  const char *newest = newestKernels();
  if (!core || !newest || !predatesAvx2(core))
    return;
  // Remembered for the log; also stops a second choice if the new process
  // still reports old kernels.
  setenv(kChosenVariable, core, 1);
  setenv("OPENBLAS_CORETYPE", newest, 1);
  execv("/proc/self/exe", argv);
  // Not started again (no /proc): go on as OpenBLAS chose.
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kChosenVariable);
}

std::string blasKernelsNote() {
  const char *was = std::getenv(kChosenVariable);
  const char *chosen = std::getenv("OPENBLAS_CORETYPE");
  if (!was || !chosen || !openblas_get_corename)
    return "";
  return std::string("OpenBLAS kernels ") + chosen +
         " (chosen by the executable: OpenBLAS took " + was +
         "'s for this CPU; set OPENBLAS_CORETYPE to choose)";
}

} // namespace tgc
