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
    step function after the optimizer phase (tgc: after tg-partition),
    before tg-pipeline-split, whose chunks inherit the choice (a chunk's
    backward recomputes, its stage does not keep), and before tg-fuse.
    Functions without a forward and a backward (a pipeline's chunk
    functions) are left as they are.

    The forward pass is everything up to the last op whose result the
    function returns as a model output (`tg.output`) or as the loss
    (`tg.metric = "loss"`), or up to what the collective that returns it
    reads (a sharded step sums its loss at its end); the rest is the
    backward. A copy stands right
    before the first backward op that reads it (or reads a copy that needs
    it); every backward reader of the value reads the copy, so the
    forward's result dies after its last forward reader. Policies
    (`remat`):
    - `none` (the default): nothing changes.
    - `selective`, as Megatron-LM's selective recomputation: a cheap op
      whose large result the backward reads (an elementwise op such as the
      GELU, `tg.layer_norm`, `tg.dropout`) runs again, where that keeps no
      other value alive longer: each operand is an argument, a constant,
      or read again at or after the copy anyway (the GELU's input is, by
      the GELU gradient; the layer norm's input is, by its gradient).
    - `full`, as Megatron-LM's full recomputation: each layer keeps only
      its input; everything a layer computes that the backward reads runs
      again. Layers are the ops' `tg.layer` (the importer's: the model
      file's node names up to their first numeric component, `h.0` for
      `h.0.attn.q`; a gradient's ops are their forward op's); ops outside
      layers keep
      their results. On a sharded step a layer's collectives run again
      too (every process makes the same copies in the same order), as in
      Megatron-LM; under the other policies collectives are kept.
    - `auto`: the least added FLOPs that keeps at most `activation-budget`
      bytes from the forward to the backward (tgc's `--memory-budget`
      searches this budget until the planned peak fits). The problem: each
      value the backward reads is kept or computed again, each op run
      again needs its operands, kept or run again in turn; an op runs
      again at most once; what leaves a layer is kept, so each layer's
      choice is its own (and what a layer recomputes lives only through
      its backward). `solver`: `exact` solves it as an integer program
      with COIN-OR CBC (the `cbc` program): each distinct layer's frontier
      (the least FLOPs for each number of bytes kept) once, the layers'
      frontiers then combined for the budget; `min-cut` finds, for a price
      per kept byte, the optimum as a minimum cut, each distinct layer's
      frontier as the choices of all prices, combines them the same way,
      then improves the choice by local moves; `auto` (the default) runs
      CBC on a graph without layers of at most 1000 forward ops when `cbc`
      is installed, the min-cut otherwise.

    FLOPs are tg::flopCount's (2*M*N*K per matmul, attention exactly,
    elementwise ops one per element). Recomputation repeats the same
    arithmetic on the same inputs (a dropout mask is a function of seed,
    step and element), so the step computes the same values, bit for bit.
    The function gets a `tg.remat` dictionary: policy, solver, bytes kept
    before and after, FLOPs added and of the whole step, solve time and the
    ops recomputed, which `tgc --report=memory` prints.

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
    Option<"policy", "remat", "::mlir::tg::RematPolicy",
           "::mlir::tg::RematPolicy::None", "What to recompute",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tg::RematPolicy::None, "none", "nothing"),
             clEnumValN(::mlir::tg::RematPolicy::Selective, "selective",
                        "attention's cheap intermediates (Megatron-LM's)"),
             clEnumValN(::mlir::tg::RematPolicy::Full, "full",
                        "each layer from its input"),
             clEnumValN(::mlir::tg::RematPolicy::Auto, "auto",
                        "the least FLOPs under activation-budget"))}]>,
    Option<"activationBudget", "activation-budget", "int64_t", "-1",
           "remat=auto: at most this many bytes kept from the forward for "
           "the backward">,
    Option<"solver", "solver", "::mlir::tg::RematSolver",
           "::mlir::tg::RematSolver::Auto", "remat=auto's solver",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tg::RematSolver::Auto, "auto",
                        "CBC for a small graph without layers when "
                        "installed, else min-cut"),
             clEnumValN(::mlir::tg::RematSolver::Exact, "exact", "CBC"),
             clEnumValN(::mlir::tg::RematSolver::MinCut, "min-cut",
                        "a min cut per price"))}]>,
  ];
  let statistics = [
    Statistic<"numRecomputed", "recomputed-ops",
              "Forward ops computed again for the backward pass">,
    Statistic<"bytesFreed", "bytes-no-longer-kept",
              "Bytes of forward results no longer kept for the backward">,
  ];
}

#endif // TG_PASSES_REMAT_TD
