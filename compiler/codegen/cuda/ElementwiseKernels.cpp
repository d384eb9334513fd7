//===- ElementwiseKernels.cpp - Generated elementwise kernels ---*- C++ -*-===//
//
// The kernels the CUDA emitter generates: one per tree of elementwise ops
// (a tg-fuse elementwise kernel, or one lone op), a grid-stride loop that
// computes every output of the tree at each index. Transposes, slices,
// concatenations and slice gradients inside a tree are index remappings;
// operands broadcast numpy-style; one-value constants are literals.
// Identical kernels are emitted once (ModuleState::kernel).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/CSyntax.h"
#include "compiler/codegen/cuda/StepEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::tg;
using namespace mlir::tg::cuda_emit;

/// The name of the kernel with this parameter list and body, added under
/// `baseName` when new; `site` is the op it computes, for its comment.
std::string ModuleState::kernel(StringRef baseName, StringRef text,
                                StringRef site) {
  auto it = kernelByText.find(text);
  if (it != kernelByText.end()) {
    Kernel &k = kernels[it->second];
    if (k.siteSet.insert(site).second)
      k.sites.push_back(site.str());
    return k.name;
  }
  Kernel k;
  k.name = llvm::formatv("{0}_k{1}", baseName, kernels.size()).str();
  k.text = text.str();
  k.sites.push_back(site.str());
  k.siteSet.insert(site);
  kernelByText[text] = kernels.size();
  kernels.push_back(std::move(k));
  return kernels.back().name;
}

/// The type elementwise code computes in: fp32 for every float type.
static StringRef mathType(Type t) {
  if (isa<FloatType>(t))
    return "float";
  if (t.isInteger(1))
    return "bool";
  return storageType(t);
}

/// The runtime's GELU device function for `approximate` (tgc::cuda::geluTanh
/// or geluErf; their gradients add `Grad`).
static StringRef geluFunction(GeluApproximation approximate) {
  switch (approximate) {
  case GeluApproximation::none:
    return "geluErf";
  case GeluApproximation::tanh:
    return "geluTanh";
  }
  llvm_unreachable("unknown gelu approximation");
}

/// The index of `operand` (shaped `in`) for element `i` of a result shaped
/// `out`, with numpy broadcasting; constant strides fold at compile time.
static std::string indexExpr(ArrayRef<int64_t> in, ArrayRef<int64_t> out,
                             StringRef i) {
  if (std::optional<std::string> simple = simpleBroadcastIndex(in, out, i))
    return *simple;
  // General case: one term per dim the operand does not broadcast along.
  SmallVector<int64_t> padded = broadcastAligned(in, out);
  std::string expr;
  int64_t stride = 1, inner = 1;
  for (int64_t d = out.size() - 1; d >= 0; --d) {
    if (padded[d] != 1) {
      std::string term =
          llvm::formatv("(({0} / {1}) % {2}) * {3}", i, inner, out[d], stride)
              .str();
      expr = expr.empty() ? term : term + " + " + expr;
      stride *= padded[d];
    }
    inner *= out[d];
  }
  return "(" + (expr.empty() ? std::string("0") : expr) + ")";
}

/// A literal of a one-value constant in the math type `math`.
static std::string literalOf(Attribute value, StringRef math) {
  if (auto f = dyn_cast<FloatAttr>(value)) {
    if (math == "float")
      return floatLiteral(f.getValueAsDouble());
    return llvm::formatv("({0})({1})", math, f.getValueAsDouble()).str();
  }
  auto i = cast<IntegerAttr>(value);
  if (math == "bool")
    return i.getValue().isZero() ? "false" : "true";
  std::string s = std::to_string(i.getValue().getSExtValue());
  if (math == "float")
    return s + ".0f";
  return math == "int64_t" ? s + "ll" : s;
}

