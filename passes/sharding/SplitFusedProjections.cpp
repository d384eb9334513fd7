//===- SplitFusedProjections.cpp - Blocks of a fused projection -*- C++ -*-===//
//
// tg-split-fused-projections: a projection whose output is cut into equal
// blocks along its last dim (GPT-2's c_attn: qkv = x @ W + b with W [C, 3C],
// then q, k and v are its three C-wide slices) computes each block from its
// own view of the weight instead. W is held as [C, 3, C] (the same elements
// in the same row-major order; files keep [C, 3C], which tg.file_shape
// records), and block j is x @ W[:, j, :] + b[j, :]. A split of W's last dim
// then takes the same columns of every block (each process's heads of q, k
// and v), which no contiguous split of [C, 3C] can.
//
//===----------------------------------------------------------------------===//

#include "passes/sharding/Passes.h"

#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::tg {
#define GEN_PASS_DEF_SPLITFUSEDPROJECTIONSPASS
#include "passes/sharding/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// qkv = x @ W (+ b), read only by slices that tile its last dim into
/// equal blocks.
struct FusedProjection {
  MatmulOp matmul;
  BlockArgument weight;
  AddOp add;          ///< null without a bias
  BlockArgument bias; ///< null without a bias
  /// The slices, ordered by the block they take.
  SmallVector<SliceOp> blocks;
  int64_t width = 0; ///< of each block
};

/// `v` as a parameter argument of `func` read by nothing but one op, not
/// pinned (a pin splits the shape the model file gives) and under a
/// tensor-parallel preset (its own tg.shard, else `preset`): the
/// parameters tp may split by heads.
BlockArgument soleUseParam(func::FuncOp func, Value v, StringRef preset) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &func.getBody().front() || !arg.hasOneUse())
    return {};
  unsigned i = arg.getArgNumber();
  if (!func.getArgAttr(i, TgDialect::kParamAttr) ||
      func.getArgAttr(i, TgDialect::kFileShapeAttr) ||
      func.getArgAttr(i, kShardingAttr))
    return {};
  if (auto own = func.getArgAttrOfType<ShardPresetAttr>(i, kShardPresetAttr))
    preset = stringifyShardPreset(own.getValue());
  if (!isTensorParallelPreset(preset))
    return {};
  return arg;
}

/// The slice's block of the last dim [start, limit) when it takes every
/// other dim whole with unit strides.
std::optional<std::pair<int64_t, int64_t>> lastDimBlock(SliceOp slice) {
  auto type = cast<RankedTensorType>(slice.getX().getType());
  int64_t last = type.getRank() - 1;
  if (llvm::any_of(slice.getEffectiveStride(),
                   [](int64_t s) { return s != 1; }))
    return std::nullopt;
  for (int64_t d = 0; d < last; ++d)
    if (slice.getStart()[d] != 0 || slice.getLimit()[d] != type.getDimSize(d))
      return std::nullopt;
  return std::make_pair(slice.getStart()[last], slice.getLimit()[last]);
}

std::optional<FusedProjection>
matchFusedProjection(func::FuncOp func, MatmulOp matmul, StringRef preset) {
  FusedProjection p;
  p.matmul = matmul;
  p.weight = soleUseParam(func, matmul.getRhs(), preset);
  auto weightType =
      p.weight ? dyn_cast<RankedTensorType>(p.weight.getType()) : nullptr;
  if (!weightType || weightType.getRank() != 2 || !weightType.hasStaticShape())
    return std::nullopt;
  int64_t fused = weightType.getDimSize(matmul.getTransposeRhs() ? 0 : 1);
  Value out = matmul.getResult();
  if (out.hasOneUse())
    if (auto add = dyn_cast<AddOp>(*out.getUsers().begin())) {
      Value other = add.getLhs() == out ? add.getRhs() : add.getLhs();
      auto biasType = dyn_cast<RankedTensorType>(other.getType());
      if (BlockArgument bias = soleUseParam(func, other, preset);
          bias && biasType.getRank() == 1 && biasType.getDimSize(0) == fused &&
          add.getType() == out.getType()) {
        p.add = add;
        p.bias = bias;
        out = add.getResult();
      }
    }
  for (Operation *user : out.getUsers()) {
    auto slice = dyn_cast<SliceOp>(user);
    if (!slice || !lastDimBlock(slice))
      return std::nullopt;
    p.blocks.push_back(slice);
  }
  llvm::sort(p.blocks, [](SliceOp a, SliceOp b) {
    return lastDimBlock(a)->first < lastDimBlock(b)->first;
  });
  if (p.blocks.size() < 2)
    return std::nullopt;
  p.width = fused / static_cast<int64_t>(p.blocks.size());
  for (auto [j, slice] : llvm::enumerate(p.blocks))
    if (*lastDimBlock(slice) !=
        std::make_pair(int64_t(j) * p.width, int64_t(j + 1) * p.width))
      return std::nullopt;
  if (p.width * static_cast<int64_t>(p.blocks.size()) != fused)
    return std::nullopt;
  return p;
}

