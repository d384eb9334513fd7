//===- InferenceForward.cpp - @forward in inference mode ----------*- C++ -*-===//
//
// Once tg-autodiff has built @forward_backward, @forward is what evaluation
// runs; evaluation runs the model in inference mode, so dropout becomes the
// identity there (the training step keeps it).
//
//===----------------------------------------------------------------------===//

#include "passes/optimizer/Passes.h"

#include "dialects/tg/IR/TgOps.h"

namespace mlir::tg {
#define GEN_PASS_DEF_INFERENCEFORWARDPASS
#include "passes/optimizer/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct InferenceForwardPass
    : public tg::impl::InferenceForwardPassBase<InferenceForwardPass> {
  using InferenceForwardPassBase::InferenceForwardPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("tg-inference-forward: the module has no @forward");
      return signalPassFailure();
    }
    if (!module.lookupSymbol<func::FuncOp>("forward_backward")) {
      forward.emitError("tg-inference-forward: run tg-autodiff first; it "
                        "differentiates @forward with its dropout into "
                        "@forward_backward");
      return signalPassFailure();
    }
    SmallVector<DropoutOp> dropouts;
    forward.walk([&](DropoutOp op) { dropouts.push_back(op); });
    for (DropoutOp op : dropouts) {
      op.getResult().replaceAllUsesWith(op.getX());
      op.erase();
    }
    numDropouts += dropouts.size();
  }
};

} // namespace
