//===- Passes.cpp - Optimizer stage registration ------------------*- C++ -*-===//
//
// The optimizer stage has one pass; its registration comes from Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/optimizer/Passes.h"
