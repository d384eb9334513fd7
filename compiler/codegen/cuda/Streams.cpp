//===- Streams.cpp - All-reduce buckets on the comm stream ------*- C++ -*-===//
//
// The gradient all-reduce: each tg.all_reduce (a bucket of tg-schedule's)
// is one collective on the communication stream, launched where it stands
// after an event on the compute stream; the compute stream waits for a
// bucket right before the launch of the op its tg.waits names, and
// placeBucketWaits checks that nothing touches a bucket in between.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/cuda/StepEmitter.h"

#include "dialects/tg/IR/TgSharding.h"

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cuda_emit;

LogicalResult StepEmitter::placeBucketWaits() {
  if (buckets.empty())
    return success();
  // tg-schedule's tg.waits: the buckets an op waits for, by the IR's bucket
  // numbers; the return's are waited for at the step's end.
  DenseMap<int64_t, int> bucketNumbered;
  for (auto [i, b] : llvm::enumerate(buckets)) {
    std::optional<uint64_t> number = b.op.getBucket();
    if (!number)
      return b.op.emitError(kBackend)
             << ": a tg.all_reduce without a bucket; run tg-schedule first";
    bucketNumbered[*number] = i;
  }
  auto waitsOf = [&](Operation *op) {
    SmallVector<int> list;
    if (auto attr = op->getAttrOfType<DenseI64ArrayAttr>(TgDialect::kWaitsAttr))
      for (int64_t number : attr.asArrayRef())
        if (auto it = bucketNumbered.find(number); it != bucketNumbered.end())
          list.push_back(it->second);
    return list;
  };
  // What a bucket holds once reduced, to check that nothing touches it
  // before its wait (the emitter's own grouping may not move a reader
  // ahead of the op tg-schedule made wait).
  DenseMap<Value, int> heldBy;
  for (auto [i, b] : llvm::enumerate(buckets))
    for (Value r : b.op.getResults())
      heldBy[root(r)] = i;
  std::vector<bool> launched(buckets.size(), false),
      waited(buckets.size(), false);
  std::vector<Launch> scheduled;
  auto wait = [&](int b) {
    if (waited[b])
      return;
    Launch l;
    l.kind = LaunchKind::AllReduceWait;
    l.op = buckets[b].op;
    l.bucket = b;
    scheduled.push_back(std::move(l));
    waited[b] = true;
  };
  for (Launch &l : launches) {
    if (l.kind == LaunchKind::Bucket) {
      // A bucket that reduces another's result (a sum over a second mesh
      // axis) launches once the compute stream has that result.
      for (int b : waitsOf(buckets[l.bucket].op))
        wait(b);
      launched[l.bucket] = true;
    } else {
      for (Operation *op : l.covered)
        for (int b : waitsOf(op))
          wait(b);
      for (ArrayRef<Value> values :
           {ArrayRef<Value>(l.reads), ArrayRef<Value>(l.writes)})
        for (Value v : values) {
          auto it = heldBy.find(root(v));
          if (it != heldBy.end() && launched[it->second] && !waited[it->second])
            return l.op->emitError(kBackend)
                   << ": this launch touches all-reduce bucket "
                   << *buckets[it->second].op.getBucket()
                   << " before an op waits for it: no tg.waits before here "
                      "names it (tg-schedule places them)";
        }
    }
    scheduled.push_back(std::move(l));
  }
  for (int b : waitsOf(func.getBody().front().getTerminator()))
    wait(b);
  for (size_t b = 0; b < buckets.size(); ++b)
    if (!waited[b])
      return buckets[b].op.emitError(kBackend)
             << ": no op waits for all-reduce bucket "
             << *buckets[b].op.getBucket() << "; run tg-schedule first";
  launches = std::move(scheduled);
  return success();
}

void StepEmitter::emitBucket(Launch &launch) {
  Bucket &b = buckets[launch.bucket];
  // Each gradient by the parameter the optimizer updates with it.
  auto parameterOf = [&](unsigned m) -> std::string {
    SmallVector<Value> worklist = {b.op.getResults()[m]};
    for (size_t i = 0; i < worklist.size() && i < 8; ++i)
      for (Operation *user : worklist[i].getUsers()) {
        if (auto update = dyn_cast<OptimizerUpdateOp>(user)) {
          if (auto arg = dyn_cast<BlockArgument>(update.getParam()))
            if (auto name = func.getArgAttrOfType<StringAttr>(
                    arg.getArgNumber(), TgDialect::kParamAttr))
              return name.getValue().str();
        } else if (user->getNumResults() == 1) {
          worklist.push_back(user->getResult(0));
        }
      }
    Value v = b.op.getInputs()[m];
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
