//===- Passes.cpp - Layer stage registration ------------------ -*- C++ -*-===//
//
// The layers stage: tg-outline-layers gives the repeated layers of a planned
// step one function per distinct body, so that a backend compiles each once;
// registration comes from Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/layers/Passes.h"
