//===- TgCollectiveOps.cpp - The tg collectives -------------------*- C++ -*-===//
//
// Result types and verifiers of the collectives (TgCollectiveOps.td).
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgSharding.h"

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
  // Without a mesh the module runs on one process, where the op is the
  // identity; with one, the axis must be one of its axes.
  MeshOp mesh = getModuleMesh(*this);
  if (mesh && mesh.axisSize(getMeshAxis()) < 1)
    return emitOpError() << "runs over mesh axis \"" << getMeshAxis()
                         << "\", which mesh @" << mesh.getSymName()
                         << " does not have";
  return success();
}

