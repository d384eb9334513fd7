//===- Passes.cpp - Schedule stage registration -------------------*- C++ -*-===//
//
// The schedule stage: tg-schedule orders the step's kernels and splits its
// gradient all-reduce into buckets that overlap the backward pass;
// registration comes from Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/schedule/Passes.h"
