//===- Passes.cpp - Memory stage registration ---------------------*- C++ -*-===//
//
// The memory stage: tg-plan-memory places the buffers, tg-verify-memory
// checks the plan; registration comes from Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/memory/Passes.h"
