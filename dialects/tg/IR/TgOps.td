//===- TgOps.td - tg dialect operations --------------------*- tablegen -*-===//
//
// The ops a model is written in: elementwise math with numpy broadcasting,
// matmul, reductions, normalization, attention, convolution, pooling and
// shape ops. Every op verifies (and where it can, infers) its result type.
//
//===----------------------------------------------------------------------===//

#ifndef TG_OPS_TD
#define TG_OPS_TD

include "dialects/tg/IR/TgDialect.td"
include "dialects/tg/IR/TgAttrs.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/CastInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Tg_Float : AnyTypeOf<[F32, BF16, F16, F8E4M3FN, F8E5M2]>;
def Tg_Int : AnyTypeOf<[I32, I64]>;
def Tg_Element : AnyTypeOf<[Tg_Float, Tg_Int, I1]>;

// Shapes are static: memory is planned ahead of time, and every shape rule
// below does arithmetic on dim sizes.
class Tg_TensorOf<list<Type> allowedTypes> :
    RankedTensorOf<allowedTypes, [HasStaticShapePred],
                   "statically shaped tensor">;

def Tg_Tensor : Tg_TensorOf<[Tg_Element]>;
def Tg_FloatTensor : Tg_TensorOf<[Tg_Float]>;
def Tg_IntTensor : Tg_TensorOf<[Tg_Int]>;
def Tg_NumericTensor : Tg_TensorOf<[Tg_Float, Tg_Int]>;
def Tg_BoolTensor : Tg_TensorOf<[I1]>;
def Tg_Scalar : 0DTensorOf<[Tg_Float]>;

//===----------------------------------------------------------------------===//
// Constants and index tables
//===----------------------------------------------------------------------===//

