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
    forward's result dies after its last forward reader. Each copy is
    marked `tg.recompute`, so that no later `cse` (tgc's, on this IR read
    back) merges it into the op it copies. Policies
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
    - `auto` with `peak-budget` instead: the least added FLOPs whose
      planned peak is at most `peak-budget` bytes. The bytes kept are not
      the peak: a value recomputed where the backward starts (GPT-2's
      logits, read first by the loss's gradient) lives beside the
      gradients that peak there and saves nothing, and the copies live
      through their layer's backward. So each choice is judged by the peak
      it plans to: the function is copied, the copies are made in it, and
      it is planned as tgc plans it next: tg-fuse (`fusion`, `target`),
      tg-schedule (`bucket-bytes`), tg-plan-memory (`alignment`,
      `attention-statistics`); tgc passes its own settings. A pipeline's
      stages are planned after tg-pipeline-split, which this does not
      model (tgc budgets them by the bytes kept). With at most 10 moves
      (`solver=auto`) or 12 (`solver=exact`, an error beyond) every
      choice is planned, a move being an op that may run again, the same
      op of every layer that is the same problem taken together: the
      optimum by peak among choices alike in every layer. Otherwise
      (`solver=min-cut` always; also beside it under `auto` where layers
      are, keeping the better) the search, whose moves are each op of each
      layer, so that layers may choose differently: the min-cut's choices
      for bytes kept from the least to all of them, bisection where the
      peak starts to fit; where none fits, moves added one at a time by
      the peak they save per FLOP; then a repair that stops recomputing
      each move (the costliest first) whose copy does not keep the peak
      within the budget. A budget below every peak it finds is an error
      that states the smallest and what it adds, unless
      `least-peak-over-budget` takes that choice instead. Under `auto`,
      `tg.remat` counts the `layers` and the `distinct_layers` (those that
      are different problems; equal layers share one frontier).

    FLOPs are tg::flopCount's (2*M*N*K per matmul, attention exactly,
    elementwise ops one per element). Recomputation repeats the same
    arithmetic on the same inputs (a dropout mask is a function of seed,
    step and element), so the step computes the same values, bit for bit.
    The function gets a `tg.remat` dictionary: policy, solver, bytes kept
    before and after, FLOPs added and of the whole step, solve time and the
    ops recomputed (under `peak-budget` also the objective, the budget, the
    planned peak before and after, whether it fits and how many choices
    were planned), which `tgc --report=memory` prints.

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
    Option<"peakBudget", "peak-budget", "int64_t", "-1",
           "remat=auto: the step's planned peak must fit this many bytes "
           "(instead of activation-budget)">,
    Option<"leastPeakOverBudget", "least-peak-over-budget", "bool", "false",
           "peak-budget: when no choice fits, take the one with the "
           "smallest peak (recorded with fits = false) instead of failing">,
    Option<"fusion", "fusion", "::mlir::tg::FusionRules",
           "::mlir::tg::FusionRules::None",
           "peak-budget: tg-fuse's rules after tg-remat",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tg::FusionRules::None, "none", "no kernels"),
             clEnumValN(::mlir::tg::FusionRules::Elementwise, "elementwise",
                        "elementwise chains"),
             clEnumValN(::mlir::tg::FusionRules::All, "all", "every rule"))}]>,
    Option<"target", "target", "::mlir::tg::FusionTarget",
           "::mlir::tg::FusionTarget::Cpu",
           "peak-budget: tg-fuse's target after tg-remat",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tg::FusionTarget::Cpu, "cpu", "the C++ backend"),
             clEnumValN(::mlir::tg::FusionTarget::Cuda, "cuda",
                        "the CUDA backend"))}]>,
    Option<"bucketBytes", "bucket-bytes", "int64_t", "26214400",
           "peak-budget: tg-schedule's all-reduce bucket size">,
    Option<"alignment", "alignment", "int64_t", "64",
           "peak-budget: the arena alignment tg-plan-memory plans with">,
    Option<"attentionStatistics", "attention-statistics", "bool", "false",
           "peak-budget: each tg.attention keeps statistics for its "
           "gradient, as tg-plan-memory is told (the CUDA backend)">,
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
