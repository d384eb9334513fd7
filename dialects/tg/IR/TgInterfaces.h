//===- TgInterfaces.h - tg op interfaces --------------------------*- C++
//-*-===//
//
// DifferentiableOpInterface, implemented for the tg ops in TgVJP.cpp, and
// ShardingRuleOpInterface, in TgShardingRules.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_TG_IR_TGINTERFACES_H
#define TGC_DIALECTS_TG_IR_TGINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

namespace mlir::tg {

/// How the dims of an op's operands and results relate (see
/// ShardingRuleOpInterface). Factor f has size factorSizes[f]; a dim that
/// is factor f holds it major-most (a reshape's merged dim [16, 64] -> 1024
/// is factor 16 in both), so the axes that split f must divide its size.
struct ShardingRule {
  SmallVector<int64_t> factorSizes;
  /// Per operand (result), per dim: its factor, or -1 when the dim must stay
  /// whole (a normalised or sliced dim, a broadcast dim of size 1).
  SmallVector<SmallVector<int64_t>> operandDims, resultDims;
  /// Factors the op takes a mean over (a loss over the batch, its
  /// gradient): where one is split, each process's results are scaled by
  /// 1 / (its number of pieces), so the pieces sum to the whole mean.
  SmallVector<int64_t> meanFactors;
  /// How partial sums pass through the op. `linearOperands`: the op is
  /// linear in each of these separately (mul, matmul, div's dividend), so
  /// one of them may be partial while the others are not. With
  /// `sumOfOperands` (add, sub, concat) all operands must be partial over
  /// the same axes.
  SmallVector<unsigned> linearOperands;
  bool sumOfOperands = false;

  /// A new factor of `size`; returns its number.
  int64_t addFactor(int64_t size) {
    factorSizes.push_back(size);
    return factorSizes.size() - 1;
  }
};

} // namespace mlir::tg

#include "dialects/tg/IR/TgInterfaces.h.inc"

#endif // TGC_DIALECTS_TG_IR_TGINTERFACES_H
