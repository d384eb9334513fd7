//===- Lora.cpp - Low-rank adapters on chosen weights -----------*- C++ -*-===//
//
// tg-lora gives each weight of a target module two parameters, A and B, and
// adds (x @ A) @ B * alpha / rank to every x @ W that reads it; the other
// parameters are frozen. See Passes.td for the rules.
//
//===----------------------------------------------------------------------===//

#include "passes/autodiff/Passes.h"

#include "dialects/tg/IR/TgOps.h"

#include <cmath>

namespace mlir::tg {
#define GEN_PASS_DEF_LORAPASS
#include "passes/autodiff/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// A weight that gets adapters: its argument, the module it belongs to and
/// the matmuls that read it.
struct Adapted {
  unsigned arg;
  std::string module;
  SmallVector<MatmulOp> readers;
  int64_t in = 0, out = 0;
  /// Whether the matmuls read it transposed (x @ W^T, W as [out, in]).
  bool transposed = false;
};

/// The module of a parameter named `<module>.weight`, or "".
StringRef moduleOfWeight(StringRef param) {
  return param.consume_back(".weight") ? param : StringRef();
}

/// Whether `module` is `target` or one of its submodules' names ends so
/// (PEFT's rule: `c_attn` names `h.0.attn.c_attn`).
bool isTarget(StringRef module, StringRef target) {
  return module == target || module.ends_with(("." + target).str());
}

struct LoraPass : public tg::impl::LoraPassBase<LoraPass> {
  using LoraPassBase::LoraPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
    if (!forward) {
      module.emitError("tg-lora: no @") << forwardName << " to adapt";
      return signalPassFailure();
    }
    if (rank < 1) {
      forward.emitError("tg-lora: the rank must be at least 1, got ")
          << (int64_t)rank;
      return signalPassFailure();
    }
    if (targets.empty()) {
      forward.emitError("tg-lora: no targets: name the modules whose "
                        "weights get adapters (targets=c_attn,c_proj)");
      return signalPassFailure();
    }
    FailureOr<SmallVector<Adapted>> adapted = findWeights(forward);
    if (failed(adapted))
      return signalPassFailure();

    // Every parameter there was is frozen: only the adapters train.
    unsigned params = 0;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      if (forward.getArgAttr(i, TgDialect::kParamAttr)) {
        forward.setArgAttr(i, TgDialect::kFrozenAttr,
                           UnitAttr::get(&getContext()));
        params = i + 1;
      }
    // The adapters after the last parameter, A and B of each weight in the
    // order of the weights.
    SmallVector<Attribute> recorded;
    for (Adapted &weight : *adapted) {
      auto [a, b] = addAdapterArguments(forward, weight, params);
      params += 2;
      for (MatmulOp matmul : weight.readers)
        adaptMatmul(matmul, a, b, weight.module);
      // What merging them back needs (--merge-lora).
      recorded.push_back(LoraAdapterAttr::get(
          &getContext(), weight.module + ".weight", weight.module + ".lora_A",
          weight.module + ".lora_B", APFloat(alpha / (double)rank),
          weight.transposed));
      ++numAdapted;
    }
    module->setAttr(TgDialect::kLoraAttr,
                    ArrayAttr::get(&getContext(), recorded));
  }

