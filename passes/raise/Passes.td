//===- Passes.td - Raising spelled-out patterns to tg ops ----*- tablegen -*-===//

#ifndef TG_PASSES_RAISE_TD
#define TG_PASSES_RAISE_TD

include "mlir/Pass/PassBase.td"

def RaisePass : Pass<"tg-raise", "ModuleOp"> {
  let summary = "Turns attention, GELU, SiLU and the norms written out op "
                "by op into their tg ops";
  let description = [{
    A model exported from PyTorch (ONNX) writes attention and GELU out as
    the ops they compute. This pass finds them in `@forward` and puts the
    tg op in their place, so that the flash-attention kernels, the fused
    backward and the fusion rules apply to them:

    - scaled dot-product attention: `matmul(q, transpose(k))` (or
      `transpose_rhs`), scaled by a constant (`mul` or `div`), masked by a
      constant (`select(mask, -inf, scores)` or `add(scores, mask)`;
      a causal mask becomes `causal = true`, another one the `mask`
      operand), `softmax` over the last axis, `matmul` with v. Key and
      value repeated for grouped-query attention (`reshape` ->
      `broadcast_to` -> `reshape` of [B, Hkv, S, D] to [B, H, S, D]) are
      read unrepeated.
    - GELU in its tanh form, `0.5 * x * (1 + tanh(sqrt(2/pi) * (x +
      0.044715 * x^3)))`, in any order of the products; SiLU, `x *
      sigmoid(x)`.
    - RMSNorm, `x * rsqrt(mean(x^2) + eps) * w` (the root also as `1 /
      sqrt` or a division by `sqrt`), and layer norm, `(x - mean(x)) /
      sqrt(mean((x - mean(x))^2) + eps) * w + b`, over the last dim (a
      kept mean), the weight and bias optional.

    Only what computes exactly the same function is raised (the constants
    are checked to 1e-6 relative, the mask element by element), and only
    when the intermediate values have no other uses. The results agree
    with the written-out form to rounding, not bit for bit.

    ```mlir
    %kt = tg.transpose %k {perm = array<i64: 0, 1, 3, 2>} ...
    %s = tg.matmul %q, %kt ...
    %c = tg.mul %s, %scale ...        // 1/sqrt(D)
    %m = tg.select %causal, %neginf, %c ...
    %p = tg.softmax %m {axis = -1 : i64} ...
    %y = tg.matmul %p, %v ...
    ```
    becomes `%y = tg.attention %q, %k, %v {causal = true}`.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect", "::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numAttention", "attention", "Attentions raised">,
    Statistic<"numGelu", "gelu", "GELUs raised">,
    Statistic<"numSilu", "silu", "SiLUs raised">,
    Statistic<"numRmsNorm", "rms-norm", "RMSNorms raised">,
    Statistic<"numLayerNorm", "layer-norm", "Layer norms raised">,
  ];
}

#endif // TG_PASSES_RAISE_TD
