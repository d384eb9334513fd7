//===- HostCompile.cpp - Emitted source to a training executable --*- C++ -*-===//

#include "compiler/pipeline/HostCompile.h"

#include "compiler/pipeline/Config.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
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

/// Space-separated flags from the build configuration.
static void appendFlags(std::vector<std::string> &cmd, StringRef flags) {
  SmallVector<StringRef> parts;
  flags.split(parts, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef flag : parts)
    cmd.push_back(flag.str());
}

/// Runs `cmd` (cmd[0] resolved to `program`); `what` names the compiler in
/// errors.
static llvm::Error run(StringRef program, const std::vector<std::string> &cmd,
                       bool verbose, StringRef what, StringRef source) {
  SmallVector<StringRef> args(cmd.begin(), cmd.end());
  if (verbose) {
    llvm::interleave(args, llvm::errs(), " ");
    llvm::errs() << "\n";
  }
  std::string message;
  int status = llvm::sys::ExecuteAndWait(program, args, std::nullopt, {}, 0, 0,
                                         &message);
  if (status != 0)
    return llvm::createStringError(
        what.str() + " failed (exit " + std::to_string(status) + ") on " +
        source.str() + (message.empty() ? "" : ": " + message));
  return llvm::Error::success();
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
  appendFlags(cmd, TGC_SANITIZE_FLAGS);
  cmd.insert(cmd.end(), {"-fopenmp", "-I" + root, source.str(), "-o",
                         executable.str(), "-L" + lib, "-ltgc_runtime",
                         "-ltgc_cpu_kernels", "-lopenblas"});
  // The runtime's collectives (runtime/comm) reduce with MPI when it was
  // built with it.
  appendFlags(cmd, TGC_MPI_LINK_FLAGS);
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
  return run(*program, cmd, options.verbose, "host compiler", source);
}

//===----------------------------------------------------------------------===//
// nvcc
//===----------------------------------------------------------------------===//

llvm::Expected<std::string> mlir::tg::findNvcc() {
  std::string fromVariable = fromEnv("NVCC", "");
  if (!fromVariable.empty()) {
    if (auto found = llvm::sys::findProgramByName(fromVariable))
      return *found;
    return llvm::createStringError("NVCC=" + fromVariable +
                                   " is not an executable");
  }
  if (auto found = llvm::sys::findProgramByName("nvcc"))
    return *found;
  for (StringRef candidate : {StringRef("/usr/local/cuda/bin/nvcc"),
                              StringRef(TGC_NVCC)})
    if (!candidate.empty() && llvm::sys::fs::can_execute(candidate))
      return candidate.str();
  return llvm::createStringError(
      "nvcc not found in PATH or /usr/local/cuda/bin: --target=cuda needs the "
      "CUDA toolkit (or set NVCC); --emit=cuda writes the sources and a "
      "CMakeLists.txt to build on a GPU machine");
}

std::vector<std::string>
mlir::tg::cudaCompileCommand(StringRef nvcc, StringRef source,
                             StringRef executable,
                             const CudaCompileOptions &options) {
  std::string root = fromEnv("TGC_RUNTIME_ROOT", TGC_SOURCE_DIR);
  std::string lib = fromEnv("TGC_RUNTIME_LIB", TGC_LIBRARY_DIR);
  std::vector<std::string> cmd = {nvcc.str(),
                                  options.optimization,
                                  "-arch=" + options.arch,
                                  "-std=c++17",
                                  "-I" + root,
                                  source.str(),
                                  "-o",
                                  executable.str(),
                                  "-L" + lib,
                                  "-ltgc_runtime_cuda"};
  // The NCCL backend before the runtime that reaches it through a weak
  // symbol, the system libraries after (runtime/comm/CMakeLists.txt).
  appendFlags(cmd, TGC_NCCL_NVCC_LINK_FLAGS);
  cmd.push_back("-ltgc_runtime");
  appendFlags(cmd, TGC_MPI_LINK_FLAGS);
  appendFlags(cmd, TGC_NCCL_SYSTEM_LIBS);
  // The training loop sets OpenMP threads (omp_set_num_threads).
  cmd.insert(cmd.end(), {"-lcublasLt", "-lcublas", "-lcudart", "-Xcompiler",
                         "-fopenmp", "-lgomp", "-lpthread"});
  // A sanitizer build's runtime needs the sanitizers' libraries.
  SmallVector<StringRef> sanitize;
  StringRef(TGC_SANITIZE_FLAGS).split(sanitize, ' ', -1, false);
  for (StringRef flag : sanitize)
    cmd.push_back(("-Xcompiler=" + flag).str());
  if (!sanitize.empty())
    cmd.insert(cmd.end(), {"-lasan", "-lubsan"});
  return cmd;
}

llvm::Error mlir::tg::compileCudaExecutable(StringRef source,
                                            StringRef executable,
                                            const CudaCompileOptions &options) {
  auto nvcc = findNvcc();
  if (!nvcc)
    return nvcc.takeError();
  std::string lib = fromEnv("TGC_RUNTIME_LIB", TGC_LIBRARY_DIR);
  for (StringRef archive : {"libtgc_runtime_cuda.a", "libtgc_runtime.a"}) {
    SmallString<256> path(lib);
    llvm::sys::path::append(path, archive);
    if (!llvm::sys::fs::exists(path))
      return llvm::createStringError(
          "the GPU runtime is not built: " + path.str().str() +
          " is missing (build tgc where CMake finds the CUDA toolkit, or set "
          "TGC_RUNTIME_LIB)");
  }
  std::vector<std::string> cmd =
      cudaCompileCommand(*nvcc, source, executable, options);
  return run(*nvcc, cmd, options.verbose, "nvcc", source);
}
