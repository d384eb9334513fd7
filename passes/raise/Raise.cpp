//===- Raise.cpp - Attention and GELU raised to their tg ops ----*- C++ -*-===//
//
// tg-raise matches from the end of each pattern (the attention's second
// matmul, the GELU's last product) back to its inputs, checks every
// constant, and replaces the pattern's result; the ops left without uses
// are erased.
//
//===----------------------------------------------------------------------===//

#include "passes/raise/Passes.h"

#include "dialects/tg/IR/TgOps.h"

#include <cmath>
#include <optional>

namespace mlir::tg {
#define GEN_PASS_DEF_RAISEPASS
#include "passes/raise/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

namespace {

/// The value of a splat float constant.
std::optional<double> splatOf(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return std::nullopt;
  return dense.getSplatValue<FloatAttr>().getValueAsDouble();
}

bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-6 * std::max(std::fabs(a), std::fabs(b));
}

bool singleUse(Value v) { return v.hasOneUse(); }

/// `x * c` or `c * x` (or `x / (1/c)`) with c a splat constant.
bool matchScaled(Value v, Value &x, double &c) {
  if (auto mul = v.getDefiningOp<MulOp>()) {
    for (auto [a, b] : {std::pair{mul.getLhs(), mul.getRhs()},
                        std::pair{mul.getRhs(), mul.getLhs()}})
      if (auto s = splatOf(b)) {
        x = a;
        c = *s;
        return true;
      }
  }
  if (auto div = v.getDefiningOp<DivOp>())
    if (auto s = splatOf(div.getRhs())) {
      x = div.getLhs();
      c = 1.0 / *s;
      return true;
    }
  return false;
}

/// `a + c` or `c + a` with c a splat constant.
bool matchPlusConst(Value v, Value &x, double &c) {
  auto add = v.getDefiningOp<AddOp>();
  if (!add)
    return false;
  for (auto [a, b] : {std::pair{add.getLhs(), add.getRhs()},
                      std::pair{add.getRhs(), add.getLhs()}})
    if (auto s = splatOf(b)) {
      x = a;
      c = *s;
      return true;
    }
  return false;
}

/// The elements of a constant as doubles (bool as 0/1), with its shape.
std::optional<std::pair<SmallVector<double>, SmallVector<int64_t>>>
elementsOf(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense)
    return std::nullopt;
  auto type = cast<RankedTensorType>(dense.getType());
  SmallVector<double> values;
  if (isa<FloatType>(type.getElementType())) {
    for (APFloat f : dense.getValues<APFloat>())
      values.push_back(
          FloatAttr::get(type.getElementType(), f).getValueAsDouble());
  } else {
    for (APInt i : dense.getValues<APInt>())
      values.push_back(static_cast<double>(i.getZExtValue()));
  }
  return std::make_pair(values, SmallVector<int64_t>(type.getShape()));
}

/// Whether `values` of `shape` ([..., T, S], leading dims 1) say "key s is
/// hidden from query t" exactly where s > t + (S - T): `hidden(value)`
/// decides per element.
bool isCausal(ArrayRef<double> values, ArrayRef<int64_t> shape,
              llvm::function_ref<std::optional<bool>(double)> hidden) {
  if (shape.size() < 2)
    return false;
  for (size_t d = 0; d + 2 < shape.size(); ++d)
    if (shape[d] != 1)
      return false;
  int64_t t = shape[shape.size() - 2], s = shape.back();
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < s; ++j) {
      std::optional<bool> h = hidden(values[i * s + j]);
      if (!h || *h != (j > i + (s - t)))
        return false;
    }
  return true;
}

/// Key or value as attention reads it: [B, Hkv, S, D] repeated to [B, H,
/// S, D] by reshape -> broadcast_to -> reshape is read unrepeated.
Value unrepeated(Value v) {
  auto outer = v.getDefiningOp<ReshapeOp>();
  if (!outer)
    return v;
  auto broadcast = outer.getOperand().getDefiningOp<BroadcastToOp>();
  if (!broadcast)
    return v;
  auto inner = broadcast.getOperand().getDefiningOp<ReshapeOp>();
  if (!inner)
    return v;
  auto base = cast<RankedTensorType>(inner.getOperand().getType());
  auto split = cast<RankedTensorType>(inner.getType());
  auto wide = cast<RankedTensorType>(broadcast.getType());
  auto out = cast<RankedTensorType>(v.getType());
  // [B, Hkv, S, D] -> [B, Hkv, 1, S, D] -> [B, Hkv, G, S, D] -> [B, Hkv*G, S,
  // D]
  if (base.getRank() != 4 || split.getRank() != 5 || out.getRank() != 4)
    return v;
  ArrayRef<int64_t> b = base.getShape(), s = split.getShape(),
                    w = wide.getShape(), o = out.getShape();
  if (s[0] != b[0] || s[1] != b[1] || s[2] != 1 || s[3] != b[2] ||
      s[4] != b[3] || w[0] != b[0] || w[1] != b[1] || w[3] != b[2] ||
      w[4] != b[3] || o[0] != b[0] || o[1] != b[1] * w[2] || o[2] != b[2] ||
      o[3] != b[3])
    return v;
  return inner.getOperand();
}

