//===- Passes.cpp - Autodiff stage registration -------------------*- C++ -*-===//
//
// The autodiff stage has one pass; its registration comes from Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/autodiff/Passes.h"