def Tg_ConstantOp : Tg_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "A tensor constant";
  let description = [{
    ```mlir
    %half = tg.constant dense<0.5> : tensor<f32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Tg_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Tg_IotaOp : Tg_Op<"iota", [Pure]> {
  let summary = "Counts along one dim: start + step * index, like arange";
  let description = [{
    Element [i0, ..., in] is `start + step * i_d`, d = `dimension` (negative
    counts from the back): numpy's `arange` along one dim, repeated along the
    others. Position tables (rotary embeddings, ALiBi slopes) are computed in
    the graph from it instead of being written out as constants. A float
    result is computed in f32; an integer result needs whole-number `start`
    and `step`, and every value must fit its element type.

    ```mlir
    %pos = tg.iota : tensor<64x1xf32>
    %even = tg.iota {dimension = 1 : i64, step = 2.0 : f64} : tensor<1x32xf32>
    ```
  }];
  let arguments = (ins DefaultValuedAttr<I64Attr, "0">:$dimension,
                   DefaultValuedAttr<F64Attr, "0.0">:$start,
                   DefaultValuedAttr<F64Attr, "1.0">:$step);
  let results = (outs Tg_NumericTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// `dimension`, counted from the front.
    int64_t getNormalizedDimension();
  }];
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Tg_BinaryOp<string mnemonic, string what, list<Trait> traits = []> :
    Tg_Op<mnemonic, traits # [Pure, InferTypeOpAdaptor]> {
  let summary = "Elementwise " # what # " with numpy broadcasting";
  let description = [{
    Both operands have the same element type; their shapes broadcast as in
    numpy (dims aligned from the right, a dim of 1 stretches).

    ```mlir
    %r = tg.}] # mnemonic # [{ %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Tg_NumericTensor:$lhs, Tg_NumericTensor:$rhs);
  let results = (outs Tg_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def Tg_AddOp : Tg_BinaryOp<"add", "addition", [Commutative]> {
  let hasFolder = 1;
  // add(slice_grad(a), slice_grad(b)) of adjacent slices is one slice_grad
  // of their concatenation (the backward of a fused QKV projection).
  let hasCanonicalizer = 1;
}
def Tg_SubOp : Tg_BinaryOp<"sub", "subtraction"> { let hasFolder = 1; }
def Tg_MulOp : Tg_BinaryOp<"mul", "multiplication", [Commutative]> {
  let hasFolder = 1;
}
def Tg_DivOp : Tg_BinaryOp<"div", "division"> { let hasFolder = 1; }
def Tg_PowOp : Tg_BinaryOp<"pow", "power (lhs raised to rhs)">;
def Tg_MaximumOp : Tg_BinaryOp<"maximum", "maximum", [Commutative]>;
def Tg_MinimumOp : Tg_BinaryOp<"minimum", "minimum", [Commutative]>;

def Tg_ComparePredicate : I32EnumAttr<"ComparePredicate",
    "how tg.compare compares", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_ComparePredicateAttr :
    EnumAttr<Tg_Dialect, Tg_ComparePredicate, "predicate">;

def Tg_CompareOp : Tg_Op<"compare", [Pure, InferTypeOpAdaptor]> {
  let summary = "Elementwise comparison with numpy broadcasting";
  let description = [{
    `predicate` is one of `eq`, `ne`, `lt`, `le`, `gt`, `ge`. The result is a
    tensor of `i1` in the broadcast shape.

    ```mlir
    %m = tg.compare lt, %a, %b : tensor<4xf32>, tensor<f32> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Tg_ComparePredicateAttr:$predicate,
                   Tg_NumericTensor:$lhs, Tg_NumericTensor:$rhs);
  let results = (outs Tg_BoolTensor:$result);
  let assemblyFormat = [{
    $predicate `,` $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

def Tg_SelectOp : Tg_Op<"select", [Pure, InferTypeOpAdaptor]> {
  let summary = "Elementwise choice between two tensors by a mask";
  let description = [{
    Picks `on_true` where `condition` holds and `on_false` elsewhere; the three
    operands broadcast together.

    ```mlir
    %r = tg.select %m, %a, %b : tensor<4xi1>, tensor<4xf32>, tensor<f32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Tg_BoolTensor:$condition, Tg_NumericTensor:$on_true,
                   Tg_NumericTensor:$on_false);
  let results = (outs Tg_NumericTensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` type($condition) `,`
    type($on_true) `,` type($on_false) `->` type($result)
  }];
}

class Tg_UnaryOp<string mnemonic, string what, list<Trait> traits = []> :
    Tg_Op<mnemonic, traits # [Pure, SameOperandsAndResultType]> {
  let summary = "Elementwise " # what;
  let description = [{
    ```mlir
    %r = tg.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$x);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
}

def Tg_NegOp : Tg_UnaryOp<"neg", "negation"> {
  let arguments = (ins Tg_NumericTensor:$x);
  let results = (outs Tg_NumericTensor:$result);
  let hasFolder = 1;
}
def Tg_AbsOp : Tg_UnaryOp<"abs", "absolute value"> {
  let arguments = (ins Tg_NumericTensor:$x);
  let results = (outs Tg_NumericTensor:$result);
}
def Tg_ExpOp : Tg_UnaryOp<"exp", "exponential">;
def Tg_LogOp : Tg_UnaryOp<"log", "natural logarithm">;
def Tg_SqrtOp : Tg_UnaryOp<"sqrt", "square root">;
def Tg_RsqrtOp : Tg_UnaryOp<"rsqrt", "reciprocal square root">;
def Tg_TanhOp : Tg_UnaryOp<"tanh", "hyperbolic tangent">;
def Tg_SinOp : Tg_UnaryOp<"sin", "sine (of radians)">;
def Tg_CosOp : Tg_UnaryOp<"cos", "cosine (of radians)">;
def Tg_ReluOp : Tg_UnaryOp<"relu", "rectified linear unit, max(x, 0)">;
def Tg_SiluOp : Tg_UnaryOp<"silu", "SiLU (swish), x * sigmoid(x)">;
def Tg_SigmoidOp : Tg_UnaryOp<"sigmoid", "logistic sigmoid">;

def Tg_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "how tg.gelu computes the Gaussian CDF", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"tanh", 1>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_GeluApproximationAttr :
    EnumAttr<Tg_Dialect, Tg_GeluApproximation, "approximation">;

def Tg_GeluOp : Tg_UnaryOp<"gelu", "GELU activation"> {
  let description = [{
    `approximate = #tg<approximation none>` (the default) is the exact form
    x * Phi(x) with the Gaussian CDF; `tanh` is the tanh approximation GPT-2
    uses.

    ```mlir
    %r = tg.gelu %x {approximate = #tg<approximation tanh>} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$x,
                   DefaultValuedAttr<Tg_GeluApproximationAttr,
                       "::mlir::tg::GeluApproximation::none">:$approximate);
}

def Tg_CastOp : Tg_Op<"cast", [Pure, SameOperandsAndResultShape,
    DeclareOpInterfaceMethods<CastOpInterface>]> {
  let summary = "Element type conversion";
  let description = [{
    Converts between f32, bf16, f16, f8 (e4m3fn, e5m2), i32, i64 and i1 with
    round-to-nearest-even; the shape is kept.

    ```mlir
    %h = tg.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
    ```
  }];
  let arguments = (ins Tg_Tensor:$x);
  let results = (outs Tg_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `to` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and reductions
//===----------------------------------------------------------------------===//

def Tg_MatmulOp : Tg_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "Batched matrix product";
  let description = [{
    Multiplies the last two dims of `lhs` ([..., M, K], or [..., K, M] with
    `transpose_lhs`) and `rhs` ([..., K, N], or [..., N, K] with
    `transpose_rhs`); the leading batch dims broadcast. A linear layer is a
    matmul followed by `tg.add` of the bias.

    ```mlir
    %y = tg.matmul %x, %w {transpose_rhs = true}
        : tensor<8x64x768xf32>, tensor<50257x768xf32> -> tensor<8x64x50257xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$lhs, Tg_FloatTensor:$rhs,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                   DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
}

class Tg_ReduceOp<string mnemonic, string what> :
    Tg_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = "Reduction by " # what # " over dims";
  let description = [{
    Reduces over `dims` (all dims when empty; negative dims count from the
    back). With `keepdim` the reduced dims stay as size 1.

    ```mlir
    %s = tg.}] # mnemonic # [{ %x {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Tg_NumericTensor:$x,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$dims,
                   DefaultValuedAttr<BoolAttr, "false">:$keepdim);
  let results = (outs Tg_NumericTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let extraClassDeclaration = [{
    /// The reduced dims, non-negative and sorted.
    ::llvm::SmallVector<int64_t> getReducedDims();
  }];
}

def Tg_ReduceSumOp : Tg_ReduceOp<"reduce_sum", "sum">;
def Tg_ReduceMeanOp : Tg_ReduceOp<"reduce_mean", "mean">;
def Tg_ReduceMaxOp : Tg_ReduceOp<"reduce_max", "maximum">;

class Tg_AxisOp<string mnemonic, string what> :
    Tg_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = what # " along an axis";
  let description = [{
    ```mlir
    %p = tg.}] # mnemonic # [{ %x {axis = -1} : tensor<4x10xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$x,
                   DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def Tg_SoftmaxOp : Tg_AxisOp<"softmax", "Softmax">;
def Tg_LogSoftmaxOp : Tg_AxisOp<"log_softmax", "Log-softmax">;

//===----------------------------------------------------------------------===//
// Normalization, regularization, embedding, loss, attention
//===----------------------------------------------------------------------===//

def Tg_LayerNormOp : Tg_Op<"layer_norm", [Pure, AttrSizedOperandSegments]> {
  let summary = "Layer normalization over the last dim";
  let description = [{
    y = (x - mean) / sqrt(var + eps) * weight + bias, with mean and (biased)
    variance over the last dim. `weight` and `bias` are optional 1-D tensors
    of the size of the last dim.

    ```mlir
    %y = tg.layer_norm %x weight %g bias %b {eps = 1.0e-05 : f64}
        : (tensor<8x64x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<8x64x768xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$x,
                   Optional<Tg_FloatTensor>:$weight,
                   Optional<Tg_FloatTensor>:$bias,
                   DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = [{
    $x (`weight` $weight^)? (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tg_RmsNormOp : Tg_Op<"rms_norm", [Pure]> {
  let summary = "RMS normalization over the last dim";
  let description = [{
    y = x / sqrt(mean(x^2) + eps) * weight, over the last dim; `weight` is an
    optional 1-D tensor of the size of the last dim.

    ```mlir
    %y = tg.rms_norm %x weight %g : (tensor<8x512xf32>, tensor<512xf32>) -> tensor<8x512xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$x, Optional<Tg_FloatTensor>:$weight,
                   DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = [{
    $x (`weight` $weight^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tg_DropoutOp : Tg_Op<"dropout", [Pure, SameOperandsAndResultType]> {
  let summary = "Seeded dropout";
  let description = [{
    Zeroes each element with probability `p` and scales the rest by
    1 / (1 - p). The mask is a pure function of `seed`, the training step and
    the element index, so a step recomputed (remat) or resumed draws the same
    mask.

    ```mlir
    %y = tg.dropout %x {p = 1.0e-01 : f64, seed = 7 : i64} : tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$x,
                   DefaultValuedAttr<F64Attr, "0.1">:$p,
                   DefaultValuedAttr<I64Attr, "0">:$seed);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def Tg_EmbeddingOp : Tg_Op<"embedding", [Pure, InferTypeOpAdaptor]> {
  let summary = "Row gather from an embedding table";
  let description = [{
    result[i..., :] = table[indices[i...], :].

    ```mlir
    %e = tg.embedding %wte, %ids : tensor<256x128xf32>, tensor<8x64xi32> -> tensor<8x64x128xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$table, Tg_IntTensor:$indices);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $indices attr-dict `:` type($table) `,` type($indices) `->` type($result)
  }];
}

// How a loss combines its per-label terms. Not the collective Reduction:
// `none` keeps the per-label losses (and so changes the result type).
def Tg_LossReduction : I32EnumAttr<"LossReduction",
    "how tg.cross_entropy combines its per-label losses", [
    I32EnumAttrCase<"mean", 0>, I32EnumAttrCase<"sum", 1>,
    I32EnumAttrCase<"none", 2>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_LossReductionAttr :
    EnumAttr<Tg_Dialect, Tg_LossReduction, "loss_reduction">;

def Tg_CrossEntropyOp : Tg_Op<"cross_entropy", [Pure, InferTypeOpAdaptor]> {
  let summary = "Softmax cross-entropy against integer labels";
  let description = [{
    `logits` is [..., C] and `labels` the leading dims [...]. Labels equal to
    `ignore_index` add nothing and do not count toward the mean.
    `reduction` is `#tg<loss_reduction mean>` (a scalar over the counted
    labels, the default), `sum` (a scalar), or `none` (the per-label losses,
    shaped like `labels`).
    The loss is f32 whatever the logits' float type: the softmax and the sums
    accumulate in f32, and bf16 logits are read as they are (a fused
    classifier) rather than widened to an f32 copy.

    ```mlir
    %l = tg.cross_entropy %logits, %y : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
    %m = tg.cross_entropy %h, %t : tensor<8x64x256xbf16>, tensor<8x64xi64> -> tensor<f32>
    %n = tg.cross_entropy %logits, %y {reduction = #tg<loss_reduction none>}
        : tensor<32x10xf32>, tensor<32xi64> -> tensor<32xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$logits, Tg_IntTensor:$labels,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                   DefaultValuedAttr<Tg_LossReductionAttr,
                       "::mlir::tg::LossReduction::mean">:$reduction);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->` type($result)
  }];
}

def Tg_AttentionOp : Tg_Op<"attention", [Pure, InferTypeOpAdaptor]> {
  let summary = "Scaled dot-product attention over heads";
  let description = [{
    `query` is [B, H, T, D], `key` [B, Hkv, S, D] and `value` [B, Hkv, S, Dv];
    the result is softmax(query · keyᵀ · scale + mask) · value, shaped
    [B, H, T, Dv]. `scale` defaults to 1/sqrt(D). With `causal`, query
    position t attends to key positions s <= t + (S - T).

    Grouped-query attention: Hkv must divide H, and query head h reads
    key/value head h / (H / Hkv) (Hkv = H is multi-head attention, Hkv = 1
    multi-query attention).

    The optional `mask` is added to the scaled scores before the softmax
    (padding masks, ALiBi, learned biases): a tensor of the query's element
    type that broadcasts to the scores [B, H, T, S] (numpy rules: its dims,
    aligned at the back, are 1 or the scores' dim). It may hold -inf, and
    combines with `causal`. A query row that sees no key (every score -inf)
    gets zeros, as PyTorch's flash path gives, not the NaN of a plain
    softmax; its gradients are zero too. A mask computed from trainable
    parameters gets a gradient: the scores' gradient summed over the dims
    it broadcasts along.

    ```mlir
    %o = tg.attention %q, %k, %v {causal = true}
        : tensor<8x4x64x32xf32>, tensor<8x4x64x32xf32>, tensor<8x4x64x32xf32> -> tensor<8x4x64x32xf32>
    %g = tg.attention %q, %k, %v mask %pad
        : tensor<8x4x64x32xf32>, tensor<8x2x64x32xf32>, tensor<8x2x64x32xf32>, tensor<8x1x1x64xf32> -> tensor<8x4x64x32xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$query, Tg_FloatTensor:$key,
                   Tg_FloatTensor:$value, Optional<Tg_FloatTensor>:$mask,
                   DefaultValuedAttr<BoolAttr, "false">:$causal,
                   OptionalAttr<F64Attr>:$scale);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? attr-dict `:` type($query) `,`
    type($key) `,` type($value) (`,` type($mask)^)? `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// `scale`, or 1/sqrt(D) when it is not given.
    double getEffectiveScale();
    /// The bytes of the statistics a fused backward reads, when a backend
    /// keeps them from the forward (tg-plan-memory's tg.scratch): the
    /// log-sum-exp of each query row, one f32 per [B, H, T].
    int64_t getStatisticsBytes();
  }];
}

//===----------------------------------------------------------------------===//
// Convolution and pooling (NCHW)
//===----------------------------------------------------------------------===//

def Tg_Conv2dOp : Tg_Op<"conv2d", [Pure, InferTypeOpAdaptor]> {
  let summary = "2-D convolution, NCHW input and OIHW weight";
  let description = [{
    `input` is [N, C, H, W], `weight` [O, C / groups, KH, KW], the optional
    `bias` [O]. `stride`, `padding` (symmetric) and `dilation` hold one value
    per spatial dim.

    ```mlir
    %y = tg.conv2d %x, %w, %b {padding = array<i64: 1, 1>}
        : (tensor<32x1x8x8xf32>, tensor<16x1x3x3xf32>, tensor<16xf32>) -> tensor<32x16x8x8xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$input, Tg_FloatTensor:$weight,
                   Optional<Tg_FloatTensor>:$bias,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$stride,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                   DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

class Tg_Pool2dOp<string mnemonic, string what> :
    Tg_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = "2-D " # what # " pooling, NCHW";
  let description = [{
    `kernel_size` is required; `stride` defaults to the kernel size and
    `padding` to zero. Average pooling divides by the number of elements
    inside the unpadded input.

    ```mlir
    %p = tg.}] # mnemonic # [{ %x {kernel_size = array<i64: 2, 2>}
        : tensor<32x16x8x8xf32> -> tensor<32x16x4x4xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$input,
                   DenseI64ArrayAttr:$kernel_size,
                   OptionalAttr<DenseI64ArrayAttr>:$stride,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let extraClassDeclaration = [{
    /// `stride`, or the kernel size when it is not given.
    ::llvm::SmallVector<int64_t> getEffectiveStride();
  }];
}

def Tg_MaxPool2dOp : Tg_Pool2dOp<"max_pool2d", "max">;
def Tg_AvgPool2dOp : Tg_Pool2dOp<"avg_pool2d", "average">;

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

def Tg_FlattenOp : Tg_Op<"flatten", [Pure, InferTypeOpAdaptor]> {
  let summary = "Merges a range of dims into one";
  let description = [{
    Merges dims `start_dim` through `end_dim` (inclusive; negative counts
    from the back).

    ```mlir
    %f = tg.flatten %x : tensor<32x16x4x4xf32> -> tensor<32x256xf32>
    ```
  }];
  let arguments = (ins Tg_Tensor:$x,
                   DefaultValuedAttr<I64Attr, "1">:$start_dim,
                   DefaultValuedAttr<I64Attr, "-1">:$end_dim);
  let results = (outs Tg_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
}

def Tg_ReshapeOp : Tg_Op<"reshape", [Pure]> {
  let summary = "Same elements, new shape";
  let description = [{
    ```mlir
    %r = tg.reshape %x : tensor<8x64x768xf32> -> tensor<8x64x12x64xf32>
    ```
  }];
  let arguments = (ins Tg_Tensor:$x);
  let results = (outs Tg_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tg_TransposeOp : Tg_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
  let summary = "Permutes dims";
  let description = [{
    result dim i is input dim `perm[i]`.

    ```mlir
    %t = tg.transpose %x {perm = array<i64: 0, 2, 1, 3>}
        : tensor<8x64x12x64xf32> -> tensor<8x12x64x64xf32>
    ```
  }];
  let arguments = (ins Tg_Tensor:$x, DenseI64ArrayAttr:$perm);
  let results = (outs Tg_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasFolder = 1;
}

def Tg_SliceOp : Tg_Op<"slice", [Pure, InferTypeOpAdaptor]> {
  let summary = "A strided box of a tensor";
  let description = [{
    Per dim, keeps indices `start`, `start + stride`, ... below `limit`.
    `stride` defaults to all ones.

    ```mlir
    %q = tg.slice %qkv {start = array<i64: 0, 0, 0>, limit = array<i64: 8, 64, 768>}
        : tensor<8x64x2304xf32> -> tensor<8x64x768xf32>
    ```
  }];
  let arguments = (ins Tg_Tensor:$x, DenseI64ArrayAttr:$start,
                   DenseI64ArrayAttr:$limit,
                   OptionalAttr<DenseI64ArrayAttr>:$stride);
  let results = (outs Tg_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasFolder = 1;
  let extraClassDeclaration = [{
    /// `stride`, or all ones when it is not given.
    ::llvm::SmallVector<int64_t> getEffectiveStride();
  }];
}

def Tg_ConcatOp : Tg_Op<"concat", [Pure, InferTypeOpAdaptor]> {
  let summary = "Joins tensors along an axis";
  let description = [{
    ```mlir
    %c = tg.concat %a, %b {axis = 1} : (tensor<4x2xf32>, tensor<4x3xf32>) -> tensor<4x5xf32>
    ```
  }];
  let arguments = (ins Variadic<Tg_Tensor>:$inputs,
                   DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Tg_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results)";
  let hasFolder = 1;
}

def Tg_BroadcastToOp : Tg_Op<"broadcast_to", [Pure]> {
  let summary = "Expands a tensor to a larger shape by numpy broadcasting";
  let description = [{
    ```mlir
    %b = tg.broadcast_to %x : tensor<768xf32> -> tensor<8x64x768xf32>
    ```
  }];
  let arguments = (ins Tg_Tensor:$x);
  let results = (outs Tg_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

include "dialects/tg/IR/TgGradOps.td"
include "dialects/tg/IR/TgOptimizerOps.td"
include "dialects/tg/IR/TgCollectiveOps.td"
include "dialects/tg/IR/TgShardingOps.td"
include "dialects/tg/IR/TgKernelOps.td"

#endif // TG_OPS_TD
