//===- ModelDescription.h - What both emitters tell the runtime ---*- C++ -*-===//
//
// The C++ and CUDA emitters write the same model description
// (runtime/core/Model.h: the parameter, state, input and output tables and
// the training defaults) and bind the step functions' arguments and results
// to the runtime's StepIO by the same rules. This file holds those rules, so
// that a model compiled for either target trains from the same data, the
// same checkpoints and the same flags:
//  - @train_step's arguments by role: params, state, batch inputs,
//    accumulated gradients (io.grads, in the order of the trainable
//    parameters of @forward) and scalars (step, base_lr, micro_batches);
//  - the data role of each batch input (InputRole) from its dtype and
//    dim_names;
//  - the tables and defaults themselves, spelled as C++.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_CODEGEN_MODELDESCRIPTION_H
#define TGC_COMPILER_CODEGEN_MODELDESCRIPTION_H

#include "dialects/tg/IR/TgDialect.h"
#include "dialects/tg/IR/TgSharding.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::tg {

//===----------------------------------------------------------------------===//
// C++ spellings
//===----------------------------------------------------------------------===//

/// A float literal that reads back to the same fp32 value ("1.000000000e-03f",
/// INFINITY, NAN).
std::string floatLiteral(double v);
/// "{1, 2, 3}" ("{0}" when empty, so that it can size a C array).
std::string intList(ArrayRef<int64_t> values);
/// The model-file node an op came from (its NameLoc), else file:line; "" when
/// unknown.
std::string describeLoc(Location loc);
/// The runtime's DType enumerator for an element type ("tgc::DType::F32").
std::string dtypeName(Type t);
/// A TensorDesc initialiser. `type` is what one process holds; with
/// `global`, the shape printed is the whole tensor's (each split dim times
/// the sizes of its axes), as initialisation and checkpoints see it.
/// `fileShape`, when given and different from that shape, is printed as
/// the TensorDesc's file shape after the split masks (then printed even
/// when all 0): {"w", F32, 3, {768, 3, 768}, {0, 0, 2}, 2, {768, 2304}}.
std::string tensorDesc(StringRef name, Type type, ShardingAttr sharding = {},
                       MeshOp mesh = {}, bool global = true,
                       ArrayRef<int64_t> fileShape = {});

//===----------------------------------------------------------------------===//
// The step signature
//===----------------------------------------------------------------------===//

/// How the module's @forward and @train_step map onto the runtime's tables
/// and StepIO.
struct StepSignature {
  mutable func::FuncOp forward, trainStep;
  std::string modelName;

  /// @train_step's arguments by role (argument numbers).
  SmallVector<unsigned> paramArgs, stateArgs, inputArgs, accumArgs;
  /// step, base_lr or micro_batches, by argument number.
  DenseMap<unsigned, StringRef> scalarArgs;
  /// io.grads index of each trainable parameter, in @forward's order.
  DenseMap<StringRef, unsigned> gradIndex;
  /// io.params / io.state index by name.
  DenseMap<StringRef, unsigned> paramIndex, stateIndex;

  /// @forward's parameters and batch inputs (argument numbers, in order).
  SmallVector<unsigned> fwdParams, fwdInputs;
  /// The InputRole enumerator of each of fwdInputs ("Tokens", ...).
  SmallVector<std::string> roles;
  /// For each of fwdInputs, the bound its values must stay under: the rows
  /// of the embedding tables it indexes and the classes of the losses it
  /// labels, read from the graph (never from names); 0 when it indexes
  /// nothing.
  SmallVector<int64_t> valueLimits;
  /// trainArgument and forwardArgument of every argument, spelled once:
  /// finding an argument among the roles' lists for each would be quadratic.
  SmallVector<std::string> trainBindings, forwardBindings;

  /// Reads the module; `backend` ("cpu backend") prefixes the diagnostics.
  static FailureOr<StepSignature> analyze(ModuleOp module, StringRef backend);

