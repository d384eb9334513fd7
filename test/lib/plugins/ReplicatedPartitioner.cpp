//===- ReplicatedPartitioner.cpp - A partitioner from a pass plugin -------===//
//
// A pass plugin, as a user's own solver would be: it registers the pass
// `test-replicated-partition` and the automatic partitioner
// `test-replicated` that runs it. The pass pins every parameter (in every
// function) and every optimizer state argument of @train_step replicated
// over the mesh, origin "test-replicated": pure data parallelism, decided
// outside tgc. Built as a shared library that links nothing of MLIR: it
// calls the tgc binary's (which exports its symbols to plugins).
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgDialect.h"
#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "passes/sharding/AutoPartitioner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Tools/Plugins/PassPlugin.h"

using namespace mlir;
using namespace mlir::tg;

namespace {

struct ReplicatedPartitionPass
    : PassWrapper<ReplicatedPartitionPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ReplicatedPartitionPass)

  StringRef getArgument() const final { return "test-replicated-partition"; }
  StringRef getDescription() const final {
    return "Pins every parameter and optimizer state replicated (a plugin's "
           "automatic partitioner)";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshOp mesh = getModuleMesh(module);
    if (!mesh)
      return;
    for (auto func : module.getOps<func::FuncOp>()) {
      SmallVector<ArgSharding> pins;
      for (BlockArgument arg : func.getArguments()) {
        unsigned index = arg.getArgNumber();
        bool param = func.getArgAttr(index, TgDialect::kParamAttr) != nullptr;
        bool state = func.getSymName() == "train_step" &&
                     func.getArgAttr(index, TgDialect::kStateAttr);
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        if ((!param && !state) || !type)
          continue;
        pins.push_back({index,
                        ShardingAttr::replicated(
                            &getContext(), mesh.getSymName(), type.getRank()),
                        "test-replicated"});
      }
      setArgShardings(func, pins);
    }
  }
};

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "TgTestReplicatedPartitioner",
          LLVM_VERSION_STRING, [] {
            PassRegistration<ReplicatedPartitionPass>();
            registerAutoPartitioner(
                "test-replicated",
                "every parameter and optimizer state replicated (test plugin)",
                [](OpPassManager &pm, const AutoPartitionerOptions &) {
                  pm.addPass(std::make_unique<ReplicatedPartitionPass>());
                });
          }};
}