/// The expression computing `op` from its operands' values `a` (in their
/// math types); its value is in the math type of its result.
static FailureOr<std::string> elementwiseExpr(Operation *op,
                                              ArrayRef<std::string> a) {
  Type resultElem = elementType(op->getResult(0));
  StringRef math = mathType(resultElem);
  bool isFloat = math == "float";
  auto fmt = [&](StringRef f) -> std::string {
    return llvm::formatv(f.data(), a.size() > 0 ? a[0] : "",
                         a.size() > 1 ? a[1] : "", a.size() > 2 ? a[2] : "")
        .str();
  };
  if (std::optional<std::string> shared = elementwiseFormat(op, "{0}f"))
    return fmt(*shared);
  return llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
      .Case([&](PowOp) {
        return isFloat ? fmt("powf({0}, {1})")
                       : "(" + math.str() + ")pow((double)" + a[0] +
                             ", (double)" + a[1] + ")";
      })
      .Case([&](CompareOp c) {
        StringRef sym = comparisonOperator(c.getPredicate());
        return "(" + a[0] + " " + sym.str() + " " + a[1] + ")";
      })
      .Case([&](AbsOp) {
        return isFloat ? fmt("fabsf({0})") : fmt("({0} < 0 ? -{0} : {0})");
      })
      .Case([&](GeluOp g) {
        return "tgc::cuda::" + geluFunction(g.getApproximate()).str() + "(" +
               a[0] + ")";
      })
      .Case([&](GeluGradOp g) {
        return a[0] +
               " * tgc::cuda::" + geluFunction(g.getApproximate()).str() +
               "Grad(" + a[1] + ")";
      })
      .Case([&](CastOp c) -> std::string {
        StringRef from = mathType(elementType(c.getX()));
        if (math == "bool")
          return "(" + a[0] + " != 0)";
        if (from == math)
          return a[0];
        return "(" + math.str() + ")(" + a[0] + ")";
      })
      .Case([&](BroadcastToOp) { return a[0]; })
      .Default([&](Operation *other) -> FailureOr<std::string> {
        return other->emitError(kBackend) << ": no elementwise lowering";
      });
}

/// The math type an op reads operand `i` in.
static StringRef operandMath(Operation *op, unsigned i) {
  if (isa<SelectOp>(op) && i == 0)
    return "bool";
  if (isa<CompareOp, CastOp>(op))
    return mathType(elementType(op->getOperand(i)));
  return mathType(elementType(op->getResult(0)));
}

namespace {

/// The body of one generated kernel: the value of the root at element `i`,
/// built from its tree by asking each op for its value at an index (an
/// elementwise op at the broadcast index of each operand, a transpose or
/// slice at the remapped one), down to loads of the kernel's parameters.
class KernelBody {
public:
  /// `flat` gives the value of the step a value of a kernel's body stands
  /// for (StepEmitter::flat).
  KernelBody(ArrayRef<Operation *> tree,
             const DenseMap<Value, std::string> &params,
             std::function<Value(Value)> flat)
      : inside(tree.begin(), tree.end()), params(params),
        flat(std::move(flat)) {}

  /// A local holding `v` at linear index `idx` (in `v`'s shape), in the
  /// math type of its element type.
  FailureOr<std::string> value(Value v, const std::string &idx);
  std::string text;

private:
  std::string local(StringRef type, StringRef prefix, const std::string &expr) {
    std::string name = (prefix + Twine(counter++)).str();
    text += llvm::formatv("    {0} {1} = {2};\n", type, name, expr).str();
    return name;
  }
  /// `idx` as a local when it is more than a name.
  std::string indexLocal(const std::string &expr) {
    if (llvm::all_of(
            expr, [](char c) { return isalnum((unsigned char)c) || c == '_'; }))
      return expr;
    return local("const int64_t", "j", expr);
  }

