//===- Sharding.h - What the sharding passes share --------------*- C++ -*-===//
//
// The decision both sharding passes make for one op (which mesh axes split
// each of its factors, given its operands' shardings), the resharding of a
// value from one sharding to another as collectives, and the presets
// (dp, zero1, zero2, zero3) as shardings of a step's arguments.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_SHARDING_SHARDING_H
#define TGC_PASSES_SHARDING_SHARDING_H

#include "dialects/tg/IR/TgInterfaces.h"
#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::tg {

/// How one op runs split: the operand shardings it needs, the shardings of
/// its results, and the factor by which each process scales its results
/// (1 / pieces of the split factors it takes a mean over).
struct OpSharding {
  SmallVector<ShardingAttr> operands;
  SmallVector<ShardingAttr> results;
  double scale = 1.0;
  /// Elastic axes (tg.mesh's `elastic`) whose size also divides the
  /// results: a mean over them, whose size is known at launch only.
  SmallVector<StringRef> meanOverElastic;
  /// The operand whose sharding decided the first split factor, -1 when
  /// nothing is split (for the origin of the results).
  int64_t decidedBy = -1;
};

/// Whether `op` views its one operand as a parameter is viewed before a
/// reader: its cast to bf16, the slice and reshape of a fused projection's
/// block (tg-split-fused-projections).
bool isParamView(Operation *op);

/// `v` through the views (isParamView) that compute it.
Value throughParamViews(Value v);

/// Decides `op`'s sharding from its operands' (null: not known yet, the op
/// decides for it). Factors take the axes of the first operand that splits
/// them, where the axes are not used yet and divide the factor; partial
/// sums pass through where the rule says the op is linear. Ops without a
/// rule run whole: replicated operands and results.
OpSharding decideOpSharding(Operation *op, ArrayRef<ShardingAttr> operands,
                            MeshOp mesh);

/// One collective of a resharding: its kind (tg.reduce_scatter,
/// tg.all_reduce, tg.all_gather or tg.all_slice), its mesh axis and the dim
/// it splits or joins (-1 for an all-reduce).
struct ReshardStep {
  /// MakePartial: a value whole over `axis` becomes a partial sum over it,
  /// kept on the axis' first process and zero on the others (no
  /// communication; each process selects by its coordinate).
  enum Kind { ReduceScatter, AllReduce, AllGather, AllSlice, MakePartial } kind;
  StringRef axis;
  int64_t dim = -1;
};

/// The collectives that turn a value sharded as `from` into `to`, in
/// order: partial sums first, each scattered onto the dim `to` splits over
/// its axis next or else all-reduced; then the splits `to` lacks gathered
/// (minor-most axis first); then the splits it adds sliced; then the
/// partial sums `to` has and `from` lacks made. Any two shardings of a
/// value have such a list (a verified sharding never has an axis both on
/// a dim and among its partial sums). tg-partition emits these (reshard)
/// and tg-auto-shard prices them.
SmallVector<ReshardStep> reshardSteps(ShardingAttr from, ShardingAttr to);

/// Emits the collectives that turn `value`, sharded as `from`, into `to`
/// (same mesh), each with a `tg.reshard` naming `what` and the change:
/// partial sums become whole by tg.reduce_scatter where `to` splits a dim
/// over the axis next, by tg.all_reduce elsewhere; then tg.all_gather
/// undoes splits `to` lacks (minor-most axis first) and tg.all_slice adds
/// those it has; a partial sum `from` lacks is made by keeping the value
/// on the axis' first process and zeros on the others. Returns `value`
/// when the shardings agree.
Value reshard(OpBuilder &builder, Location loc, Value value, ShardingAttr from,
              ShardingAttr to, MeshOp mesh, StringRef what);

/// This process's coordinate on mesh axis `axis`, as an f32 tensor<1>: an
/// iota over the axis, of which tg.all_slice leaves each process its own
/// element (no communication; `why` becomes its tg.reshard).
Value axisCoordinate(OpBuilder &builder, Location loc, MeshOp mesh,
                     StringRef axis, StringRef why);

/// The local form of an op whose vocabulary (class) dim is split over
/// `axes`, where the op on its pieces alone would be wrong (Megatron-LM's
/// vocabulary-parallel embedding and cross-entropy); null for any other op
/// or when `axes` is empty. `operands` are the local operands, resharded as
/// decideOpSharding said; the results are what it said: an embedding's a
/// partial sum over `axes` (rows outside the piece look up zeros), a
/// cross-entropy's a partial sum (each piece's share of the target logit,
/// plus the log-sum-exp on the first piece, from the row maxima gathered
/// and the sums of exponentials reduced over `axes`), its gradient split
/// like the logits. The collectives name `why`.
Value lowerVocabParallel(OpBuilder &builder, Operation *op, ValueRange operands,
                         ArrayRef<StringRef> axes, MeshOp mesh, StringRef why);

/// `grad` (a whole tg.embedding_grad over local, whole operands) for this
/// process's rows only, dim 0 split over `axes`: the tokens outside the
/// rows add nothing. Its sharding: dim 0 over `axes`, the rest whole.
Value embeddingGradRows(OpBuilder &builder, EmbeddingGradOp grad,
                        ArrayRef<StringRef> axes, MeshOp mesh, StringRef why);

/// The mesh axes that split the vocabulary (class) dim of `op` under
/// `decision`, for lowerVocabParallel; empty for other ops.
SmallVector<StringRef> vocabAxes(Operation *op, const OpSharding &decision);

/// A short name for `value` in origins and tg.reshard: the model-file name
/// of an argument (`fc1.weight`, `x`), else the op and its location.
std::string describeValue(Value value);

/// The sharding result `index` of a step function must have, given the
/// sharding its value has (`computed`): the argument's for a new value of a
/// parameter or state (`tg.update`), whole for metrics and the loss, the
/// computed split without partial sums for other outputs, and the
/// computed one for gradients (`tg.grad`: summed over micro-batches first,
/// reduced in the train step).
/// `byName`, when given, is argumentsByName(func): a step of thousands of
/// results looks each up there rather than scanning the arguments.
ShardingAttr resultTarget(func::FuncOp func, unsigned index,
                          ShardingAttr computed,
                          const llvm::StringMap<unsigned> *byName = nullptr);
/// The argument of each parameter or state name (`tg.param`, `tg.state`) of
/// `func`: the first that carries it.
llvm::StringMap<unsigned> argumentsByName(func::FuncOp func);

/// The mesh axes that split the batch: those named "data" or "dp".
SmallVector<StringRef> dataAxes(MeshOp mesh);

/// The sharding of argument `index` of `func` as a batch input: its `batch`
/// dim (by tg.dim_names) over the mesh's data axes, the rest whole; whole
/// when it has no batch dim (or the mesh no data axis). Null when the batch
/// does not divide over the data axes' processes.
ShardingAttr batchInputSharding(func::FuncOp func, unsigned index, MeshOp mesh);

} // namespace mlir::tg

#endif // TGC_PASSES_SHARDING_SHARDING_H
