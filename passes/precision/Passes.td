//===- Passes.td - Precision passes ------------------------*- tablegen -*-===//

#ifndef TG_PASSES_PRECISION_TD
#define TG_PASSES_PRECISION_TD

include "mlir/Pass/PassBase.td"

def PrecisionPass : Pass<"tg-precision", "ModuleOp"> {
  let summary = "Makes @forward compute in bf16 with fp32 master weights and "
                "an fp32 loss";
  let description = [{
    Mixed precision as llm.c and PyTorch autocast do it, applied to
    `@forward` before tg-autodiff: reverse mode then differentiates through
    the casts this pass inserts, so the backward ops compute in bf16 too and
    the gradient of each parameter comes back through its cast as f32, the
    type the f32 optimizer update (tg-optimizer) reads and writes.

    Policy `bf16`:
    - Parameters stay f32 arguments: they are the master weights the
      optimizer updates. Each f32 parameter and float batch input that a bf16
      op reads is cast to bf16 once, at the top of `@forward`, and its uses
      take the cast. Integer inputs (token ids, labels) are untouched.
    - Ops compute in bf16 when one of their float operands is bf16 (or is an
      f32 argument): other f32 operands are converted (an f32 `tg.constant`
      becomes a bf16 `tg.constant`, any other value gets a `tg.cast`), and the
      result types are derived again in program order, from the op's type
      inference where it has one and otherwise from its float operands'
      element type (same-type ops, `reshape`, `broadcast_to`, norms).
    - `tg.cross_entropy` reads bf16 logits as they are and gives an f32 loss
      (the dialect's type rule: the loss is f32 whatever the logits' type).
      The logits are never widened: for GPT-2 124M an f32 copy of them
      (8x1024x50257) would be 1.6 GB.
    - Ops whose results are all scalars (rank 0) compute in f32: the loss and
      the reductions that produce it, regularizers, metrics. Their bf16
      operands are cast to f32; for a full `tg.reduce_sum`/`reduce_mean` that
      is an f32 copy of the reduced tensor (per-example losses, or a
      parameter for a weight penalty), and the scalar it produces is not
      rounded to bf16's 3 significant digits. (`tg.reduce_max` stays bf16:
      its result is one of its inputs, exact in bf16.)
    - Partial reductions (some dims kept), softmax, log_softmax, layer_norm,
      rms_norm, exp, log and the rest keep bf16 *storage*. Every kernel that
      reads bf16 accumulates in f32 (GEMMs, reduction sums, norm statistics,
      softmax, attention): that is the backends' side of this policy, so a
      reduction over many elements loses only the final rounding of its
      result to bf16, as any bf16 activation does. Casting their inputs to
      f32 instead would materialise an f32 copy of an activation-sized
      tensor (twice the bf16 bytes, in the forward and again in the
      backward) for 8 more bits in a result the next bf16 op rounds anyway.
    - Ops named in `fp32-ops` compute in f32 as well (their bf16 operands are
      cast to f32, their results stay f32 until a bf16 op reads them): for a
      backend that has only f32 kernels for an op, or a model that needs one
      op in f32.
    - `tg.cast` ops the model wrote are kept as written.
    - `tg.iota` reads nothing, so it stays f32, and so does what is computed
      from it and constants alone (a rotary table's angles, their sin and
      cos): bf16 holds positions exactly only up to 256. A bf16 op reads the
      table through a `tg.cast`.
    - `@forward`'s signature does not change: a result that comes out bf16
      (an output other than the loss) is cast back to f32 before the return.

    The module gets `tg.precision = #tg<precision bf16>` (an enum the dialect
    verifies), which later stages read. On a module that has it (other than
    `fp32`, which
    marks an unconverted module), the pass changes nothing unless the
    `policy` option asks for another policy, which is an error
    (the training table's `precision` is the model file's default, which an
    earlier option may have overridden). Converting a module that has
    `@forward_backward` already is an error too: its gradients would not see
    the casts.

    Policy `fp32` changes nothing and adds no attribute (a module without
    `tg.precision` computes in f32). `fp16` and `fp8` are recognised but not
    applied yet: they need loss scaling and per-tensor scales.

    The policy is the `policy` option, else the `precision` key of the
    module's `tg.training` table, else `fp32`.

    Before:
    ```mlir
    func.func @forward(%w: tensor<64x10xf32> {tg.param = "w"},
                       %x: tensor<32x64xf32> {tg.input = "x"},
                       %y: tensor<32xi64> {tg.input = "y"}) -> tensor<f32> {
      %h = tg.matmul %x, %w : tensor<32x64xf32>, tensor<64x10xf32> -> tensor<32x10xf32>
      %l = tg.cross_entropy %h, %y : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
    After `-tg-precision=policy=bf16`:
    ```mlir
    module attributes {tg.precision = #tg<precision bf16>} {
    func.func @forward(%w: tensor<64x10xf32> {tg.param = "w"},
                       %x: tensor<32x64xf32> {tg.input = "x"},
                       %y: tensor<32xi64> {tg.input = "y"}) -> tensor<f32> {
      %wb = tg.cast %w : tensor<64x10xf32> to tensor<64x10xbf16>
      %xb = tg.cast %x : tensor<32x64xf32> to tensor<32x64xbf16>
      %h = tg.matmul %xb, %wb : tensor<32x64xbf16>, tensor<64x10xbf16> -> tensor<32x10xbf16>
      %l = tg.cross_entropy %h, %y : tensor<32x10xbf16>, tensor<32xi64> -> tensor<f32>
      return %l : tensor<f32>
    }
    }
    ```
    and after tg-autodiff the gradient of `w` is
    `tg.cast %gwb : tensor<64x10xbf16> to tensor<64x10xf32>`.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect", "::mlir::func::FuncDialect"];
  let options = [
    Option<"policy", "policy", "std::string", "\"\"",
           "Precision policy: fp32 or bf16 (fp16 and fp8 later); default: "
           "the training table's precision, else fp32">,
    ListOption<"fp32Ops", "fp32-ops", "std::string",
               "Ops that compute in f32 under a low-precision policy "
               "(e.g. tg.conv2d,tg.max_pool2d)">,
  ];
  let statistics = [
    Statistic<"numCasts", "casts", "tg.cast ops inserted">,
    Statistic<"numConverted", "converted-ops",
              "Ops whose operand or result types changed">,
    Statistic<"numConstants", "constants",
              "Constants re-created in the compute type">,
  ];
}

#endif // TG_PASSES_PRECISION_TD
