//===- HostCompile.h - Emitted C++ to a training executable -------*- C++ -*-===//
//
// Runs the host C++ compiler on an emitted source and links it with the
// runtime (libtgc_runtime, libtgc_cpu_kernels, OpenBLAS, OpenMP, MPI).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_PIPELINE_HOSTCOMPILE_H
#define TGC_COMPILER_PIPELINE_HOSTCOMPILE_H

#include "llvm/ADT/StringRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::tg {

struct HostCompileOptions {
  /// -O3 -march=native by default; tests use -O1 to compile faster.
  std::string optimization = "-O3";
  bool nativeArch = true;
  /// Print the compiler command before running it.
  bool verbose = false;
};

/// The compiler command line for `source` -> `executable`.
std::vector<std::string> hostCompileCommand(llvm::StringRef source,
                                            llvm::StringRef executable,
                                            const HostCompileOptions &options);

/// Compiles and links; the error carries the compiler's exit status.
llvm::Error compileExecutable(llvm::StringRef source,
                              llvm::StringRef executable,
                              const HostCompileOptions &options);

} // namespace mlir::tg

#endif // TGC_COMPILER_PIPELINE_HOSTCOMPILE_H
