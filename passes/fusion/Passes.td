//===- Passes.td - Fusion passes ---------------------------*- tablegen -*-===//

#ifndef TG_PASSES_FUSION_TD
#define TG_PASSES_FUSION_TD

include "mlir/Pass/PassBase.td"

def FusePass : Pass<"tg-fuse", "func::FuncOp"> {
  let summary = "Groups tg ops into the kernels a backend prints";
  let description = [{
    Decides which ops one generated kernel computes and records each group
    as a `tg.kernel`, so the decision is in the IR (`tgc --compile-to=fusion`)
    rather than inside an emitter. The rules, all in Fuse.cpp:

    - **Elementwise chains** (`elementwise`): an elementwise op joins the
      group of an operand's producer when both iterate over the same shape
      (smaller operands broadcast into the loop) and no op outside the group
      has read the group's values yet, so the kernel can stand where its
      last op stood. A group may have several outputs (every value read
      after it). Nothing is recomputed: a value stays in one group, and
      groups of one op stay plain ops.
    - **GEMM epilogues** (`gemm`): a `tg.matmul` (any transposes and batch
      dims) and the chain of elementwise ops over its result shape that
      extends its result: each op joins when the value before it (the
      matmul's result, then the last epilogue op's) has no other reader, so
      nothing is recomputed and no intermediate stored. Bias add, GELU,
      relu, a residual add, a scale.
    - **Reductions with an elementwise prologue** (`reduction`): a
      `tg.reduce_sum`, `tg.reduce_mean` or `tg.reduce_max` whose input an
      elementwise group computes that nothing else reads takes that group
      in; the kernel computes the prologue while it reduces and never
      stores it. An elementwise epilogue on the reduced result joins as for
      a GEMM. Only reductions that are one loop nest (reduced dims adjacent
      once size-1 dims are left out) over floats, and not rows of 8192
      elements or more, which the runtime splits over threads.
    - **The classifier** (`classifier`): a `tg.cross_entropy` and the
      `tg.cross_entropy_grad` of the same logits and labels become one
      kernel where the gradient stood, unless something reads the loss in
      between; the backend computes each row's log-sum-exp once for both,
      reading the logits once instead of twice.

    - **The gradient scale** (target `cuda`): a `tg.mul` of a gradient by
      an f32 scalar (the clip factor, 1 / micro-batches) that only a
      `tg.optimizer_update` reads becomes the update's `grad_scale`
      operand; the update scales each element of the gradient as it reads
      it, and the scaled gradient is never stored.
    - **Multi-tensor updates** (`optimizer`, target `cuda`): updates of one
      kind, hyperparameters, learning rate and step, over gradients of one
      element type, each with its gradient scale or none, become one kernel
      (`multi_tensor_adamw_18`), as apex's and PyTorch's foreach optimizers
      do: one launch updates many parameters. An update joins an open
      multi-tensor kernel it matches (weight decay and no decay make two);
      a read of an update's result before a later update closes the kernel
      the first is in, so the kernel can stand where its last update stood.

    `elementwise` applies the first rule only; `all` (the default) every
    rule.

    **Targets.** The rules are the same; `target` says how far each goes,
    by what the backend prints:
    - `cpu` (the C++ backend): elementwise kernels over one iteration
      space; any elementwise epilogue of a GEMM; reductions.
    - `cuda` (EmitCuda's generated kernels and cuBLASLt): elementwise
      kernels also take data movement (`tg.transpose`, `tg.slice`,
      `tg.slice_grad`, `tg.concat`, views) when only the kernel reads what
      it moves, the kernel then iterating over the moved result and reading
      at remapped indices, and a `tg.iota` only the kernel reads joins at
      any shape; a lone data movement op stays the runtime's tiled
      launcher. GEMM epilogues are cuBLASLt's: a bias add, a tanh GELU, a
      bias add then a tanh GELU (with a GELU, the pre-activation is a second
      result: cuBLASLt stores it for the backward, read or not), and the
      tanh GELU gradient; each gemm kernel names its epilogue
      (`epilogue = #tg<epilogue bias | gelu | bias_gelu | gelu_grad>`),
      which the CUDA backend runs without matching the body again. No
      reduction kernels; the optimizer update rule.

    ```mlir
    // Before
    %s = tg.add %h, %b : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
    %r = tg.relu %s : tensor<32x128xf32>
    %y = tg.matmul %r, %w : tensor<32x128xf32>, tensor<128x10xf32> -> tensor<32x10xf32>
    // After
    %r = tg.kernel elementwise (%h, %b : tensor<32x128xf32>, tensor<128xf32>)
        attributes {name = "fused_add_relu"} {
    ^bb0(%x: tensor<32x128xf32>, %c: tensor<128xf32>):
      %s = tg.add %x, %c : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
      %0 = tg.relu %s : tensor<32x128xf32>
      tg.yield %0 : tensor<32x128xf32>
    } -> tensor<32x128xf32>
    %y = tg.matmul %r, %w : tensor<32x128xf32>, tensor<128x10xf32> -> tensor<32x10xf32>
    ```

    A GEMM epilogue:

    ```mlir
    // Before
    %m = tg.matmul %x, %w : tensor<32x64xf32>, tensor<64x128xf32> -> tensor<32x128xf32>
    %s = tg.add %m, %b : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
    %g = tg.gelu %s : tensor<32x128xf32>
    // After
    %g = tg.kernel gemm (%x, %w, %b : tensor<32x64xf32>, tensor<64x128xf32>, tensor<128xf32>)
        attributes {name = "fused_matmul_add_gelu"} {
    ^bb0(%a: tensor<32x64xf32>, %c: tensor<64x128xf32>, %d: tensor<128xf32>):
      %0 = tg.matmul %a, %c : tensor<32x64xf32>, tensor<64x128xf32> -> tensor<32x128xf32>
      %1 = tg.add %0, %d : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
      %2 = tg.gelu %1 : tensor<32x128xf32>
      tg.yield %2 : tensor<32x128xf32>
    } -> tensor<32x128xf32>
    ```

    A reduction with a prologue and an epilogue:

    ```mlir
    // Before
    %p = tg.mul %dy, %x : tensor<32x128xf32>, tensor<32x128xf32> -> tensor<32x128xf32>
    %s = tg.reduce_sum %p {dims = array<i64: 0>} : tensor<32x128xf32> -> tensor<128xf32>
    %q = tg.mul %s, %k : tensor<128xf32>, tensor<f32> -> tensor<128xf32>
    // After
    %q = tg.kernel reduction (%dy, %x, %k : tensor<32x128xf32>, tensor<32x128xf32>, tensor<f32>)
        attributes {name = "fused_mul_reduce_sum_mul"} {
    ^bb0(%a: tensor<32x128xf32>, %c: tensor<32x128xf32>, %d: tensor<f32>):
      %0 = tg.mul %a, %c : tensor<32x128xf32>, tensor<32x128xf32> -> tensor<32x128xf32>
      %1 = tg.reduce_sum %0 {dims = array<i64: 0>} : tensor<32x128xf32> -> tensor<128xf32>
      %2 = tg.mul %1, %d : tensor<128xf32>, tensor<f32> -> tensor<128xf32>
      tg.yield %2 : tensor<128xf32>
    } -> tensor<128xf32>
    ```

    The CPU backend prints an elementwise kernel as one OpenMP loop that
    keeps its intermediates in registers; a gemm kernel as its GEMM call
    into the result and one loop applying the epilogue in place; a
    reduction kernel as one loop nest, with the same float operations in
    the same order as the unfused ops. The CUDA backend prints an
    elementwise kernel as one generated kernel computing every result at
    each index, a gemm kernel as one cuBLASLt matmul with its epilogue, a
    classifier kernel as one fused_classifier call and an optimizer kernel
    as one runtime call over a table of its updates (tensors, gradients,
    state, scales), which packs 48 of them into each launch.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
  let options = [
    Option<"fusion", "fusion", "::mlir::tg::FusionRules",
           "::mlir::tg::FusionRules::All", "Which rules apply",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tg::FusionRules::None, "none", "no kernels"),
             clEnumValN(::mlir::tg::FusionRules::Elementwise, "elementwise",
                        "elementwise kernels only"),
             clEnumValN(::mlir::tg::FusionRules::All, "all",
                        "every rule of the target"))}]>,
    Option<"target", "target", "::mlir::tg::FusionTarget",
           "::mlir::tg::FusionTarget::Cpu", "Whose kernels",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tg::FusionTarget::Cpu, "cpu",
                        "the C++ backend's"),
             clEnumValN(::mlir::tg::FusionTarget::Cuda, "cuda",
                        "EmitCuda's generated kernels and cuBLASLt"))}]>,
  ];
  let statistics = [
    Statistic<"numKernels", "kernels", "Kernels formed">,
    Statistic<"numElementwiseKernels", "elementwise-kernels",
              "Elementwise kernels formed">,
    Statistic<"numGemmKernels", "gemm-kernels",
              "GEMM kernels (with their epilogue) formed">,
    Statistic<"numReductionKernels", "reduction-kernels",
              "Reduction kernels (with prologue or epilogue) formed">,
    Statistic<"numClassifierKernels", "classifier-kernels",
              "Classifier kernels (cross-entropy with its gradient) formed">,
    Statistic<"numOptimizerKernels", "optimizer-kernels",
              "Multi-tensor optimizer kernels formed">,
    Statistic<"numGradientScales", "gradient-scales",
              "Gradient scales folded into their updates">,
    Statistic<"numFusedOps", "fused-ops", "Ops moved into kernels">,
  ];
}

#endif // TG_PASSES_FUSION_TD
