//===- ThreadScratch.h - Per-thread scratch buffers ----------------*- C++ -*-===//
//
// Kernels that need a work buffer per thread (im2col columns, attention
// score blocks) take it from here: it lives as long as the thread (OpenMP
// keeps its pool) and only grows, so steady-state training allocates nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CPU_THREADSCRATCH_H
#define TGC_RUNTIME_CPU_THREADSCRATCH_H

#include <cstddef>
#include <vector>

namespace tgc::cpu {

/// Buffer `slot` (0 to 3) of the calling thread, at least `size` floats.
/// A later call for the same slot on the same thread may move it.
inline float *threadScratch(int slot, size_t size) {
  thread_local std::vector<float> buffers[4];
  std::vector<float> &buf = buffers[slot];
  if (buf.size() < size)
    buf.resize(size);
  return buf.data();
}

} // namespace tgc::cpu

#endif // TGC_RUNTIME_CPU_THREADSCRATCH_H
