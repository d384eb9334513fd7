//===- TgInterfaces.td - tg op interfaces ------------------*- tablegen -*-===//
//
// DifferentiableOpInterface: each differentiable op states its own
// vector-Jacobian product; tg-autodiff only walks the graph backwards.
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

#endif // TG_INTERFACES_TD