  llvm::SmallPtrSet<Operation *, 8> inside;
  const DenseMap<Value, std::string> &params;
  std::function<Value(Value)> flat;
  std::map<std::pair<const void *, std::string>, std::string> memo;
  unsigned counter = 0;
};

/// The multi-index of `idx` over `shape`: one expression per dim.
SmallVector<std::string> unravel(const std::string &idx,
                                 ArrayRef<int64_t> shape) {
  SmallVector<std::string> dims(shape.size());
  int64_t inner = 1;
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    if (shape[d] == 1)
      dims[d] = "0";
    else if (d == 0)
      dims[d] =
          inner == 1 ? idx : llvm::formatv("({0} / {1})", idx, inner).str();
    else if (inner == 1)
      dims[d] = llvm::formatv("({0} % {1})", idx, shape[d]).str();
    else
      dims[d] =
          llvm::formatv("(({0} / {1}) % {2})", idx, inner, shape[d]).str();
    inner *= shape[d];
  }
  return dims;
}

/// The linear index of a multi-index over `shape`.
std::string ravel(ArrayRef<std::string> dims, ArrayRef<int64_t> shape) {
  std::string expr;
  int64_t stride = 1;
  for (int64_t d = shape.size() - 1; d >= 0; --d) {
    if (dims[d] != "0") {
      std::string term =
          stride == 1 ? dims[d]
                      : llvm::formatv("{0} * {1}", dims[d], stride).str();
      expr = expr.empty() ? term : term + " + " + expr;
    }
    stride *= shape[d];
  }
  return expr.empty() ? "0" : "(" + expr + ")";
}