struct RaisePass : public tg::impl::RaisePassBase<RaisePass> {
  using RaisePassBase::RaisePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> candidates;
    module.walk([&](Operation *op) {
      if (isa<MatmulOp, MulOp, AddOp, DivOp>(op))
        candidates.push_back(op);
    });
    // From the end: the outermost op of a pattern (a norm's bias, its
    // weight) is seen before the ones inside it.
    for (Operation *op : llvm::reverse(candidates)) {
      if (erased.contains(op))
        continue;
      if (auto matmul = dyn_cast<MatmulOp>(op)) {
        raiseAttention(matmul);
      } else if (auto mul = dyn_cast<MulOp>(op)) {
        if (!raiseGelu(mul) && !erased.contains(op) && !raiseSilu(mul) &&
            !erased.contains(op))
          raiseNorm(op);
      } else {
        raiseNorm(op);
      }
    }
  }

  /// The candidates already erased as part of a raised pattern.
  DenseSet<Operation *> erased;

  /// softmax(mask(scale * q @ k^T)) @ v.
  void raiseAttention(MatmulOp out) {
    if (out.getTransposeLhs() || out.getTransposeRhs())
      return;
    auto softmax = out.getLhs().getDefiningOp<SoftmaxOp>();
    if (!softmax || !singleUse(softmax) ||
        cast<RankedTensorType>(softmax.getType()).getRank() != 4)
      return;
    int64_t axis = softmax.getAxis();
    if (axis != -1 && axis != 3)
      return;
    Value scores = softmax.getOperand();
    // The mask: select(hidden, -inf, s) or s + mask.
    Value mask;
    bool causal = false;
    SmallVector<Operation *> chain = {softmax};
    if (auto select = scores.getDefiningOp<SelectOp>()) {
      std::optional<double> fill = splatOf(select.getOnTrue());
      auto hidden = elementsOf(select.getCondition());
      if (!singleUse(select) || !fill || !std::isinf(*fill) || *fill > 0 ||
          !hidden || !isCausal(hidden->first, hidden->second, [](double v) {
            return std::optional<bool>(v != 0);
          }))
        return;
      causal = true;
      chain.push_back(select);
      scores = select.getOnFalse();
    } else if (auto add = scores.getDefiningOp<AddOp>()) {
      if (!singleUse(add))
        return;
      for (auto [s, m] : {std::pair{add.getLhs(), add.getRhs()},
                          std::pair{add.getRhs(), add.getLhs()}}) {
        if (!s.getDefiningOp<MatmulOp>() && !s.getDefiningOp<MulOp>() &&
            !s.getDefiningOp<DivOp>())
          continue;
        auto values = elementsOf(m);
        if (values && isCausal(values->first, values->second,
                               [](double v) -> std::optional<bool> {
                                 if (v == 0)
                                   return false;
                                 if (std::isinf(v) && v < 0)
                                   return true;
                                 return std::nullopt;
                               })) {
          causal = true;
        } else {
          mask = m;
        }
        scores = s;
        break;
      }
      if (scores == add.getResult())
        return;
      chain.push_back(add);
    }
    // The scale.
    std::optional<double> scale;
    Value raw;
    double c;
    if (matchScaled(scores, raw, c)) {
      if (!singleUse(scores))
        return;
      chain.push_back(scores.getDefiningOp());
      scale = c;
      scores = raw;
    }
    auto qk = scores.getDefiningOp<MatmulOp>();
    if (!qk || !singleUse(qk) || qk.getTransposeLhs())
      return;
    Value q = qk.getLhs(), k = qk.getRhs();
    // k^T = transpose(x, perm): k is transpose(x, perm with its last two
    // entries swapped), x itself when that is the identity (nanoGPT's
    // view(B, T, H, D).transpose(1, 2).transpose(-2, -1) is one
    // transpose [0, 2, 3, 1] of [B, T, H, D]).
    SmallVector<int64_t> keyPerm;
    if (!qk.getTransposeRhs()) {
      auto transpose = k.getDefiningOp<TransposeOp>();
      if (!transpose || transpose.getPerm().size() != 4 ||
          !transpose->hasOneUse())
        return;
      keyPerm.assign(transpose.getPerm().begin(), transpose.getPerm().end());
      std::swap(keyPerm[2], keyPerm[3]);
      k = transpose.getOperand();
      if (llvm::equal(keyPerm, ArrayRef<int64_t>({0, 1, 2, 3})))
        keyPerm.clear();
    }
    Value v = out.getRhs();
    auto qType = cast<RankedTensorType>(q.getType());
    if (qType.getRank() != 4 ||
        cast<RankedTensorType>(k.getType()).getRank() != 4 ||
        cast<RankedTensorType>(v.getType()).getRank() != 4)
      return;
    if (mask && cast<ShapedType>(mask.getType()).getElementType() !=
                    qType.getElementType())
      return;
    int64_t d = qType.getShape().back();
    OpBuilder b(out);
    if (!keyPerm.empty()) {
      auto transposed = TransposeOp::create(b, qk.getLoc(), k,
                                            b.getDenseI64ArrayAttr(keyPerm));
      if (auto layer = qk->getAttr(TgDialect::kLayerAttr))
        transposed->setAttr(TgDialect::kLayerAttr, layer);
      k = transposed.getResult();
    }
    k = unrepeated(k);
    v = unrepeated(v);
    FloatAttr scaleAttr;
    if (!scale)
      scaleAttr = b.getF64FloatAttr(1.0);
    else if (!near(*scale, 1.0 / std::sqrt(double(d))))
      scaleAttr = b.getF64FloatAttr(*scale);
    auto attention = AttentionOp::create(b, out.getLoc(), out.getType(), q, k,
                                         v, mask, causal, scaleAttr);
    if (auto layer = out->getAttr(TgDialect::kLayerAttr))
      attention->setAttr(TgDialect::kLayerAttr, layer);
    out.replaceAllUsesWith(attention.getResult());
    eraseDead(out, erased);
    ++numAttention;
  }

  /// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
  bool raiseGelu(MulOp out) {
    // The outer products: x, the half and 1 + tanh(...) in any grouping.
    Value x, onePlus;
    double half = 0;
    Value inner;
    if (matchScaled(out.getResult(), inner, half)) {
      // 0.5 * (x * (1 + t))
      auto product = inner.getDefiningOp<MulOp>();
      if (!product || !singleUse(inner))
        return false;
      if (!pickX(product.getLhs(), product.getRhs(), x, onePlus))
        return false;
    } else {
      // (0.5 * x) * (1 + t) or x * (0.5 * (1 + t))
      for (auto [a, b] : {std::pair{out.getLhs(), out.getRhs()},
                          std::pair{out.getRhs(), out.getLhs()}}) {
        Value scaled;
        double c;
        if (!matchScaled(a, scaled, c) || !singleUse(a))
          continue;
        if (isOnePlusTanh(b) && !isOnePlusTanh(scaled)) {
          x = scaled;
          onePlus = b;
          half = c;
          break;
        }
        if (isOnePlusTanh(scaled)) {
          x = b;
          onePlus = scaled;
          half = c;
          break;
        }
      }
      if (!x)
        return false;
    }
    if (!near(half, 0.5) || !singleUse(onePlus))
      return false;
    Value t;
    double one;
    if (!matchPlusConst(onePlus, t, one) || !near(one, 1.0))
      return false;
    auto tanh = t.getDefiningOp<TanhOp>();
    if (!tanh || !singleUse(tanh))
      return false;
    Value arg;
    double root;
    if (!matchScaled(tanh.getOperand(), arg, root) ||
        !near(root, std::sqrt(2.0 / M_PI)) || !singleUse(tanh.getOperand()))
      return false;
    // x + 0.044715 * x^3
    auto sum = arg.getDefiningOp<AddOp>();
    if (!sum || !singleUse(sum))
      return false;
    Value cube;
    if (sum.getLhs() == x)
      cube = sum.getRhs();
    else if (sum.getRhs() == x)
      cube = sum.getLhs();
    else
      return false;
    Value cubed;
    double coefficient;
    if (!matchScaled(cube, cubed, coefficient) ||
        !near(coefficient, 0.044715) || !isCube(cubed, x))
      return false;
    OpBuilder b(out);
    auto gelu = GeluOp::create(b, out.getLoc(), x, GeluApproximation::tanh);
    if (auto layer = out->getAttr(TgDialect::kLayerAttr))
      gelu->setAttr(TgDialect::kLayerAttr, layer);
    out.replaceAllUsesWith(gelu.getResult());
    eraseDead(out, erased);
    ++numGelu;
    return true;
  }

  /// x * sigmoid(x).
  bool raiseSilu(MulOp out) {
    for (auto [x, s] : {std::pair{out.getLhs(), out.getRhs()},
                        std::pair{out.getRhs(), out.getLhs()}}) {
      auto sigmoid = s.getDefiningOp<SigmoidOp>();
      if (!sigmoid || sigmoid.getOperand() != x || !sigmoid->hasOneUse())
        continue;
      OpBuilder b(out);
      auto silu = SiluOp::create(b, out.getLoc(), x);
      if (auto layer = out->getAttr(TgDialect::kLayerAttr))
        silu->setAttr(TgDialect::kLayerAttr, layer);
      out.replaceAllUsesWith(silu.getResult());
      eraseDead(out, erased);
      ++numSilu;
      return true;
    }
    return false;
  }

  /// A mean over the last dim, kept: reduce_mean(v, [last], keepdim).
  static bool isLastMean(Value v, Value &of) {
    auto mean = v.getDefiningOp<ReduceMeanOp>();
    if (!mean || !mean.getKeepdim() || !mean->hasOneUse())
      return false;
    auto type = cast<RankedTensorType>(mean.getOperand().getType());
    ArrayRef<int64_t> dims = mean.getDims();
    if (dims.size() != 1 || (dims[0] != type.getRank() - 1 && dims[0] != -1))
      return false;
    of = mean.getOperand();
    return true;
  }

  /// v * v or v ^ 2.
  static bool isSquareOf(Value s, Value v) {
    if (auto mul = s.getDefiningOp<MulOp>())
      return mul.getLhs() == v && mul.getRhs() == v;
    if (auto pow = s.getDefiningOp<PowOp>()) {
      std::optional<double> e = splatOf(pow.getRhs());
      return pow.getLhs() == v && e && *e == 2.0;
    }
    return false;
  }

  /// `num / sqrt(var + eps)`, `num * rsqrt(var + eps)` or
  /// `num * (1 / sqrt(var + eps))`, with its parts.
  static bool matchNormalized(Value v, Value &num, Value &var, double &eps) {
    auto root = [&](Value r, bool inverse) {
      Operation *op = r.getDefiningOp();
      if (!op || !op->hasOneUse())
        return false;
      Value arg;
      if (inverse) {
        if (auto rsqrt = dyn_cast<RsqrtOp>(op)) {
          arg = rsqrt.getOperand();
        } else if (auto div = dyn_cast<DivOp>(op)) {
          std::optional<double> one = splatOf(div.getLhs());
          auto sqrt = div.getRhs().getDefiningOp<SqrtOp>();
          if (!one || *one != 1.0 || !sqrt || !sqrt->hasOneUse())
            return false;
          arg = sqrt.getOperand();
        } else {
          return false;
        }
      } else {
        auto sqrt = dyn_cast<SqrtOp>(op);
        if (!sqrt)
          return false;
        arg = sqrt.getOperand();
      }
      return arg.hasOneUse() && matchPlusConst(arg, var, eps);
    };
    if (auto div = v.getDefiningOp<DivOp>()) {
      if (root(div.getRhs(), /*inverse=*/false)) {
        num = div.getLhs();
        return true;
      }
      return false;
    }
    auto mul = v.getDefiningOp<MulOp>();
    if (!mul)
      return false;
    for (auto [n, r] : {std::pair{mul.getLhs(), mul.getRhs()},
                        std::pair{mul.getRhs(), mul.getLhs()}})
      if (root(r, /*inverse=*/true)) {
        num = n;
        return true;
      }
    return false;
  }

  /// RMSNorm, x * rsqrt(mean(x^2) + eps) [* w], and layer norm,
  /// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* w] [+ b], over
  /// the last dim, written out; `out` is the last op of one.
  void raiseNorm(Operation *out) {
    Value result = out->getResult(0);
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || type.getRank() < 1)
      return;
    int64_t width = type.getShape().back();
    // The optional affine part, from the outside in: + b, then * w, each a
    // 1-D [C] operand.
    auto vector = [&](Value v) {
      auto t = cast<RankedTensorType>(v.getType());
      return t.getRank() == 1 && t.getShape()[0] == width &&
             t.getElementType() == type.getElementType();
    };
    Value bias, weight, normalized = result;
    if (auto add = dyn_cast<AddOp>(out)) {
      for (auto [n, b] : {std::pair{add.getLhs(), add.getRhs()},
                          std::pair{add.getRhs(), add.getLhs()}})
        if (vector(b) && n.hasOneUse() && n.getDefiningOp<MulOp>()) {
          bias = b;
          normalized = n;
          break;
        }
      if (!bias)
        return;
    }
    if (auto mul = normalized.getDefiningOp<MulOp>()) {
      for (auto [n, w] : {std::pair{mul.getLhs(), mul.getRhs()},
                          std::pair{mul.getRhs(), mul.getLhs()}})
        if (vector(w) && n.hasOneUse()) {
          Value num, var;
          double eps;
          if (!matchNormalized(n, num, var, eps))
            continue;
          weight = w;
          normalized = n;
          break;
        }
    }
    Value num, var;
    double eps;
    if (!matchNormalized(normalized, num, var, eps))
      return;
    Value meanOf;
    if (!isLastMean(var, meanOf))
      return;
    OpBuilder b(out);
    Operation *raised = nullptr;
    if (isSquareOf(meanOf, num) && !num.getDefiningOp<SubOp>()) {
      // RMSNorm: x * rsqrt(mean(x^2) + eps).
      if (bias)
        return;
      raised = RmsNormOp::create(b, out->getLoc(), type, num, weight,
                                 b.getF64FloatAttr(eps));
      ++numRmsNorm;
    } else if (auto centered = num.getDefiningOp<SubOp>()) {
      // Layer norm: x - mean(x), normalized by its own mean square.
      Value x = centered.getLhs(), mean;
      if (!isLastMean(centered.getRhs(), mean) || mean != x ||
          !isSquareOf(meanOf, num))
        return;
      raised = LayerNormOp::create(b, out->getLoc(), type, x, weight, bias,
                                   b.getF64FloatAttr(eps));
      ++numLayerNorm;
    } else {
      return;
    }
    if (auto layer = out->getAttr(TgDialect::kLayerAttr))
      raised->setAttr(TgDialect::kLayerAttr, layer);
    result.replaceAllUsesWith(raised->getResult(0));
    eraseDead(out, erased);
  }

  /// Of a product's two factors, which is x and which 1 + tanh(...).
  static bool pickX(Value a, Value b, Value &x, Value &onePlus) {
    if (isOnePlusTanh(b)) {
      x = a;
      onePlus = b;
      return true;
    }
    if (isOnePlusTanh(a)) {
      x = b;
      onePlus = a;
      return true;
    }
    return false;
  }

  static bool isOnePlusTanh(Value v) {
    Value t;
    double c;
    return matchPlusConst(v, t, c) && t.getDefiningOp<TanhOp>();
  }

  /// x * x * x in any grouping, or x ^ 3.
  static bool isCube(Value v, Value x) {
    if (auto pow = v.getDefiningOp<PowOp>()) {
      std::optional<double> e = splatOf(pow.getRhs());
      return pow.getLhs() == x && e && *e == 3.0;
    }
    auto mul = v.getDefiningOp<MulOp>();
    if (!mul)
      return false;
    auto isSquare = [&](Value s) {
      if (auto sq = s.getDefiningOp<MulOp>())
        return sq.getLhs() == x && sq.getRhs() == x;
      if (auto pow = s.getDefiningOp<PowOp>()) {
        std::optional<double> e = splatOf(pow.getRhs());
        return pow.getLhs() == x && e && *e == 2.0;
      }
      return false;
    };
    return (mul.getLhs() == x && isSquare(mul.getRhs())) ||
           (mul.getRhs() == x && isSquare(mul.getLhs()));
  }

  /// Erases `op` and, transitively, the operands' producers it leaves
  /// without uses, recording them in `erased`.
  static void eraseDead(Operation *op, DenseSet<Operation *> &erased) {
    SmallVector<Operation *> work = {op};
    while (!work.empty()) {
      Operation *dead = work.pop_back_val();
      if (!dead->use_empty() || !isPure(dead))
        continue;
      SmallVector<Operation *> producers;
      for (Value operand : dead->getOperands())
        if (Operation *def = operand.getDefiningOp())
          producers.push_back(def);
      erased.insert(dead);
      dead->erase();
      for (Operation *def : producers)
        if (def->use_empty())
          work.push_back(def);
    }
  }
};

} // namespace
