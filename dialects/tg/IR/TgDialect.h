//===- TgDialect.h - The tg training dialect ----------------------*- C++ -*-===//
//
// Declares the tg dialect, its attributes and enums.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_TG_IR_TGDIALECT_H
#define TGC_DIALECTS_TG_IR_TGDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include "dialects/tg/IR/TgDialect.h.inc"
#include "dialects/tg/IR/TgEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/tg/IR/TgAttrs.h.inc"

#endif // TGC_DIALECTS_TG_IR_TGDIALECT_H
