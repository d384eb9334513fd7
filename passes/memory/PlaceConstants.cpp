//===- PlaceConstants.cpp - The constants a backend reads, in one section -===//
//
// The constants of the functions a backend runs that some reader reads from
// memory (the dialect's readsConstantFromMemory), laid out one after another
// in module order, each at a multiple of the alignment.
//
//===----------------------------------------------------------------------===//

#include "passes/memory/Passes.h"

#include "dialects/tg/IR/TgOps.h"

namespace mlir::tg {
#define GEN_PASS_DEF_PLACECONSTANTSPASS
#include "passes/memory/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// Whether the backend runs `func`: a layer body always; in a pipelined
/// module the pipeline's functions only, since the runtime's driver runs
/// them instead of the whole step's.
bool runs(func::FuncOp func, bool pipelined) {
  if (func->hasAttr(TgDialect::kLayerBodyAttr))
    return true;
  return !pipelined || func->hasAttr(TgDialect::kPipelineRoleAttr);
}

bool readFromMemory(ConstantOp constant) {
  return llvm::any_of(constant->getUses(), [](OpOperand &use) {
    return readsConstantFromMemory(use);
  });
}

struct PlaceConstantsPass
    : public tg::impl::PlaceConstantsPassBase<PlaceConstantsPass> {
  using PlaceConstantsPassBase::PlaceConstantsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      module.emitError("tg-place-constants: alignment must be a power of "
                       "two, got ")
          << (int64_t)alignment;
      return signalPassFailure();
    }
    bool pipelined = module->hasAttr(TgDialect::kPipelineActionsAttr);
    Builder builder(module.getContext());
    // Placed anew: a pass before may have added or removed readers.
    module.walk([](ConstantOp constant) {
      constant->removeAttr(TgDialect::kConstantOffsetAttr);
    });
    int64_t bytes = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!runs(func, pipelined))
        continue;
      for (auto constant : func.getOps<ConstantOp>()) {
        if (!readFromMemory(constant))
          continue;
        constant->setAttr(TgDialect::kConstantOffsetAttr,
                          builder.getI64IntegerAttr(bytes));
        int64_t size = tensorBytes(constant.getType());
        bytes += llvm::alignTo(std::max<int64_t>(size, 1), alignment);
        ++numPlaced;
      }
    }
    module->setAttr(TgDialect::kConstantsAttr,
                    ConstantsAttr::get(module.getContext(), bytes, alignment));
  }
};

} // namespace
