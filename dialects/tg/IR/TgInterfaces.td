//===- TgInterfaces.td - tg op interfaces ------------------*- tablegen -*-===//
//
// DifferentiableOpInterface: each differentiable op states its own
// vector-Jacobian product; tg-autodiff only walks the graph backwards.
// ShardingRuleOpInterface: each op states how the dims of its operands and
// results relate, and the sharding passes only follow those relations.
//
//===----------------------------------------------------------------------===//

#ifndef TG_INTERFACES_TD
#define TG_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Tg_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::tg";
  let description = [{
    An op that can be differentiated in reverse mode. `buildVJP` is given the
    gradient of each result (a null Value where a result has none) and fills
    `operandGrads` with one entry per operand: the gradient, or a null Value
    for operands that are not differentiable (indices, labels, masks). The
    gradients it builds have exactly the operand types; broadcast operands get
    their gradient summed back to their own shape.
  }];
  let methods = [
    InterfaceMethod<
      "Builds the gradients of the operands from those of the results.",
      "::llvm::LogicalResult", "buildVJP",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

def Tg_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::tg";
  let description = [{
    An op whose operands and results can be split over mesh axes. The rule
    names the op's factors (the independent index spaces of its loops: the
    batch, the rows and columns of a matmul, its contraction) and, for each
    dim of each operand and result, the factor it is (or -1: that dim must
    stay whole). A factor split over some axes splits every dim that is it;
    a split factor missing from a result is summed over, so the result is a
    partial sum over those axes. tg-propagate-sharding and tg-partition read
    only this (ShardingRule in TgInterfaces.h); an op without the interface
    is computed whole on every process.
  }];
  let methods = [
    InterfaceMethod<
      "The relation between the dims of the operands and the results.",
      "::mlir::tg::ShardingRule", "getShardingRule", (ins)>
  ];
}

#endif // TG_INTERFACES_TD
