//===- Passes.cpp - Fusion stage registration ---------------------*- C++ -*-===//
//
// The fusion stage has one pass, tg-fuse; its registration comes from
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/fusion/Passes.h"
