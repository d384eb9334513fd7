//===- TgGradOps.td - tg gradient ops ----------------------*- tablegen -*-===//
//
// Gradient ops for the forward ops whose vector-Jacobian product is not a
// short composition of forward ops. tg-autodiff creates them; the backends
// implement each with one kernel.
//
//===----------------------------------------------------------------------===//

#ifndef TG_GRAD_OPS_TD
#define TG_GRAD_OPS_TD

class Tg_GradOp<string mnemonic, list<Trait> traits = []> :
    Tg_Op<mnemonic, traits # [Pure]>;

def Tg_GeluGradOp : Tg_GradOp<"gelu_grad", [AllTypesMatch<["grad", "x", "result"]>]> {
  let summary = "Gradient of tg.gelu";
  let description = [{
    ```mlir
    %dx = tg.gelu_grad %g, %x {approximate = #tg<approximation tanh>} : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$grad, Tg_FloatTensor:$x,
                   DefaultValuedAttr<Tg_GeluApproximationAttr,
                       "::mlir::tg::GeluApproximation::none">:$approximate);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $x attr-dict `:` type($x)";
}

def Tg_LayerNormGradOp : Tg_GradOp<"layer_norm_grad"> {
  let summary = "Gradient of tg.layer_norm";
  let description = [{
    Returns the gradients of x, weight and bias. Without a weight operand the
    norm is taken as unscaled; the weight and bias gradients are still
    returned and may be left unused.

    ```mlir
    %dx, %dw, %db = tg.layer_norm_grad %g, %x weight %w {eps = 1.0e-05 : f64}
        : (tensor<8x768xf32>, tensor<8x768xf32>, tensor<768xf32>)
        -> (tensor<8x768xf32>, tensor<768xf32>, tensor<768xf32>)
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$grad, Tg_FloatTensor:$x,
                   Optional<Tg_FloatTensor>:$weight,
                   DefaultValuedAttr<F64Attr, "1.0e-5">:$eps);
  let results = (outs Tg_FloatTensor:$dx, Tg_FloatTensor:$dweight,
                  Tg_FloatTensor:$dbias);
  let assemblyFormat = [{
    $grad `,` $x (`weight` $weight^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tg_RmsNormGradOp : Tg_GradOp<"rms_norm_grad"> {
  let summary = "Gradient of tg.rms_norm";
  let description = [{
    ```mlir
    %dx, %dw = tg.rms_norm_grad %g, %x weight %w
        : (tensor<8x512xf32>, tensor<8x512xf32>, tensor<512xf32>) -> (tensor<8x512xf32>, tensor<512xf32>)
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$grad, Tg_FloatTensor:$x,
                   Optional<Tg_FloatTensor>:$weight,
                   DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Tg_FloatTensor:$dx, Tg_FloatTensor:$dweight);
  let assemblyFormat = [{
    $grad `,` $x (`weight` $weight^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tg_EmbeddingGradOp : Tg_GradOp<"embedding_grad"> {
  let summary = "Gradient of tg.embedding: scatter-add of rows";
  let description = [{
    ```mlir
    %dtable = tg.embedding_grad %g, %ids : tensor<8x64x128xf32>, tensor<8x64xi32> -> tensor<256x128xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$grad, Tg_IntTensor:$indices);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $indices attr-dict `:` type($grad) `,` type($indices) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tg_CrossEntropyGradOp : Tg_GradOp<"cross_entropy_grad"> {
  let summary = "Gradient of tg.cross_entropy with respect to the logits";
  let description = [{
    `grad` is the gradient of the loss (a scalar, or shaped like the labels for
    `reduction = #tg<loss_reduction none>`), f32 as the loss is; the result
    has the logits' type.

    ```mlir
    %dlogits = tg.cross_entropy_grad %g, %logits, %y
        : tensor<f32>, tensor<32x10xbf16>, tensor<32xi64> -> tensor<32x10xbf16>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$grad, Tg_FloatTensor:$logits,
                   Tg_IntTensor:$labels,
                   DefaultValuedAttr<I64Attr, "-100">:$ignore_index,
                   DefaultValuedAttr<Tg_LossReductionAttr,
                       "::mlir::tg::LossReduction::mean">:$reduction);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $logits `,` $labels attr-dict `:` type($grad) `,` type($logits) `,`
    type($labels) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tg_AttentionGradOp : Tg_GradOp<"attention_grad"> {
  let summary = "Gradient of tg.attention";
  let description = [{
    The operands and attributes are those of the forward tg.attention after
    the output gradient `grad`; the gradients have the types of the query,
    key and value (dkey and dvalue sum over the query heads of each
    key/value group). With a `mask`, the optional `dmask` result is the
    mask's gradient, summed over the dims the mask broadcasts along; leave
    it off when the mask is not trained (canonicalization drops it when
    nothing reads it).

    ```mlir
    %dq, %dk, %dv = tg.attention_grad %g, %q, %k, %v {causal = true}
        : (tensor<8x4x64x32xf32>, tensor<8x4x64x32xf32>, tensor<8x4x64x32xf32>, tensor<8x4x64x32xf32>)
        -> (tensor<8x4x64x32xf32>, tensor<8x4x64x32xf32>, tensor<8x4x64x32xf32>)
    %dq2, %dk2, %dv2, %db = tg.attention_grad %g, %q, %k, %v mask %bias
        : (tensor<8x4x64x32xf32>, tensor<8x4x64x32xf32>, tensor<8x2x64x32xf32>, tensor<8x2x64x32xf32>, tensor<1x4x64x64xf32>)
        -> (tensor<8x4x64x32xf32>, tensor<8x2x64x32xf32>, tensor<8x2x64x32xf32>, tensor<1x4x64x64xf32>)
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$grad, Tg_FloatTensor:$query,
                   Tg_FloatTensor:$key, Tg_FloatTensor:$value,
                   Optional<Tg_FloatTensor>:$mask,
                   DefaultValuedAttr<BoolAttr, "false">:$causal,
                   OptionalAttr<F64Attr>:$scale);
  let results = (outs Tg_FloatTensor:$dquery, Tg_FloatTensor:$dkey,
                  Tg_FloatTensor:$dvalue, Optional<Tg_FloatTensor>:$dmask);
  let assemblyFormat = [{
    $grad `,` $query `,` $key `,` $value (`mask` $mask^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// The tg.attention before it in its block on the same operands and
    /// attributes, whose output and row statistics a backend may keep for
    /// this gradient (CUDA's flash attention); null when there is none.
    AttentionOp getForward();
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

class Tg_ConvGradOp<string mnemonic, string what> : Tg_GradOp<mnemonic> {
  let summary = "Gradient of tg.conv2d with respect to its " # what;
  let description = [{
    The attributes are those of the forward tg.conv2d; the result type is the
    forward operand's type.

    ```mlir
    %dx = tg.conv2d_grad_input %g, %w {padding = array<i64: 1, 1>}
        : (tensor<32x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<32x1x8x8xf32>
    %dw = tg.conv2d_grad_weight %g, %x {padding = array<i64: 1, 1>}
        : (tensor<32x16x8x8xf32>, tensor<32x1x8x8xf32>) -> tensor<16x1x3x3xf32>
    ```
  }];
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = [{
    operands attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tg_Conv2dGradInputOp : Tg_ConvGradOp<"conv2d_grad_input", "input"> {
  let arguments = (ins Tg_FloatTensor:$grad, Tg_FloatTensor:$weight,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$stride,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                   DefaultValuedAttr<I64Attr, "1">:$groups);
}

def Tg_Conv2dGradWeightOp : Tg_ConvGradOp<"conv2d_grad_weight", "weight"> {
  let arguments = (ins Tg_FloatTensor:$grad, Tg_FloatTensor:$input,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$stride,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilation,
                   DefaultValuedAttr<I64Attr, "1">:$groups);
}

class Tg_PoolGradOp<string mnemonic, string what> : Tg_GradOp<mnemonic> {
  let summary = "Gradient of tg." # what;
  let description = [{
    `input` is the forward input (its type is the result type); the
    attributes are those of the forward op.

    ```mlir
    %dx = tg.}] # mnemonic # [{ %g, %x {kernel_size = array<i64: 2, 2>}
        : tensor<32x16x4x4xf32>, tensor<32x16x8x8xf32> -> tensor<32x16x8x8xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$grad, Tg_FloatTensor:$input,
                   DenseI64ArrayAttr:$kernel_size,
                   OptionalAttr<DenseI64ArrayAttr>:$stride,
                   DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0}">:$padding);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = [{
    $grad `,` $input attr-dict `:` type($grad) `,` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tg_MaxPool2dGradOp : Tg_PoolGradOp<"max_pool2d_grad", "max_pool2d">;
def Tg_AvgPool2dGradOp : Tg_PoolGradOp<"avg_pool2d_grad", "avg_pool2d">;

def Tg_SliceGradOp : Tg_GradOp<"slice_grad"> {
  let summary = "Gradient of tg.slice: the slice's gradient placed in zeros";
  let description = [{
    ```mlir
    %dx = tg.slice_grad %g {start = array<i64: 0, 128>, limit = array<i64: 8, 256>}
        : tensor<8x128xf32> -> tensor<8x384xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$grad, DenseI64ArrayAttr:$start,
                   DenseI64ArrayAttr:$limit,
                   OptionalAttr<DenseI64ArrayAttr>:$stride);
  let results = (outs Tg_FloatTensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
  // A slice_grad that covers its whole result is its operand.
  let hasFolder = 1;
}

#endif // TG_GRAD_OPS_TD
