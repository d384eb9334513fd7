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
  // A bucket runs until its tg.await: exactly one.
  if (std::optional<uint64_t> bucket = getBucket()) {
    SmallPtrSet<Operation *, 2> awaits;
    for (Operation *user : getOperation()->getUsers())
      if (isa<AwaitOp>(user))
        awaits.insert(user);
    if (awaits.size() != 1)
      return emitOpError() << "is bucket " << *bucket << ", which "
                           << (awaits.empty() ? "no tg.await waits for"
                                              : "several tg.await wait for")
                           << "; a bucket has exactly one (tg-schedule "
                              "places it)";
  }
  return success();
}

AllReduceOp AwaitOp::getBucketOp() {
  if (getValues().empty())
    return {};
  return getValues().front().getDefiningOp<AllReduceOp>();
}

LogicalResult AwaitOp::verify() {
  AllReduceOp bucket = getBucketOp();
  if (!bucket || !bucket.getBucket())
    return emitOpError() << "must wait for the results of a tg.all_reduce "
                            "bucket (one with `bucket`)";
  if (getValues() != ValueRange(bucket.getResults()))
    return emitOpError() << "must name every result of bucket "
                         << *bucket.getBucket() << ", in order ("
                         << bucket.getNumResults() << ")";
  Block *block = getOperation()->getBlock();
  for (Value v : getValues())
    for (Operation *user : v.getUsers()) {
      if (user == getOperation())
        continue;
      Operation *top = block->findAncestorOpInBlock(*user);
      if (top && top->isBeforeInBlock(getOperation()))
        return emitOpError()
               << "comes after '" << top->getName() << "', which reads bucket "
               << *bucket.getBucket() << " before the step waits for it";
    }
  return success();
}
