//===- Passes.cpp - Remat stage registration --------------------*- C++ -*-===//
//
// The rematerialization stage: tg-remat trades recomputation in the
// backward pass for activation memory; registration comes from Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/remat/Passes.h"
