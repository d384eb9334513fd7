//===- EmitCpp.h - tg train step to portable C++ ------------------*- C++
//-*-===//
//
// Emits one readable C++ source for a module that has @forward and
// @train_step: the model description the runtime reads (runtime/core/Model.h)
// and one function per step kind (a long one in parts), calling runtime/cpu
// kernels for the heavy ops and OpenMP loops for elementwise ones, and one
// function per layer body (tg-outline-layers) that the steps call. The
// bodies can be compiled apart (emitCppUnits), each once.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_CODEGEN_EMITCPP_H
#define TGC_COMPILER_CODEGEN_EMITCPP_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

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

/// One translation unit of the program: a file stem and its text.
struct CppUnit {
  std::string name;
  std::string text;
};

/// The same program as translation units to compile apart: each step
/// function (`train_step`, `eval_step`, `grad_step`; in parts, the parts in
/// units of about 3,000 lines, `train_step.2`, ...),
/// the model description with the arena (`model`; a pipelined step's
/// functions too), then one per layer body of tg-outline-layers (named by
/// its content, `tgc_body_<hash>`, so that the same body compiles to the
/// same object in any build). They hold what emitCpp writes as one source.
LogicalResult emitCppUnits(ModuleOp module, const CppEmitOptions &options,
                           std::vector<CppUnit> &units);

} // namespace mlir::tg

#endif // TGC_COMPILER_CODEGEN_EMITCPP_H
