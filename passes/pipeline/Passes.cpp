//===- Passes.cpp - Pipeline stage registration -------------------*- C++
//-*-===//
//
// The pipeline stage: tg-pipeline-split cuts the step into chunks and
// tg-pipeline-schedule writes each stage's actions; registration comes
// from Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/pipeline/Passes.h"
