//===- TgCollectiveOps.cpp - The tg collectives -------------------*- C++ -*-===//
//
// Result types and verifiers of the collectives (TgCollectiveOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgOps.h"

using namespace mlir;
using namespace mlir::tg;

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  for (Value v : adaptor.getInputs())
    inferred.push_back(v.getType());
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  if (getMeshAxis().empty())
    return emitOpError() << "needs a mesh axis";
  return success();
}

