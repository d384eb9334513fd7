//===- Passes.cpp - Autodiff stage registration -------------------*- C++
//-*-===//
//
// The autodiff stage: tg-freeze and tg-autodiff; their registration comes
// from Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/autodiff/Passes.h"
