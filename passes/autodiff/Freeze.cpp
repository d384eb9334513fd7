//===- Freeze.cpp - Parameters frozen by name -------------------*- C++ -*-===//
//
// tg-freeze marks the parameters of @forward whose names match a glob
// tg.frozen, before tg-autodiff reads which ones train.
//
//===----------------------------------------------------------------------===//

#include "passes/autodiff/Passes.h"

#include "llvm/Support/GlobPattern.h"

namespace mlir::tg {
#define GEN_PASS_DEF_FREEZEPASS
#include "passes/autodiff/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

struct FreezePass : public tg::impl::FreezePassBase<FreezePass> {
  using FreezePassBase::FreezePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
    if (!forward) {
      module.emitError("tg-freeze: no @") << forwardName << " to freeze in";
      return signalPassFailure();
    }
    SmallVector<llvm::GlobPattern> globs;
    for (const std::string &pattern : patterns) {
      auto glob = llvm::GlobPattern::create(pattern);
      if (!glob) {
        module.emitError("tg-freeze: bad pattern '")
            << pattern << "': " << llvm::toString(glob.takeError());
        return signalPassFailure();
      }
      globs.push_back(std::move(*glob));
    }

    SmallVector<StringRef> names, trainable;
    SmallVector<bool> used(globs.size(), false);
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      auto name =
          forward.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr);
      if (!name)
        continue;
      names.push_back(name.getValue());
      bool match = false;
      for (auto [glob, hit] : llvm::zip(globs, used))
        if (glob.match(name.getValue()))
          match = hit = true;
      if (match && !forward.getArgAttr(i, TgDialect::kFrozenAttr)) {
        forward.setArgAttr(i, TgDialect::kFrozenAttr,
                           UnitAttr::get(&getContext()));
        ++numFrozen;
      }
      if (!forward.getArgAttr(i, TgDialect::kFrozenAttr))
        trainable.push_back(name.getValue());
    }
    for (auto [pattern, hit] : llvm::zip(patterns, used))
      if (!hit) {
        forward.emitError("tg-freeze: '")
            << pattern << "' names no parameter of @" << forwardName
            << " (its parameters: " << listNames(names) << ")";
        return signalPassFailure();
      }
    if (!patterns.empty() && !names.empty() && trainable.empty()) {
      forward.emitError("tg-freeze: every parameter of @")
          << forwardName << " is frozen (" << listNames(names)
          << "); nothing would train";
      return signalPassFailure();
    }
  }
};

} // namespace