FailureOr<std::string> KernelBody::value(Value v, const std::string &idx) {
  v = flat(v);
  auto key = std::make_pair(v.getAsOpaquePointer(), idx);
  if (auto it = memo.find(key); it != memo.end())
    return it->second;
  Type elem = elementType(v);
  StringRef math = mathType(elem);
  std::string result;
  Operation *def = v.getDefiningOp();
  if (auto splat = literalValue(v)) {
    result = literalOf(*splat, math);
  } else if (!def || !inside.contains(def)) {
    // A parameter of the kernel.
    std::string load = params.lookup(v) + "[" + idx + "]";
    if (isa<FloatType>(elem))
      load = "toFloat(" + load + ")";
    else if (elem.isInteger(1))
      load = "(" + load + " != 0)";
    result = local(math, "l", load);
  } else if (isView(def)) {
    auto r = value(def->getOperand(0), idx);
    if (failed(r))
      return failure();
    result = *r;
  } else if (auto t = dyn_cast<TransposeOp>(def)) {
    ArrayRef<int64_t> out = tensorType(v).getShape(),
                      in = tensorType(t.getX()).getShape();
    SmallVector<std::string> o = unravel(idx, out), from(in.size());
    for (auto [d, p] : llvm::enumerate(t.getPerm()))
      from[p] = o[d];
    auto r = value(t.getX(), indexLocal(ravel(from, in)));
    if (failed(r))
      return failure();
    result = *r;
  } else if (auto sl = dyn_cast<SliceOp>(def)) {
    ArrayRef<int64_t> out = tensorType(v).getShape(),
                      in = tensorType(sl.getX()).getShape();
    SmallVector<int64_t> start = llvm::to_vector(sl.getStart()),
                         stride = sl.getEffectiveStride();
    SmallVector<std::string> o = unravel(idx, out), from(in.size());
    for (size_t d = 0; d < in.size(); ++d) {
      std::string scaled =
          stride[d] == 1 ? o[d]
                         : llvm::formatv("{0} * {1}", o[d], stride[d]).str();
      from[d] = start[d] == 0
                    ? scaled
                    : llvm::formatv("({0} + {1})", scaled, start[d]).str();
      if (out[d] == 1)
        from[d] = std::to_string(start[d]);
    }
    auto r = value(sl.getX(), indexLocal(ravel(from, in)));
    if (failed(r))
      return failure();
    result = *r;
  } else if (auto cat = dyn_cast<ConcatOp>(def)) {
    // The input that holds the element, in one branch each.
    ArrayRef<int64_t> out = tensorType(v).getShape();
    int64_t axis = *normalizeAxis(cat.getAxis(), out.size());
    SmallVector<std::string> o = unravel(idx, out);
    std::string at = local("const int64_t", "j", o[axis]);
    result = "t" + std::to_string(counter++);
    text += llvm::formatv("    {0} {1};\n", math, result).str();
    int64_t offset = 0;
    auto inputs = cat.getInputs();
    for (auto [k, input] : llvm::enumerate(inputs)) {
      int64_t size = tensorType(input).getShape()[axis];
      if (k == 0)
        text += llvm::formatv("    if ({0} < {1}) {{\n", at, offset + size);
      else if (k + 1 < inputs.size())
        text +=
            llvm::formatv("    } else if ({0} < {1}) {{\n", at, offset + size);
      else
        text += "    } else {\n";
      // A branch's locals stay in it.
      std::string outer = std::move(text);
      auto savedMemo = memo;
      text.clear();
      SmallVector<std::string> in(o.begin(), o.end());
      in[axis] = offset ? llvm::formatv("({0} - {1})", at, offset).str() : at;
      auto r =
          value(input, indexLocal(ravel(in, tensorType(input).getShape())));
      if (failed(r))
        return failure();
      std::string branch = std::move(text);
      text = std::move(outer);
      memo = std::move(savedMemo);
      for (StringRef line : llvm::split(StringRef(branch).rtrim('\n'), '\n'))
        text += "  " + line.str() + "\n";
      text += llvm::formatv("      {0} = {1};\n", result, *r).str();
      offset += size;
    }
    text += "    }\n";
  } else if (auto sg = dyn_cast<SliceGradOp>(def)) {
    // Zero outside the slice; inside, the gradient at the slice's index.
    ArrayRef<int64_t> out = tensorType(v).getShape(),
                      g = tensorType(sg.getGrad()).getShape();
    SmallVector<int64_t> start = llvm::to_vector(sg.getStart());
    SmallVector<int64_t> stride = sg.getStride()
                                      ? llvm::to_vector(*sg.getStride())
                                      : SmallVector<int64_t>(start.size(), 1);
    SmallVector<std::string> o = unravel(idx, out), at(g.size()), hits;
    for (size_t d = 0; d < out.size(); ++d) {
      if (g[d] == out[d] && start[d] == 0 && stride[d] == 1) {
        at[d] = o[d];
        continue;
      }
      std::string rel =
          start[d] == 0 ? o[d]
                        : llvm::formatv("({0} - {1})", o[d], start[d]).str();
      std::string lo =
          start[d] == 0 ? "" : llvm::formatv("{0} >= 0", rel).str();
      at[d] = stride[d] == 1
                  ? rel
                  : llvm::formatv("({0} / {1})", rel, stride[d]).str();
      if (!lo.empty())
        hits.push_back(lo);
      if (stride[d] != 1)
        hits.push_back(llvm::formatv("{0} % {1} == 0", rel, stride[d]).str());
      hits.push_back(llvm::formatv("{0} < {1}", at[d], g[d]).str());
    }
    std::string hit = local(
        "const bool", "h",
        hits.empty() ? "true" : llvm::join(hits.begin(), hits.end(), " && "));
    std::string j =
        local("const int64_t", "j",
              llvm::formatv("{0} ? {1} : 0", hit, ravel(at, g)).str());
    auto r = value(sg.getGrad(), j);
    if (failed(r))
      return failure();
    result = local(math, "t",
                   llvm::formatv("{0} ? {1} : ({2})0", hit, *r, math).str());
  } else if (auto iota = dyn_cast<IotaOp>(def)) {
    // The coordinate along the counted dim, scaled and shifted.
    std::string coord =
        unravel(idx, tensorType(v).getShape())[iota.getNormalizedDimension()];
    double start = iota.getStart().convertToDouble();
    double step = iota.getStep().convertToDouble();
    auto literal = [&](double value) {
      return math == "float" ? floatLiteral(value)
                             : std::to_string((int64_t)value);
    };
    std::string expr = "(" + math.str() + ")" + coord;
    double scale = start != 0.0 ? std::fabs(step) : step;
    if (scale != 1.0)
      expr = literal(scale) + " * " + expr;
    if (start != 0.0)
      expr = literal(start) + (step < 0 ? " - " : " + ") + expr;
    result = local(math, "t", expr);
  } else {
    // Elementwise: each operand at its broadcast index.
    ArrayRef<int64_t> out = tensorType(v).getShape();
    SmallVector<std::string> a;
    for (auto [i, operand] : llvm::enumerate(def->getOperands())) {
      std::string operandIdx =
          indexLocal(indexExpr(tensorType(operand).getShape(), out, idx));
      auto r = value(operand, operandIdx);
      if (failed(r))
        return failure();
      StringRef want = operandMath(def, i);
      StringRef have = mathType(elementType(operand));
      a.push_back(have == want ? *r : "(" + want.str() + ")(" + *r + ")");
    }
    auto expr = elementwiseExpr(def, a);
    if (failed(expr))
      return failure();
    result = local(math, "t", *expr);
  }
  memo[key] = result;
  return result;
}

} // namespace

