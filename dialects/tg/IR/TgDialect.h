//===- TgDialect.h - The tg training dialect ----------------------*- C++ -*-===//
//
// Declares the tg dialect, its attributes and enums.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_DIALECTS_TG_IR_TGDIALECT_H
#define TGC_DIALECTS_TG_IR_TGDIALECT_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/Hashing.h"

#include <string>

#include "dialects/tg/IR/TgDialect.h.inc"
#include "dialects/tg/IR/TgEnums.h.inc"

namespace mlir::tg {

/// Where the memory plan puts one result of an op (an entry of #tg.place):
/// bytes of its own at an offset in its function's arena, the bytes of one
/// of the op's operands (a view: a reshape, an update in place), or in a
/// layer body the arena offset its caller passes in one slot of the body's
/// table.
struct ResultPlace {
  enum class Kind : uint8_t { Arena, View, Slot };
  Kind kind = Kind::Arena;
  /// The arena offset, the viewed operand's number, or the slot.
  int64_t value = 0;

  static ResultPlace arena(int64_t offset) { return {Kind::Arena, offset}; }
  static ResultPlace view(int64_t operand) { return {Kind::View, operand}; }
  static ResultPlace slot(int64_t slot) { return {Kind::Slot, slot}; }
  bool operator==(const ResultPlace &other) const {
    return kind == other.kind && value == other.value;
  }
};
inline llvm::hash_code hash_value(const ResultPlace &place) {
  return llvm::hash_combine(place.kind, place.value);
}

} // namespace mlir::tg

#define GET_ATTRDEF_CLASSES
#include "dialects/tg/IR/TgAttrs.h.inc"

namespace mlir::tg {

/// The spelling of every case of the tg enum `EnumT`, in order: the values a
/// diagnostic lists when a string names none of them. The enums number their
/// cases from 0 without gaps, and stringifyEnum gives "" past the last.
template <typename EnumT>
llvm::SmallVector<llvm::StringRef> getEnumSpellings() {
  llvm::SmallVector<llvm::StringRef> out;
  for (uint32_t i = 0;; ++i) {
    llvm::StringRef s = stringifyEnum(static_cast<EnumT>(i));
    if (s.empty())
      return out;
    out.push_back(s);
  }
}

/// The model file's node name an op came from ("h.0.attn.q"): the first
/// name in its location (a backward op's fused location holds its forward
/// op's), or "".
std::string nodeNameOf(Operation *op);

/// The layer a node name belongs to: the name up to its first all-digit
/// component after the first ("h.0" for "h.0.attn.q", "layers.11" for
/// "layers.11.mlp"); "" for a name with no such component.
std::string layerOfName(llvm::StringRef name);

/// The group of a node name: its layer ("h.0"), else its first component
/// ("wte" for "wte.lookup").
std::string groupOfName(llvm::StringRef name);

/// The model-file block `op` computes for (its tg.layer): a repeated layer
/// ("h.0", layerOfName of it is itself) or a top-level module ("wte"); ""
/// for an op of none (a constant, the optimizer's bookkeeping).
llvm::StringRef layerOf(Operation *op);
/// The layer of the op that defines `v`, or for a function's argument the
/// group of its parameter's, input's, state's or accumulator's name.
std::string layerOfValue(Value v);
/// Sets `op`'s tg.layer ("" removes it).
void setLayer(Operation *op, llvm::StringRef layer);

/// While installed on a builder, gives each op it inserts (other than one
/// without operands, a constant or an iota, which CSE shares between
/// layers) `layer` as its tg.layer,
/// unless the op has one: a pass building the ops of one op (its
/// gradient, its pieces) installs it with that op's layer. A stamp
/// installed inside another replaces it ("" then stamps nothing); each
/// forwards to the builder's own listener, which it restores when
/// destroyed.
class LayerStamp : public OpBuilder::Listener {
public:
  LayerStamp(OpBuilder &builder, llvm::StringRef layer);
  LayerStamp(OpBuilder &builder, Operation *from)
      : LayerStamp(builder, layerOf(from)) {}
  ~LayerStamp() override;
  LayerStamp(const LayerStamp &) = delete;
  LayerStamp &operator=(const LayerStamp &) = delete;

  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint previous) override;
  void notifyBlockInserted(Block *block, Region *previous,
                           Region::iterator previousIt) override;

private:
  OpBuilder &builder_;
  LayerStamp *outer_;         ///< the stamp this one replaces, if any
  LayerStamp *previous_;      ///< the innermost stamp before this one
  OpBuilder::Listener *next_; ///< the builder's own listener
  std::string layer_;
};

/// The memory plan's place of each result of `op` (its tg.place), or null
/// when the op has none (a constant, an op of an unplanned function).
PlaceAttr placeOf(Operation *op);
/// The operand whose bytes `v` shares in the memory plan (a view in its
/// op's tg.place), or null.
Value plannedView(Value v);

/// Pipeline stages a plan is priced with (the module's tg.pipeline): the
/// repeated layers in `stages` consecutive groups, each device holding
/// `virtualStages` chunks of its group (Megatron-LM's interleaved
/// schedule). tg-pipeline-split builds them (the CPU backend emits them).
struct PipelineStages {
  int64_t stages = 1, virtualStages = 1;
  bool pipelined() const { return stages > 1; }
};
PipelineStages getPipelineStages(ModuleOp module);

/// The precision policy tg-precision applied to `module` (its tg.precision):
/// "fp32" or "bf16", or "" when the module records none.
llvm::StringRef appliedPrecision(ModuleOp module);

/// The last of tgc's phases `module` went through (its tg.phase), if it
/// records one.
std::optional<IrPhase> recordedPhase(ModuleOp module);
void setRecordedPhase(ModuleOp module, IrPhase phase);
/// Records `stages` on the module (removes tg.pipeline for 1 x 1).
void setPipelineStages(ModuleOp module, PipelineStages stages);

} // namespace mlir::tg

#endif // TGC_DIALECTS_TG_IR_TGDIALECT_H
