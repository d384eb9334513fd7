//===- EmitCpp.h - tg train step to portable C++ ------------------*- C++ -*-===//
//
// Emits one readable C++ source for a module that has @forward and
// @train_step: the model description the runtime reads (runtime/core/Model.h)
// and one function per step kind (a long one in parts), calling runtime/cpu
// kernels for the heavy ops and OpenMP loops for elementwise ones.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_CODEGEN_EMITCPP_H
#define TGC_COMPILER_CODEGEN_EMITCPP_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::tg {

struct CppEmitOptions {
  /// The model file the module came from, named in comments.
  std::string sourceName;
  /// A step function of more ops is emitted as parts of at most this many,
  /// which it calls in order: the host compiler's time on one function grows
  /// faster than its length.
  unsigned opsPerFunction = 64;
};

/// Writes the C++ source of `module` to `os`; fails with a diagnostic on
/// anything the CPU backend cannot run (an element type it lacks, an op
/// without a lowering).
LogicalResult emitCpp(ModuleOp module, llvm::raw_ostream &os,
                      const CppEmitOptions &options);

} // namespace mlir::tg

#endif // TGC_COMPILER_CODEGEN_EMITCPP_H
