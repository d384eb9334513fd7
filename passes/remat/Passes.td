//===- Passes.td - Remat passes ----------------------------*- tablegen -*-===//

#ifndef TG_PASSES_REMAT_TD
#define TG_PASSES_REMAT_TD

include "mlir/Pass/PassBase.td"

def RematPass : Pass<"tg-remat", "func::FuncOp"> {
  let summary = "Recomputes cheap forward values in the backward pass";
  let description = [{
    Activations the backward pass reads are kept from the forward pass to
    the backward, and dominate training memory; recomputing some of them
    where the backward reads them trades FLOPs for memory. Runs on each
    step function after the optimizer phase, before tg-fuse.

    The forward pass is everything up to the last op whose result the
    function returns as a model output (`tg.output`) or as the loss
    (`tg.metric = "loss"`); the rest is the backward. Policies (`remat`):
    - `none` (the default): nothing changes.
    - `selective`, as Megatron-LM's selective recomputation: a cheap op
      whose large result the backward reads (an elementwise op such as the
      GELU, or `tg.layer_norm`) is computed again right before its first
      backward reader, which, with every later backward reader, reads the
      copy; the forward's result then dies after its last forward reader.
      Only where recomputing keeps no other value alive longer: each
      operand is an argument, a constant, or read again at or after the
      copy anyway (the GELU's input is, by the GELU gradient; the layer
      norm's input is, by its gradient). Random ops are not recomputed.

    Recomputation repeats the same arithmetic on the same inputs, so the
    step computes the same values, bit for bit. `tgc --report=memory`
    shows the peak that results.

    ```mlir
    // Before
    %a = tg.gelu %h : tensor<32x512xf32>
    %y = tg.matmul %a, %w : ...
    %l = tg.cross_entropy ...                 // the last forward op
    ...
    %dw = tg.matmul %a, %dy {transpose_lhs} : ...
    %dh = tg.gelu_grad %da, %h : tensor<32x512xf32>
    // After (remat=selective)
    %a = tg.gelu %h : tensor<32x512xf32>
    %y = tg.matmul %a, %w : ...
    %l = tg.cross_entropy ...
    ...
    %a1 = tg.gelu %h : tensor<32x512xf32>
    %dw = tg.matmul %a1, %dy {transpose_lhs} : ...
    %dh = tg.gelu_grad %da, %h : tensor<32x512xf32>
    ```
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
  let options = [
    Option<"policy", "remat", "std::string", "\"none\"",
           "What to recompute: none or selective">,
  ];
  let statistics = [
    Statistic<"numRecomputed", "recomputed-ops",
              "Forward ops computed again for the backward pass">,
    Statistic<"bytesFreed", "bytes-no-longer-kept",
              "Bytes of forward results no longer kept for the backward">,
  ];
}

#endif // TG_PASSES_REMAT_TD
