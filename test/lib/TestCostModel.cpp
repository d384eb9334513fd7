//===- TestCostModel.cpp - Each op's modelled cost, as attributes ---------===//
//
// tg-test-cost-model writes what the cost model (planning/cost) says of each
// op of each function as `test.cost = {flops, bytes, seconds, bound}`: the
// FLOPs and the bytes it reads and writes at its shapes, its modelled
// seconds on the cluster (roofline plus kernel overhead; a collective's by
// the ring alpha-beta model over its mesh axis) and what bounds it
// ("compute", "memory", "communication", or "none" for a view that moves
// nothing), so that lit checks the model op by op, as Triton checks its
// AssignLatencies.
//
//===----------------------------------------------------------------------===//

#include "test/lib/TestPasses.h"

#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "planning/cost/ClusterSpec.h"
#include "planning/cost/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

struct TestCostModelPass
    : public PassWrapper<TestCostModelPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestCostModelPass)

  TestCostModelPass() = default;
  TestCostModelPass(const TestCostModelPass &other) : PassWrapper(other) {}

  StringRef getArgument() const final { return "tg-test-cost-model"; }
  StringRef getDescription() const final {
    return "Writes each op's modelled FLOPs, bytes, seconds and bound as "
           "test.cost (for lit)";
  }

  Option<std::string> cluster{
      *this, "cluster",
      llvm::cl::desc("A shipped cluster spec (h100-sxm-8, h200-8, a100-8, "
                     "cpu-local) or a JSON file"),
      llvm::cl::init("h100-sxm-8")};

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::Expected<ClusterSpec> spec = loadClusterSpec(cluster);
    if (!spec) {
      module.emitError() << llvm::toString(spec.takeError());
      return signalPassFailure();
    }
    CostModel cost(*spec, getModuleMesh(module));
    Builder b(module.getContext());
    for (auto func : module.getOps<func::FuncOp>())
      for (Operation &op : func.getBody().getOps()) {
        if (op.hasTrait<OpTrait::IsTerminator>() || isa<ConstantOp>(op))
          continue;
        double bytes = 0;
        for (Value v : op.getOperands())
          if (isa<RankedTensorType>(v.getType()))
            bytes += tensorBytes(v.getType());
        for (Value v : op.getResults())
          if (isa<RankedTensorType>(v.getType()))
            bytes += tensorBytes(v.getType());
        double flops = flopCount(&op);
        std::optional<double> collective = cost.collectiveOpSeconds(&op);
        double seconds = collective ? *collective : cost.opSeconds(&op);
        StringRef bound = collective     ? "communication"
                          : seconds <= 0 ? "none"
                          : flops / spec->flopsFor(computeTypeName(&op)) >=
                                  bytes / spec->memoryBandwidth
                              ? "compute"
                              : "memory";
        op.setAttr(
            "test.cost",
            b.getDictionaryAttr(
                {b.getNamedAttr("bound", b.getStringAttr(bound)),
                 b.getNamedAttr("bytes", b.getI64IntegerAttr(bytes)),
                 b.getNamedAttr("flops", b.getI64IntegerAttr((int64_t)flops)),
                 b.getNamedAttr("seconds", b.getF64FloatAttr(seconds))}));
      }
  }
};

} // namespace

void mlir::tg::registerTestCostModelPass() {
  PassRegistration<TestCostModelPass>();
}
