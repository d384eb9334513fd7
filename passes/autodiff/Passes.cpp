//===- Passes.cpp - Autodiff stage registration ----------------*- C++ -*-===//
//
// The autodiff stage: tg-lora, tg-freeze and tg-autodiff; their
// registration comes from Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/autodiff/Passes.h"

std::string mlir::tg::listNames(ArrayRef<StringRef> names, size_t shown) {
  std::string out;
  for (auto [i, name] : llvm::enumerate(names)) {
    if (i == shown) {
      out += ", ... " + std::to_string(names.size()) + " in all";
      break;
    }
    out += (i ? ", " : "") + name.str();
  }
  return out;
}
