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

    Reductions with their prologue and epilogue, GEMM epilogues, the
    classifier and multi-tensor optimizer updates are the rules to come;
    `all` means every rule this pass has.

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

    The CPU backend prints an elementwise kernel as one OpenMP loop that
    keeps its intermediates in registers. The CUDA backend still groups ops
    itself and runs this pass with `fusion=none` until it prints tg.kernel.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
  let options = [
    Option<"fusion", "fusion", "std::string", "\"all\"",
           "Which rules apply: none, elementwise or all">,
  ];
  let statistics = [
    Statistic<"numKernels", "kernels", "Kernels formed">,
    Statistic<"numFusedOps", "fused-ops", "Ops moved into kernels">,
  ];
}

#endif // TG_PASSES_FUSION_TD
