//===- Streams.cpp - All-reduce buckets on the comm stream ------*- C++ -*-===//
//
// The gradient all-reduce: each tg.all_reduce (a bucket of tg-schedule's)
// is one collective on the communication stream, launched where it stands
// after an event on the compute stream; the compute stream waits for a
// bucket at its tg.await (the dialect checks that nothing reads the bucket
// before).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/StepEmitter.h"

#include "dialects/tg/IR/TgSharding.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cuda_emit;

SmallVector<Operation *> StepEmitter::flatUsers(Value v) const {
  SmallVector<Operation *> users;
  collectFlatUsers(v, users);
  llvm::stable_sort(users, [&](Operation *a, Operation *b) {
    return opIndex.lookup(a) < opIndex.lookup(b);
  });
  return users;
}

void StepEmitter::collectFlatUsers(Value v,
                                   SmallVectorImpl<Operation *> &users) const {
  for (OpOperand &use : v.getUses()) {
    Operation *owner = use.getOwner();
    if (auto kernel = dyn_cast<KernelOp>(owner))
      collectFlatUsers(kernel.getBody().getArgument(use.getOperandNumber()),
                       users);
    else if (isa<YieldOp>(owner))
      collectFlatUsers(owner->getParentOp()->getResult(use.getOperandNumber()),
                       users);
    else
      users.push_back(owner);
  }
}

void StepEmitter::emitBucket(Launch &launch) {
  Bucket &b = buckets[launch.bucket];
  // Each gradient by the parameter the optimizer updates with it.
  // (A sum every update reads, as the squared gradient norm, is named by
  // the first reader in op order.)
  auto parameterOf = [&](unsigned m) -> std::string {
    SmallVector<Value> worklist = {b.op.getResults()[m]};
    for (size_t i = 0; i < worklist.size() && i < 8; ++i) {
      for (Operation *user : flatUsers(worklist[i])) {
        if (auto update = dyn_cast<OptimizerUpdateOp>(user)) {
          if (auto arg = dyn_cast<BlockArgument>(flat(update.getParam())))
            if (auto name = func.getArgAttrOfType<StringAttr>(
                    arg.getArgNumber(), TgDialect::kParamAttr))
              return name.getValue().str();
        } else if (user->getNumResults() == 1) {
          worklist.push_back(user->getResult(0));
        }
      }
    }
    Value v = flat(b.op.getInputs()[m]);
    std::string where =
        v.getDefiningOp() ? describeLoc(v.getDefiningOp()->getLoc()) : "";
    return where.empty() ? "#" + std::to_string(m) : where;
  };
  std::string names;
  for (unsigned m = 0; m < b.inPlace.size(); ++m)
    names += (names.empty() ? "" : ", ") + parameterOf(m);
  int64_t count = b.bytes / elementBytes(b.elementType);
  os << llvm::formatv("  // Bucket {0} of the gradient all-reduce: {1} "
                      "tensors, {2:f2} MB, ready now\n  //   ({3})\n",
                      launch.bucket, b.inPlace.size(), b.bytes / 1e6, names);
  for (auto [m, own] : llvm::enumerate(b.inPlace))
    if (!own) {
      Value in = b.op.getInputs()[m], out = b.op.getResults()[m];
      std::string src = ptr(in), dst = ptr(out);
      os << "  TGC_CUDA_CHECK(cudaMemcpyAsync(" << dst << ", " << src << ", "
         << bytesOf(in) << ", cudaMemcpyDeviceToDevice, stream));\n";
    }
  int64_t offset = b.offset;
  StringRef reduction = commReduceOp(b.op.getReduction());
  // Over the module's mesh axis; without a mesh, over every process.
  int meshAxis = -1;
  if (MeshOp mesh = getModuleMesh(b.op))
    for (auto [i, name] : llvm::enumerate(mesh.getAxisNames()))
      if (name == b.op.getMeshAxis())
        meshAxis = i;
  std::string axis = meshAxis < 0 ? std::string()
                                  : llvm::formatv("/*axis=*/{0} /* {1} */, ",
                                                  meshAxis, b.op.getMeshAxis())
                                        .str();
  os << "  TGC_CUDA_CHECK(cudaEventRecord(d.bucketReady[" << launch.bucket
     << "], stream));\n"
     << "  TGC_CUDA_CHECK(cudaStreamWaitEvent(comm, d.bucketReady["
     << launch.bucket << "], 0));\n"
     << timerBegin(launch, "comm") << "  tgc::comm::allReduce(io.comm, " << axis
     << "work + " << offset << ", " << count << ", " << dtypeName(b.elementType)
     << ", " << reduction << ", comm);\n"
     << timerEnd(launch, "comm")
     << "  TGC_CUDA_CHECK(cudaEventRecord(d.bucketDone[" << launch.bucket
     << "], comm));\n";
}
