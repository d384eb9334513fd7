//===- TgKernelOps.td - Fused kernels ----------------------*- tablegen -*-===//
//
// The kernel level of the step: after tg-fuse, a tg.kernel holds the tg ops
// one generated kernel computes, so the grouping the backends print is in
// the IR, where `tgc --compile-to=fusion` shows it and FileCheck tests it.
//
//===----------------------------------------------------------------------===//

#ifndef TG_KERNEL_OPS_TD
#define TG_KERNEL_OPS_TD

include "mlir/IR/EnumAttr.td"

def Tg_KernelKind : I32EnumAttr<"KernelKind", "what a fused kernel computes", [
    I32EnumAttrCase<"elementwise", 0>, I32EnumAttrCase<"gemm", 1>,
    I32EnumAttrCase<"reduction", 2>, I32EnumAttrCase<"classifier", 3>,
    I32EnumAttrCase<"optimizer", 4>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_KernelKindAttr : EnumAttr<Tg_Dialect, Tg_KernelKind, "kernel_kind">;

// The epilogues a GEMM library applies after the product (cuBLASLt's
// CUBLASLT_EPILOGUE_BIAS, _GELU_AUX, _GELU_AUX_BIAS and _DGELU).
def Tg_GemmEpilogue : I32EnumAttr<"GemmEpilogue",
    "the GEMM library epilogue a gemm kernel runs as", [
    I32EnumAttrCase<"bias", 0>, I32EnumAttrCase<"gelu", 1>,
    I32EnumAttrCase<"bias_gelu", 2>, I32EnumAttrCase<"gelu_grad", 3>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_GemmEpilogueAttr : EnumAttr<Tg_Dialect, Tg_GemmEpilogue, "epilogue">;

def Tg_KernelOp : Tg_Op<"kernel", [IsolatedFromAbove, RecursiveMemoryEffects,
                                   SingleBlock]> {
  let summary = "Tg ops computed by one generated kernel";
  let description = [{
    The body computes the results from the inputs (its block arguments) with
    ordinary tg ops and yields them; no intermediate of the body is stored.
    `kind` says how the backends print it:

    - `elementwise`: one loop over the iteration space, the shape of every
      result: elementwise ops (with numpy broadcasting of smaller inputs)
      and, for a backend that reads at remapped indices, data movement
      (`tg.transpose`, `tg.slice`, `tg.slice_grad`, `tg.concat`, views)
      and `tg.iota`, computed at the index each consumer asks for. A CPU
      backend prints one OpenMP loop that keeps the intermediates in
      registers (elementwise ops over one shape only).
    - `gemm`: a GEMM and its epilogue. The body starts with exactly one
      `tg.matmul` (any transposes and batch dims it allows); every other op
      is elementwise over the matmul's result shape (the epilogue); the
      kernel yields the matmul's or an epilogue op's value, last the final
      one (a GEMM library may store an earlier one as well, as cuBLASLt's
      GELU_AUX epilogues store the pre-activation). A CPU backend prints
      the GEMM call writing straight into the result, then one loop
      applying the epilogue in place.
    - `reduction`: one `tg.reduce_sum`, `tg.reduce_mean` or `tg.reduce_max`
      with an elementwise prologue before it (ops over the reduction's input
      shape) and an epilogue after it (ops over its result shape, reading
      the reduced value, inputs and each other, not the prologue); the
      kernel yields one value, the reduction's or an epilogue op's. The
      reduced dims, size-1 dims left out, are adjacent, so the reduction is
      one loop nest `[outer, reduced, inner]` that computes the prologue as
      it reads and stores no intermediate.
    - `classifier`: a `tg.cross_entropy` and the `tg.cross_entropy_grad` of
      the same logits and labels (same `ignore_index` and `reduction`), in
      that order; the kernel yields the gradient, and the loss when it is
      read. The backend computes each row's log-sum-exp once for both, as
      llm.c's fused classifier does, instead of sweeping the logits twice.
    - `optimizer`: `tg.optimizer_update` ops of one kind, hyperparameters,
      learning rate and step (a multi-tensor update: one launch for many
      parameters), each with its `grad_scale` or none; the kernel yields
      the updates' results in order.

    `epilogue`, on a gemm kernel only, says which GEMM library epilogue
    the body is, as tg-fuse chose it for a target that runs GEMMs in such a
    library (CUDA's cuBLASLt); the body must be exactly that:
    - `bias`: the matmul, then a `tg.add` of it and a vector as long as its
      last dim;
    - `gelu`: the matmul, then a tanh `tg.gelu` of it;
    - `bias_gelu`: the bias add, then a tanh `tg.gelu` of the sum (the
      kernel yields the sum too: the library stores the pre-activation);
    - `gelu_grad`: the matmul, then a tanh `tg.gelu_grad` whose gradient is
      the matmul's result.
    A backend that runs GEMMs so reads the epilogue here instead of
    matching the body.

    `name` names the generated kernel after the ops it fuses.

    ```mlir
    %y = tg.kernel elementwise (%h, %b : tensor<32x128xf32>, tensor<128xf32>)
        attributes {name = "fused_add_relu"} {
    ^bb0(%x: tensor<32x128xf32>, %bias: tensor<128xf32>):
      %s = tg.add %x, %bias : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
      %r = tg.relu %s : tensor<32x128xf32>
      tg.yield %r : tensor<32x128xf32>
    } -> tensor<32x128xf32>

    %z = tg.kernel gemm (%h, %w, %b : tensor<32x128xf32>, tensor<128x64xf32>,
                                      tensor<64xf32>)
        attributes {name = "fused_matmul_add_gelu"} {
    ^bb0(%x: tensor<32x128xf32>, %m: tensor<128x64xf32>, %c: tensor<64xf32>):
      %p = tg.matmul %x, %m : tensor<32x128xf32>, tensor<128x64xf32> -> tensor<32x64xf32>
      %s = tg.add %p, %c : tensor<32x64xf32>, tensor<64xf32> -> tensor<32x64xf32>
      %g = tg.gelu %s : tensor<32x64xf32>
      tg.yield %g : tensor<32x64xf32>
    } -> tensor<32x64xf32>

    %db = tg.kernel reduction (%g, %x : tensor<32x128xf32>, tensor<32x128xf32>)
        attributes {name = "fused_mul_reduce_sum"} {
    ^bb0(%a: tensor<32x128xf32>, %b: tensor<32x128xf32>):
      %p = tg.mul %a, %b : tensor<32x128xf32>, tensor<32x128xf32> -> tensor<32x128xf32>
      %s = tg.reduce_sum %p {dims = array<i64: 0>} : tensor<32x128xf32> -> tensor<128xf32>
      tg.yield %s : tensor<128xf32>
    } -> tensor<128xf32>
    ```
  }];
  let arguments = (ins Tg_KernelKindAttr:$kind, Variadic<Tg_Tensor>:$inputs,
                   OptionalAttr<Tg_GemmEpilogueAttr>:$epilogue,
                   OptionalAttr<StrAttr>:$name);
  let results = (outs Variadic<Tg_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind (`(` $inputs^ `:` type($inputs) `)`)? attr-dict-with-keyword $body
    `->` type($results)
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The terminator of the body.
    YieldOp getYield();

    /// The loop nest [outer, reduced, inner] of a tg.reduce_sum, _mean or
    /// _max when it reduces one run of adjacent dims (size-1 dims left out)
    /// of a non-empty input; nothing otherwise, or when `op` is not one.
    static std::optional<std::array<int64_t, 3>>
    getReductionNest(Operation *op);

    /// The GEMM library epilogue a gemm kernel's body is (see `epilogue`),
    /// if it is one: what tg-fuse writes and the verifier checks.
    static std::optional<GemmEpilogue> matchEpilogue(Block &body);
    /// The steps of those epilogues, after the GEMM's `product`: a
    /// tg.add of it and a vector as long as its last dim (of its type); a
    /// tanh tg.gelu of `x`; a tanh tg.gelu_grad whose gradient is
    /// `product`. tg-fuse grows a cuBLASLt kernel by them.
    static bool isBiasAdd(Operation *op, Value product);
    static bool isTanhGelu(Operation *op, Value x);
    static bool isTanhGeluGrad(Operation *op, Value product);

    /// verifyRegions, by kind.
    ::mlir::LogicalResult verifyElementwiseBody();
    ::mlir::LogicalResult verifyGemmBody();
    ::mlir::LogicalResult verifyReductionBody();
    ::mlir::LogicalResult verifyClassifierBody();
    ::mlir::LogicalResult verifyOptimizerBody();
  }];
}

def Tg_YieldOp : Tg_Op<"yield", [Pure, Terminator,
                                 HasParent<"KernelOp">]> {
  let summary = "The results of a tg.kernel body";
  let description = [{
    ```mlir
    tg.yield %r, %s : tensor<32x128xf32>, tensor<32x128xf32>
    ```
  }];
  let arguments = (ins Variadic<Tg_Tensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

#endif // TG_KERNEL_OPS_TD
