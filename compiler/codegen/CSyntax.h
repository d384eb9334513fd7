//===- CSyntax.h - tg attributes as C/C++ syntax ------------------*- C++ -*-===//
//
// What both emitters print the same way, since both print C++ (host C++
// and CUDA C++): the operator of a comparison predicate.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_CODEGEN_CSYNTAX_H
#define TGC_COMPILER_CODEGEN_CSYNTAX_H

#include "dialects/tg/IR/TgOps.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/ErrorHandling.h"

namespace mlir::tg {

/// The C++ operator of a tg.compare predicate.
inline llvm::StringRef comparisonOperator(ComparePredicate predicate) {
  switch (predicate) {
  case ComparePredicate::eq:
    return "==";
  case ComparePredicate::ne:
    return "!=";
  case ComparePredicate::lt:
    return "<";
  case ComparePredicate::le:
    return "<=";
  case ComparePredicate::gt:
    return ">";
  case ComparePredicate::ge:
    return ">=";
  }
  llvm_unreachable("unknown compare predicate");
}

} // namespace mlir::tg

#endif // TGC_COMPILER_CODEGEN_CSYNTAX_H
