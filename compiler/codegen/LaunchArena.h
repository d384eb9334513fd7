//===- LaunchArena.h - Arena placement over a schedule of launches -*- C++ -*-===//
//
// The CUDA emitter places buffers by liveness like tg-plan-memory does for
// the CPU (passes/memory), but over its own schedule rather than the
// function's op order (until it prints the planned IR): a
// fused launch (a GEMM with its bias and GELU epilogue, the fused
// classifier, an elementwise chain) writes several values at one position,
// gradient chains are hoisted next to their producers so that all-reduce
// buckets start early, and some buffers are not SSA values at all (the
// attention log-sum-exp kept from the forward for the backward, the
// contiguous all-reduce buckets). So the planner sees only numbered buffers
// and the positions at which launches touch them.
//
// A buffer lives from the first position that touches it to the last; at
// each position the buffers that start there are placed before those that
// end there are released, so no launch writes over its own operands. Offsets
// are first fit, multiples of the alignment (256 bytes: cuBLASLt's fastest
// kernels and 16-byte vector accesses).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_CODEGEN_LAUNCHARENA_H
#define TGC_COMPILER_CODEGEN_LAUNCHARENA_H

#include <cstdint>
#include <vector>

namespace mlir::tg {

class LaunchArena {
public:
  /// A buffer of `bytes`; returns its id.
  int addBuffer(int64_t bytes);
  /// Launch number `position` (in schedule order) reads or writes `buffer`.
  void touch(int buffer, int64_t position);
  /// Places every touched buffer; untouched ones get no memory.
  void plan(int64_t alignment = 256);

  int64_t offset(int buffer) const { return buffers[buffer].offset; }
  int64_t bytes(int buffer) const { return buffers[buffer].bytes; }
  int64_t peakBytes() const { return peak; }
  int size() const { return static_cast<int>(buffers.size()); }

private:
  struct Buffer {
    int64_t bytes;
    int64_t first = -1, last = -1;
    int64_t offset = -1;
  };
  std::vector<Buffer> buffers;
  int64_t peak = 0;
};

} // namespace mlir::tg

#endif // TGC_COMPILER_CODEGEN_LAUNCHARENA_H
