//===- Passes.cpp - Sharding stage registration -----------------*- C++ -*-===//
//
// The sharding stage: tg-propagate-sharding annotates every value with a
// sharding over the module's mesh, tg-partition rewrites the annotated
// functions into per-process programs with collectives; registration comes
// from Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Passes.h"
