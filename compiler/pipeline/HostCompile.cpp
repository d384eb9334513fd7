//===- HostCompile.cpp - Emitted C++ to a training executable -----*- C++ -*-===//

#include "compiler/pipeline/HostCompile.h"

#include "compiler/pipeline/Config.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
using llvm::SmallVector;
using llvm::StringRef;
using namespace mlir::tg;

static std::string fromEnv(const char *name, const char *fallback) {
  const char *value = std::getenv(name);
  return value && *value ? value : fallback;
}

std::vector<std::string>
mlir::tg::hostCompileCommand(StringRef source, StringRef executable,
                             const HostCompileOptions &options) {
  std::string root = fromEnv("TGC_RUNTIME_ROOT", TGC_SOURCE_DIR);
  std::string lib = fromEnv("TGC_RUNTIME_LIB", TGC_LIBRARY_DIR);
  std::vector<std::string> cmd = {fromEnv("CXX", TGC_HOST_CXX), "-std=c++17",
                                  options.optimization};
  if (options.nativeArch)
    cmd.push_back("-march=native");
  cmd.insert(cmd.end(), {"-fopenmp", "-I" + root, source.str(), "-o",
                         executable.str(), "-L" + lib, "-ltgc_runtime",
                         "-ltgc_cpu_kernels", "-lopenblas"});
  // The runtime's collectives (runtime/comm) reduce with MPI when it was
  // built with it.
  SmallVector<StringRef> mpi;
  StringRef(TGC_MPI_LINK_FLAGS).split(mpi, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef flag : mpi)
    cmd.push_back(flag.str());
  cmd.push_back("-lpthread");
  return cmd;
}

llvm::Error mlir::tg::compileExecutable(StringRef source, StringRef executable,
                                        const HostCompileOptions &options) {
  std::vector<std::string> cmd =
      hostCompileCommand(source, executable, options);
  auto program = llvm::sys::findProgramByName(cmd[0]);
  if (!program)
    return llvm::createStringError("host C++ compiler '" + cmd[0] +
                                   "' not found (set CXX)");
  SmallVector<StringRef> args(cmd.begin(), cmd.end());
  if (options.verbose) {
    llvm::interleave(args, llvm::errs(), " ");
    llvm::errs() << "\n";
  }
  std::string message;
  int status = llvm::sys::ExecuteAndWait(*program, args, std::nullopt, {}, 0, 0,
                                         &message);
  if (status != 0)
    return llvm::createStringError(
        "host compiler failed (exit " + std::to_string(status) + ") on " +
        source.str() + (message.empty() ? "" : ": " + message));
  return llvm::Error::success();
}
