//===- Passes.cpp - Precision stage registration ------------------*- C++ -*-===//
//
// The precision stage has one pass; its registration comes from Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/precision/Passes.h"
