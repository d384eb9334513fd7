//===- TgInterfaces.h - tg op interfaces --------------------------*- C++ -*-===//
//
// DifferentiableOpInterface, implemented for the tg ops in TgVJP.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_TG_IR_TGINTERFACES_H
#define TGC_DIALECTS_TG_IR_TGINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "dialects/tg/IR/TgInterfaces.h.inc"

#endif // TGC_DIALECTS_TG_IR_TGINTERFACES_H
