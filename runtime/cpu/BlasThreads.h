//===- BlasThreads.h - OpenBLAS thread count under OpenMP ---------*- C++ -*-===//
//
// OpenBLAS (the pthread build Debian ships) keeps its own thread pool. The
// kernels keep it at omp_get_max_threads() so that omp_set_num_threads()
// rules both, and drop it to one thread while OpenMP threads call GEMMs
// side by side, so the two pools do not oversubscribe the cores.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CPU_BLASTHREADS_H
#define TGC_RUNTIME_CPU_BLASTHREADS_H

namespace tgc::cpu {

/// Sets OpenBLAS's thread count to omp_get_max_threads(); call before a GEMM
/// that may run multithreaded, outside any parallel region.
void syncBlasThreads();

/// While alive, OpenBLAS runs each call on the calling thread alone.
class SerialBlasScope {
public:
  SerialBlasScope();
  ~SerialBlasScope();
  SerialBlasScope(const SerialBlasScope &) = delete;
  SerialBlasScope &operator=(const SerialBlasScope &) = delete;
};

/// The thread count kernels plan their work for (omp_get_max_threads()).
int maxThreads();

} // namespace tgc::cpu

#endif // TGC_RUNTIME_CPU_BLASTHREADS_H