  /// The StepIO buffer behind @train_step's argument `i` ("io.params[0]",
  /// "io.state[3]", "io.inputs[1]", "io.grads[2]"); "" for a scalar.
  std::string trainArgument(unsigned i) const;
  /// trainArgument(i), or for a scalar the address of its field among
  /// `scalars` ("&io." gives "&io.step", "&io.baseLr", "&io.microBatches").
  std::string trainArgumentOrScalar(unsigned i, StringRef scalars) const;
  /// The StepIO buffer behind @forward's (or @forward_backward's) argument
  /// `i`: params then inputs.
  std::string forwardArgument(unsigned i) const;
  /// The metric field ("loss", "gradNorm", "lr") @train_step's result `r`
  /// fills, or "" when it is an update.
  StringRef metricField(unsigned r) const;
  /// The buffer @train_step's update result `r` overwrites ("io.params[0]",
  /// "io.state[1]"); fails with a diagnostic for a result that is neither an
  /// update of a known tensor nor a metric.
  FailureOr<std::string> updateTarget(unsigned r, StringRef backend) const;
  /// The io.grads index of @forward_backward's result `r` (a tg.grad), or
  /// -1 when `r` is no gradient; fails for the gradient of an unknown or
  /// frozen parameter.
  FailureOr<int> gradResultIndex(func::FuncOp forwardBackward, unsigned r,
                                 StringRef backend) const;
};

/// The runtime's index of mesh axis `axis` of the module's tg.mesh, for the
/// collectives of runtime/comm/Comm.h; -1 (every process) when the module
/// has no mesh. Fails with a diagnostic on `op` when the mesh lacks it.
FailureOr<int> meshAxisIndex(Operation *op, StringRef axis, StringRef backend);

/// A collective along `dim` of a tensor of `type` moves each process's piece
/// as this many runs (the product of the dims before `dim`; 1 along the
/// outermost dim), the `blocks` of tgc::comm::allGather and friends.
int64_t runsBefore(Type type, int64_t dim);

/// The runtime's spelling of a collective's reduction:
/// "tgc::comm::ReduceOp::Sum" or "...::Mean".
StringRef commReduceOp(Reduction reduction);

/// The namespace-scope tables kParams, kState, kInputs and kOutputs of
/// runtime/core/Model.h.
void emitModelTables(const StepSignature &signature, llvm::raw_ostream &os);

/// Fails with a diagnostic at the op (its model-file node) when one tensor
/// of `module`'s step functions needs more than `limitBytes`, the memory the
/// target can hold (`target` names it: "this machine's 23.4 GiB of memory").
LogicalResult checkTensorSizes(ModuleOp module, int64_t limitBytes,
                               StringRef target);

/// The TrainingDefaults initializer of ModelDesc, from the module's training
/// table ("{/*batchSize=*/32, ...}").
std::string trainingDefaults(const StepSignature &signature, ModuleOp module);

/// The definition of kModel, the ModelDesc of runtime/core/Model.h, and
/// main(), which trains it: the tables of emitModelTables, the step
/// functions train_step, grad_step and eval_step (`pipelined`: none of
/// them, and the tables of PipelineTables.h, kPipeline, instead), and what
/// each target says for itself, the expressions of `deviceOps` ("nullptr"
/// for none), `flopsPerStep` and `arenaBytes`.
void emitModelDesc(const StepSignature &signature, ModuleOp module,
                   StringRef deviceOps, StringRef flopsPerStep,
                   StringRef arenaBytes, llvm::raw_ostream &os,
                   bool pipelined = false);

/// One number of the module's training table (tg.training), or `fallback`.
double trainingNumber(ModuleOp module, ArrayRef<StringRef> path,
                      double fallback);

} // namespace mlir::tg

#endif // TGC_COMPILER_CODEGEN_MODELDESCRIPTION_H
