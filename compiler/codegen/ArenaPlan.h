//===- ArenaPlan.h - Static arena placement by liveness -----------*- C++ -*-===//
//
// Places every buffer a function needs in one arena: each value gets an
// offset when it is defined and gives its bytes back after its last use, so
// the peak is known before anything runs. Values that only view another
// value's buffer (a reshape, an in-place update) extend that buffer's life.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_CODEGEN_ARENAPLAN_H
#define TGC_COMPILER_CODEGEN_ARENAPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::tg {

struct ArenaPlan {
  /// Byte offset of each value that owns arena memory.
  llvm::DenseMap<Value, int64_t> offsets;
  /// The buffer a viewing value shares (reshape result -> its operand).
  llvm::DenseMap<Value, Value> aliases;
  int64_t peakBytes = 0;

  /// The value whose buffer `v` uses.
  Value root(Value v) const {
    while (true) {
      auto it = aliases.find(v);
      if (it == aliases.end())
        return v;
      v = it->second;
    }
  }
};

/// Plans `func`'s single block. `aliasOf` returns the operand a result views
/// (or null); `needsArena` says whether a value gets arena memory at all
/// (arguments and constants do not); `bytesOf` gives its size.
ArenaPlan planArena(func::FuncOp func,
                    llvm::function_ref<Value(OpResult)> aliasOf,
                    llvm::function_ref<bool(Value)> needsArena,
                    llvm::function_ref<int64_t(Value)> bytesOf);

} // namespace mlir::tg

#endif // TGC_COMPILER_CODEGEN_ARENAPLAN_H