LogicalResult StepEmitter::emitElementwise(Launch &launch) {
  Operation *rootOp = launch.op;
  // Parameters: the external operands, then the results.
  std::string params, args;
  DenseMap<Value, std::string> param;
  for (Value v : launch.reads) {
    std::string p = "x" + std::to_string(param.size());
    param[v] = p;
    params += llvm::formatv("const {0} *__restrict__ {1}, ", storageOf(v), p);
    args += ptr(v) + ", ";
  }
  bool one = launch.writes.size() == 1;
  KernelBody kernelBody(launch.covered, param,
                        [this](Value v) { return flat(v); });
  std::string stores;
  for (auto [k, result] : llvm::enumerate(launch.writes)) {
    std::string y = one ? "y" : "y" + std::to_string(k);
    params += llvm::formatv("{0} *__restrict__ {1}, ", storageOf(result), y);
    args += ptr(result) + ", ";
    auto value = kernelBody.value(result, "i");
    if (failed(value))
      return failure();
    Type resultElem = elementType(result);
    if (isa<FloatType>(resultElem))
      stores += llvm::formatv("    {0}[i] = fromFloat<{1}>({2});\n", y,
                              storageType(resultElem), *value)
                    .str();
    else
      stores += llvm::formatv("    {0}[i] = ({1})({2});\n", y,
                              storageType(resultElem), *value)
                    .str();
  }
  params += "int64_t n";
  std::string body = kernelBody.text + stores;
  Value result = launch.writes.front();
  std::string text =
      "(" + params + ") {\n  for (int64_t i = (int64_t)blockIdx.x * " +
      "blockDim.x + threadIdx.x; i < n;\n       i += (int64_t)gridDim.x * " +
      "blockDim.x) {\n" + body + "  }\n}\n";
  std::string baseName;
  if (launch.covered.size() > 1) {
    // Named after the kinds of op it computes, each once, views left out.
    baseName = "fused";
    SmallVector<std::string> kinds;
    for (Operation *op : launch.covered)
      if (!isView(op) && !llvm::is_contained(kinds, opLabel(op)))
        kinds.push_back(opLabel(op));
    for (const std::string &kind : kinds)
      baseName += "_" + kind;
  } else {
    baseName = opLabel(rootOp);
  }
  std::string site;
  for (Operation *op : launch.covered)
    site += (site.empty() ? "" : " + ") + describeOp(op);
  std::string kernel = state.kernel(baseName, text, site);
  usedKernels.insert(state.kernelByText.lookup(text));
  int64_t n = numel(result);
  int64_t blocks = std::clamp<int64_t>((n + kBlock - 1) / kBlock, 1, 65535);
  os << timerBegin(launch) << "  " << kernel << "<<<" << blocks << ", "
     << kBlock << ", 0, stream>>>(" << args << n
     << ");\n  TGC_CUDA_CHECK_LAUNCH();\n"
     << timerEnd(launch);
  return success();
}