  /// The weights of the target modules and their readers, each checked.
  FailureOr<SmallVector<Adapted>> findWeights(func::FuncOp forward) {
    SmallVector<Adapted> found;
    SmallVector<bool> used(targets.size(), false);
    SmallVector<StringRef> modules;
    for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
      auto name =
          forward.getArgAttrOfType<StringAttr>(i, TgDialect::kParamAttr);
      StringRef module = name ? moduleOfWeight(name.getValue()) : StringRef();
      if (module.empty())
        continue;
      modules.push_back(module);
      bool match = false;
      for (auto [target, hit] : llvm::zip(targets, used))
        if (isTarget(module, target))
          match = hit = true;
      if (!match)
        continue;
      BlockArgument arg = forward.getArgument(i);
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.getRank() != 2) {
        forward.emitError("tg-lora: '")
            << name.getValue() << "' is " << arg.getType()
            << "; LoRA adapts 2-D weights";
        return failure();
      }
      Adapted weight{i, module.str(), {}, 0, 0, false};
      for (Operation *user : arg.getUsers()) {
        auto matmul = dyn_cast<MatmulOp>(user);
        if (!matmul || matmul.getRhs() != arg || matmul.getTransposeLhs()) {
          user->emitError("tg-lora: '")
              << name.getValue() << "' is read by this " << user->getName()
              << "; LoRA adapts weights that only matmuls read, as their "
                 "right operand (x @ W)";
          return failure();
        }
        weight.readers.push_back(matmul);
      }
      bool transposed = weight.transposed =
          !weight.readers.empty() && weight.readers.front().getTransposeRhs();
      if (llvm::any_of(weight.readers, [&](MatmulOp m) {
            return m.getTransposeRhs() != transposed;
          })) {
        forward.emitError("tg-lora: '")
            << name.getValue()
            << "' is read both as it is and transposed; its adapters "
               "would need two shapes";
        return failure();
      }
      weight.in = type.getDimSize(transposed ? 1 : 0);
      weight.out = type.getDimSize(transposed ? 0 : 1);
      found.push_back(std::move(weight));
    }
    for (auto [target, hit] : llvm::zip(targets, used))
      if (!hit) {
        forward.emitError("tg-lora: target '")
            << target << "' names no module with a weight (the modules: "
            << listNames(modules) << ")";
        return failure();
      }
    return found;
  }

  /// A ([in, rank], uniform in ±1/sqrt(in)) and B ([rank, out], zeros) at
  /// argument `at` and after it.
  std::pair<Value, Value> addAdapterArguments(func::FuncOp forward,
                                              const Adapted &weight,
                                              unsigned at) {
    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    Type element =
        cast<RankedTensorType>(forward.getArgument(weight.arg).getType())
            .getElementType();
    double bound = 1.0 / std::sqrt((double)weight.in);
    auto param = [&](StringRef part, InitializerAttr init) {
      return b.getDictionaryAttr(
          {b.getNamedAttr(TgDialect::kParamAttr,
                          b.getStringAttr(weight.module + "." + part.str())),
           b.getNamedAttr(TgDialect::kInitAttr, init)});
    };
    auto uniform = InitializerAttr::get(
        ctx, InitKind::uniform, APFloat(0.0), APFloat(1.0), APFloat(-bound),
        APFloat(bound), APFloat(1.0), APFloat(0.0), "", "");
    auto zeros = InitializerAttr::get(ctx, InitKind::zeros, APFloat(0.0),
                                      APFloat(1.0), APFloat(-1.0), APFloat(1.0),
                                      APFloat(1.0), APFloat(0.0), "", "");
    Location loc = forward.getArgument(weight.arg).getLoc();
    auto aType = RankedTensorType::get({weight.in, rank}, element);
    auto bType = RankedTensorType::get({rank, weight.out}, element);
    (void)forward.insertArgument(at, aType, param("lora_A", uniform), loc);
    (void)forward.insertArgument(at + 1, bType, param("lora_B", zeros), loc);
    return {forward.getArgument(at), forward.getArgument(at + 1)};
  }

  /// x @ W becomes x @ W + (x @ A) @ B * alpha / rank, its ops named
  /// after the module (h.0.attn.c_attn.lora_A) and in the matmul's layer.
  void adaptMatmul(MatmulOp matmul, Value a, Value b, StringRef module) {
    OpBuilder builder(matmul);
    builder.setInsertionPointAfter(matmul);
    LayerStamp stamp(builder, matmul.getOperation());
    auto at = [&](StringRef part) -> Location {
      return NameLoc::get(builder.getStringAttr(module + "." + part),
                          matmul.getLoc());
    };
    Value x = matmul.getLhs();
    Value xa = MatmulOp::create(builder, at("lora_A"), x, a);
    Value xab = MatmulOp::create(builder, at("lora_B"), xa, b);
    Type element = getElementTypeOrSelf(xab.getType());
    auto scalar = RankedTensorType::get({}, element);
    Value scale = ConstantOp::create(
        builder, at("lora_scale"),
        DenseElementsAttr::get(
            scalar, builder.getFloatAttr(element, alpha / (double)rank)));
    Value scaled = MulOp::create(builder, at("lora_scale"), xab, scale);
    Value sum = AddOp::create(builder, at("lora"), matmul.getResult(), scaled);
    matmul.getResult().replaceAllUsesExcept(sum, sum.getDefiningOp());
  }
};

} // namespace
