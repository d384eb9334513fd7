//===- HostCompile.h - Emitted source to a training executable ----*- C++
//-*-===//
//
// Runs the host C++ compiler on the units of an emitted C++ program (side
// by side, through the build cache) and links them with the CPU runtime
// (libtgc_runtime, libtgc_cpu_kernels, OpenBLAS, OpenMP, MPI), or nvcc on an
// emitted CUDA source and links it with the GPU runtime (libtgc_runtime_cuda,
// libtgc_runtime, the NCCL backend, cuBLASLt, MPI), or
// (--simt) rewrites an emitted CUDA source with runtime/cuda/simt's
// simt_rewrite.py, compiles it with the host C++ compiler and links it with
// the host build of the GPU runtime (libtgc_runtime_cuda_simt: every CUDA
// thread a fiber, stand-ins of the CUDA runtime, cuBLASLt and NCCL).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_PIPELINE_HOSTCOMPILE_H
#define TGC_COMPILER_PIPELINE_HOSTCOMPILE_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::tg {

/// Where the files generated code is built with are: runtime/ (headers,
/// sources and simt's scripts) under runtimeRoot(), the runtime's archives
/// in runtimeLibraryDir(). They are share/tgc and lib beside the folder of
/// the running binary (the build tree links share/tgc/runtime to the
/// sources; `cmake --install` copies them), or $TGC_RUNTIME_ROOT and
/// $TGC_RUNTIME_LIB.
std::string runtimeRoot();
std::string runtimeLibraryDir();
/// An error naming the missing file when either is not there.
llvm::Error checkRuntimeFiles();

struct HostCompileOptions {
  /// -O3 -march=native by default; tests use -O1 to compile faster.
  std::string optimization = "-O3";
  bool nativeArch = true;
  /// Print the compiler command before running it.
  bool verbose = false;
};

/// One translation unit of a generated program: its file stem and text.
struct SourceUnit {
  std::string name;
  std::string text;
};

/// What a build of units did.
struct UnitBuildStats {
  unsigned compiled = 0; ///< units the host compiler compiled
  unsigned reused = 0;   ///< objects the cache already held
};

/// The cache key of a unit: its text, its compile command (without the
/// file names), the compiler's identity, the runtime headers it includes
/// and, with -march=native, this host's CPU.
std::string unitCacheKey(const SourceUnit &unit,
                         const HostCompileOptions &options);

/// Writes each unit to `workDir`, compiles it to an object (or takes the
/// object `cache` holds for its key), as many at once as this machine has
/// cores, and links the objects with the runtime into `executable`. The
/// error names the unit and carries the compiler's exit status.
llvm::Error compileUnits(llvm::ArrayRef<SourceUnit> units,
                         llvm::StringRef workDir, llvm::StringRef executable,
                         const HostCompileOptions &options,
                         const class BuildCache &cache,
                         UnitBuildStats *stats = nullptr);

struct CudaCompileOptions {
  /// Host-code optimization (nvcc always optimizes device code); tgc
  /// passes -O1 unless told otherwise: the host code launches kernels.
  std::string optimization = "-O3";
  /// The GPU to compile for, as nvcc's -arch takes it.
  std::string arch = "sm_90";
  bool verbose = false;
};

/// nvcc: $NVCC, else `nvcc` on PATH, else /usr/local/cuda/bin/nvcc, else
/// the one CMake found when tgc was built; an error saying where it looked
/// when there is none.
llvm::Expected<std::string> findNvcc();

/// The nvcc command line that links `objects` with the runtime into
/// `executable` (argv[0] is `nvcc`).
std::vector<std::string> cudaLinkCommand(llvm::StringRef nvcc,
                                         llvm::ArrayRef<std::string> objects,
                                         llvm::StringRef executable,
                                         const CudaCompileOptions &options);

/// Writes each unit to `workDir` as a .cu, compiles it with nvcc (or takes
/// the object `cache` holds for the same unit, nvcc, flags and runtime
/// headers), as many at once as this machine has cores, and links the
/// objects with the CUDA runtime into `executable`. The error names the
/// unit and carries nvcc's exit status.
llvm::Error compileCudaUnits(llvm::ArrayRef<SourceUnit> units,
                             llvm::StringRef workDir,
                             llvm::StringRef executable,
                             const CudaCompileOptions &options,
                             const class BuildCache &cache,
                             UnitBuildStats *stats = nullptr);

struct SimtCompileOptions {
  /// -O2 by default: the kernels run as fibers, and -O3 mostly adds compile
  /// time.
  std::string optimization = "-O2";
  /// Print the rewrite and compiler commands before running them.
  bool verbose = false;
};

/// The python3 command line that rewrites the CUDA `source` into the C++
/// `rewritten` (runtime/cuda/simt/simt_rewrite.py; argv[0] is `python3`).
std::vector<std::string> simtRewriteCommand(llvm::StringRef source,
                                            llvm::StringRef rewritten);

/// The host compiler command line for the rewritten source -> `executable`,
/// linked against the host CUDA runtime (with its NCCL stand-in when
/// `withNccl`).
std::vector<std::string> simtCompileCommand(llvm::StringRef rewritten,
                                            llvm::StringRef executable,
                                            bool withNccl,
                                            const SimtCompileOptions &options);

/// Rewrites `source` into `rewritten`, compiles and links it; an error when
/// the host CUDA runtime is not built, else one carrying the failing
/// command's exit status.
llvm::Error compileSimtExecutable(llvm::StringRef source,
                                  llvm::StringRef rewritten,
                                  llvm::StringRef executable,
                                  const SimtCompileOptions &options);

} // namespace mlir::tg

#endif // TGC_COMPILER_PIPELINE_HOSTCOMPILE_H
