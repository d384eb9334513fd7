//===- EmitCuda.h - tg train step to CUDA C++ ---------------------*- C++
//-*-===//
//
// Emits one readable .cu source for a module that has @forward,
// @forward_backward and @train_step: the same ModelDesc the C++ emitter
// writes (with DeviceOps pointing at runtime/cuda), generated kernels for
// elementwise work, and calls into runtime/cuda for GEMMs (cuBLASLt) and the
// hand-written kernels (layer norm, softmax/cross-entropy, attention,
// embedding backward, optimizer updates). The same program as units (each
// layer body of tg-outline-layers with its kernels, and the steps) for
// builds that compile them side by side and cache their objects. Also what
// builds the source on a machine without tgc: a CMakeLists.txt and a
// manifest that describes the model.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_CODEGEN_EMITCUDA_H
#define TGC_COMPILER_CODEGEN_EMITCUDA_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::tg {

struct CudaEmitOptions {
  /// The model file the module came from, named in comments.
  std::string sourceName;
  /// The precision the module was compiled for ("bf16": bf16 compute, fp32
  /// master weights and optimizer state; "fp32"), when the module does not
  /// say (its tg.precision attribute wins). Picks the peak FLOP/s for MFU.
  std::string precision = "fp32";
  /// No one tensor may need more device memory than this (by default the
  /// largest GPU the backend targets, an H200's 141 GB).
  int64_t deviceMemoryBytes = 141'000'000'000ll;
  /// A step of more launches is emitted as parts of at most this many, which
  /// NAME_launches calls in order: the host compiler's time on one function
  /// grows faster than its length.
  unsigned launchesPerFunction = 256;
};

/// What the emitted program needs, for the manifest and the driver.
struct CudaEmitSummary {
  std::string modelName;
  std::string precision;
  /// Device memory of the constants and the steps' intermediates (the
  /// arena without the runtime's scalars and the launchers' workspace,
  /// which it adds at start-up).
  int64_t arenaBytes = 0;
  /// Model FLOPs of one micro-batch's training step.
  double flopsPerStep = 0;
  int64_t numKernels = 0;
  int64_t numBuckets = 0;
};

/// Writes the CUDA source of `module` to `os`; fails with a diagnostic on
/// anything the CUDA backend cannot run (an element type it lacks, an op
/// without a lowering or with types its kernel does not take).
LogicalResult emitCuda(ModuleOp module, llvm::raw_ostream &os,
                       const CudaEmitOptions &options,
                       CudaEmitSummary *summary = nullptr);

/// One translation unit of a CUDA program.
struct CudaUnit {
  std::string name; ///< its file stem
  std::string text;
};

/// The same program as units, for a build that compiles them side by side
/// and reuses the objects of units compiled before: "step" (everything but
/// the layer bodies, which it declares) and the distinct layer bodies in
/// units of about 3,000 lines (each body with the generated kernels it
/// launches), in the order of their names and named by their code.
LogicalResult emitCudaUnits(ModuleOp module, const CudaEmitOptions &options,
                            std::vector<CudaUnit> &units,
                            CudaEmitSummary *summary = nullptr);

/// A CMakeLists.txt that builds `sourceFile` (in the same folder) into
/// `executableName` against runtime/ on another machine (a GPU node without
/// LLVM): the runtime is built from its sources, found through the cache
/// variable TGC_RUNTIME_ROOT (default `runtimeRoot`, this checkout);
/// CMAKE_CUDA_ARCHITECTURES defaults to `cudaArch` ("90").
std::string cudaCMakeLists(llvm::StringRef executableName,
                           llvm::StringRef sourceFile,
                           llvm::StringRef runtimeRoot,
                           llvm::StringRef cudaArch = "90");

/// A readable JSON description of the compiled model: parameters (shapes,
/// dtypes, initializers), optimizer state, batch inputs and their data roles,
/// outputs, the arena, the precision and the FLOPs per step.
LogicalResult writeCudaManifest(ModuleOp module,
                                const CudaEmitSummary &summary,
                                llvm::StringRef sourceFile,
                                llvm::raw_ostream &os);

} // namespace mlir::tg

#endif // TGC_COMPILER_CODEGEN_EMITCUDA_H
