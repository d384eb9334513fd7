//===- Passes.cpp - Optimizer stage registration ------------------*- C++ -*-===//
//
// The optimizer stage: tg-optimizer builds @train_step, tg-inference-forward
// turns @forward into the evaluation function; registration comes from
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/optimizer/Passes.h"