/// Gives the argument `arg` the row-major view `view` of its type, and
/// records its shape in files.
void viewArgument(func::FuncOp func, BlockArgument arg,
                  ArrayRef<int64_t> view) {
  auto type = cast<RankedTensorType>(arg.getType());
  func.setArgAttr(arg.getArgNumber(), TgDialect::kFileShapeAttr,
                  DenseI64ArrayAttr::get(func.getContext(), type.getShape()));
  arg.setType(type.clone(view));
}

/// Block `j` of the viewed argument `arg` ([n, N] blocks along dim
/// `blockDim` of the view), in the shape `type` a matmul or add reads.
Value blockOf(OpBuilder &b, Location loc, BlockArgument arg, int64_t blockDim,
              int64_t j, RankedTensorType type) {
  auto view = cast<RankedTensorType>(arg.getType());
  SmallVector<int64_t> start(view.getRank(), 0);
  SmallVector<int64_t> limit(view.getShape());
  start[blockDim] = j;
  limit[blockDim] = j + 1;
  Value slice = SliceOp::create(b, loc, arg, b.getDenseI64ArrayAttr(start),
                                b.getDenseI64ArrayAttr(limit), nullptr);
  return ReshapeOp::create(b, loc, type, slice);
}

void split(func::FuncOp func, FusedProjection &p) {
  int64_t n = p.blocks.size();
  bool transposed = p.matmul.getTransposeRhs();
  auto weightType = cast<RankedTensorType>(p.weight.getType());
  // [K, n*N] -> [K, n, N]; transposed, [n*N, K] -> [n, N, K].
  int64_t k = weightType.getDimSize(transposed ? 1 : 0);
  SmallVector<int64_t> view = transposed ? SmallVector<int64_t>{n, p.width, k}
                                         : SmallVector<int64_t>{k, n, p.width};
  int64_t blockDim = transposed ? 0 : 1;
  auto blockWeightType =
      weightType.clone(transposed ? SmallVector<int64_t>{p.width, k}
                                  : SmallVector<int64_t>{k, p.width});
  viewArgument(func, p.weight, view);
  if (p.bias)
    viewArgument(func, p.bias, {n, p.width});

  // The blocks' products side by side where the fused one was, so that
  // tg-partition reshards their common input once for all of them.
  OpBuilder b(p.matmul);
  LayerStamp stamp(b, p.matmul);
  SmallVector<Value> weights, blocks;
  for (auto [j, slice] : llvm::enumerate(p.blocks))
    weights.push_back(
        blockOf(b, slice.getLoc(), p.weight, blockDim, j, blockWeightType));
  for (auto [j, slice] : llvm::enumerate(p.blocks))
    blocks.push_back(MatmulOp::create(
        b, p.matmul.getLoc(), slice.getType(), p.matmul.getLhs(), weights[j],
        p.matmul.getTransposeLhsAttr(), p.matmul.getTransposeRhsAttr()));
  if (p.bias) {
    auto biasType = RankedTensorType::get(
        {p.width}, cast<RankedTensorType>(p.bias.getType()).getElementType());
    bool biasFirst = p.add.getLhs() != p.matmul.getResult();
    for (auto [j, slice] : llvm::enumerate(p.blocks)) {
      // The block's value is the slice's: it takes its name.
      Value bias = blockOf(b, slice.getLoc(), p.bias, 0, j, biasType);
      blocks[j] = biasFirst ? AddOp::create(b, slice.getLoc(), bias, blocks[j])
                            : AddOp::create(b, slice.getLoc(), blocks[j], bias);
    }
  }
  for (auto [slice, block] : llvm::zip(p.blocks, blocks)) {
    slice.getResult().replaceAllUsesWith(block);
    slice.erase();
  }
  if (p.add)
    p.add.erase();
  p.matmul.erase();
}

struct SplitFusedProjectionsPass
    : public tg::impl::SplitFusedProjectionsPassBase<
          SplitFusedProjectionsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshOp mesh = getModuleMesh(module);
    if (!mesh)
      return;
    // The tp presets split over the axis "tp".
    if (mesh.axisSize("tp") <= 1)
      return;
    // The parameters' new types must reach every function that reads
    // them: autodiff and tg-optimizer derive theirs from @forward's.
    if (auto step = module.lookupSymbol<func::FuncOp>("forward_backward")) {
      step.emitError("tg-split-fused-projections runs before tg-autodiff, on "
                     "@forward alone");
      return signalPassFailure();
    }
    auto func = module.lookupSymbol<func::FuncOp>("forward");
    if (!func || func.isExternal())
      return;
    SmallVector<FusedProjection> found;
    func.walk([&](MatmulOp matmul) {
      if (auto p = matchFusedProjection(func, matmul, preset))
        found.push_back(std::move(*p));
    });
    for (FusedProjection &p : found)
      split(func, p);
    func.setType(FunctionType::get(&getContext(),
                                   func.getBody().front().getArgumentTypes(),
                                   func.getResultTypes()));
  }
};

} // namespace
