//===- BlasThreads.cpp - OpenBLAS thread count under OpenMP -------*- C++ -*-===//
//
// Changing OpenBLAS's thread count is cheap once its pool exists, but the
// count is only changed when it differs from the last one set here.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/BlasThreads.h"

#include <cblas.h>
#include <omp.h>

namespace tgc::cpu {

namespace {
/// The count last given to OpenBLAS by this file (0: never set).
int blasThreadsSet = 0;

void setBlasThreads(int n) {
  if (n != blasThreadsSet) {
    openblas_set_num_threads(n);
    blasThreadsSet = n;
  }
}
} // namespace

int maxThreads() { return omp_get_max_threads(); }

void syncBlasThreads() { setBlasThreads(maxThreads()); }

SerialBlasScope::SerialBlasScope() { setBlasThreads(1); }

SerialBlasScope::~SerialBlasScope() { syncBlasThreads(); }

} // namespace tgc::cpu
