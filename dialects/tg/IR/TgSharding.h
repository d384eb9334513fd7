//===- TgSharding.h - Meshes and shardings of tg values ---------*- C++ -*-===//
//
// What the sharding passes and the verifiers share: finding a module's mesh,
// checking a #tg.sharding against a tensor type, local shapes, and reading
// and writing the sharding of any value (function argument or op result).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_TG_IR_TGSHARDING_H
#define TGC_DIALECTS_TG_IR_TGSHARDING_H

#include "dialects/tg/IR/TgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::tg {

/// Attribute names: on function arguments and results a #tg.sharding and a
/// string; on ops an array of each, one per result.
constexpr llvm::StringLiteral kShardingAttr = "tg.sharding";
constexpr llvm::StringLiteral kShardingOriginAttr = "tg.sharding_origin";
/// On a parameter argument: the sharding preset for it alone (dp, zero1,
/// zero2, zero3, tp, sp, megatron), from the model file's `shard`.
constexpr llvm::StringLiteral kShardPresetAttr = "tg.shard";
/// On a collective tg-partition inserted: the value and the change of
/// sharding that caused it.
constexpr llvm::StringLiteral kReshardAttr = "tg.reshard";
/// On a function tg-partition rewrote: its types are one process's pieces,
/// and the `tg.sharding` of its arguments and results says how the global
/// tensors were split.
constexpr llvm::StringLiteral kPartitionedAttr = "tg.partitioned";

/// The global type of `local`, one process's piece of a tensor sharded as
/// `sharding`: each split dim multiplied by the sizes of its axes.
Type globalType(Type local, ShardingAttr sharding, MeshOp mesh);

/// Whether mesh axis `name` splits the batch: the axes named "data" or "dp"
/// (the importer's batch dims hold a micro-batch per data replica).
inline bool isDataAxis(StringRef name) {
  return name == "data" || name == "dp";
}

/// The sharding presets, as tgc --shard, a model file's `shard` and
/// `tg.shard` spell them: dp, zero1, zero2, zero3, tp, sp, megatron.
ArrayRef<StringRef> shardPresetNames();
/// Whether preset `name` splits weights over the axis tp (tp, sp,
/// megatron), and whether it also splits the activations between the
/// tensor-parallel blocks along the sequence (sp, megatron).
bool isTensorParallelPreset(StringRef name);
bool isSequenceParallelPreset(StringRef name);

/// The last op of a step's forward pass: the one that computes the loss
/// (the result marked tg.metric = "loss"), looking through the collective
/// that sums it over the data axes in a partitioned step; null without a
/// loss.
Operation *forwardEndOf(func::FuncOp step);
/// The values of `func` computed from the batch: its arguments that are
/// not a parameter, optimizer state or accumulator, and every result of
/// an op that reads one. Each micro-batch has its own.
DenseSet<Value> valuesFromBatch(func::FuncOp func);

/// The tg.mesh named `name` in the module around `from`, or null.
MeshOp lookupMesh(Operation *from, FlatSymbolRefAttr name);
/// The module's tg.mesh (the first, when there are several), or null.
MeshOp getModuleMesh(Operation *from);

/// Checks `sharding` against the tensor `type` and `mesh`: the ranks agree,
/// every axis exists and appears once, and each dimension's axes divide it.
LogicalResult verifyShardingFor(ShardingAttr sharding, Type type, MeshOp mesh,
                                function_ref<InFlightDiagnostic()> emitError);

/// The shape one process holds of a tensor of `shape` sharded as
/// `sharding`: each split dimension divided by the product of its axes.
SmallVector<int64_t> localShape(ShardingAttr sharding, ArrayRef<int64_t> shape,
                                MeshOp mesh);

/// The sharding recorded for `value` (a function argument's `tg.sharding`,
/// or its entry in the defining op's), or null.
ShardingAttr getSharding(Value value);
/// Records `sharding` (and where it came from) for `value`.
void setSharding(Value value, ShardingAttr sharding, StringRef origin);
/// A sharding for argument `index` of a function, and its origin.
struct ArgSharding {
  unsigned index;
  ShardingAttr sharding;
  std::string origin;
};
/// Records many arguments' shardings of `func` at once. A
/// function keeps its arguments' attributes in one array: each setSharding
/// on an argument rebuilds it, so a step of thousands of arguments (GPT-3
/// 175B's has 4,600) set one by one costs their square in time and in
/// attributes the context keeps.
void setArgShardings(func::FuncOp func, ArrayRef<ArgSharding> shardings);
/// Records the `tg.sharding` of every result of `func` at once (one per
/// result; a null one is left as it is), for the same reason.
void setResultShardings(func::FuncOp func, ArrayRef<ShardingAttr> shardings);
/// The origin recorded beside `value`'s sharding, or "".
StringRef getShardingOrigin(Value value);

/// `[{"data"}, {}] partial {"tp"}`: a sharding without its mesh, for
/// diagnostics and tg.reshard.
std::string formatSharding(ShardingAttr sharding);

} // namespace mlir::tg

#endif // TGC_DIALECTS_TG_IR_TGSHARDING_H
