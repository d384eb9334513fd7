//===- Passes.td - Memory passes ---------------------------*- tablegen -*-===//

#ifndef TG_PASSES_MEMORY_TD
#define TG_PASSES_MEMORY_TD

include "mlir/Pass/PassBase.td"

def PlanMemoryPass : Pass<"tg-plan-memory", "func::FuncOp"> {
  let summary = "Places every buffer of a step function in one arena";
  let description = [{
    Gives each value a step function computes (the results of its top-level
    ops, tg.kernel results included) a byte offset in one arena, by
    liveness: a buffer is taken when its op runs and given back after its
    last reader (through any view of it), so two buffers share bytes only
    when their lives do not overlap. Views share their operand's buffer:
    `tg.reshape` and `tg.flatten` always, `tg.all_reduce` when nothing else
    reads its input, `tg.optimizer_update` (and an `optimizer` kernel)
    writes the new parameter and state over the old ones, a `classifier`
    kernel writes the logits' gradient over the logits when nothing else
    reads them. Constants and arguments need no arena.

    Each `tg.all_reduce` is one message: its operands lie side by side in
    one bucket, in operand order, each at a multiple of the alignment (a
    gradient reduced in place is computed there; any other is copied in).
    The bucket is taken when its first gradient is computed and stays
    taken until its `tg.await` (tg-schedule's), since a backend may reduce
    it on another stream until then. With
    `attention-statistics`, each `tg.attention` that has a gradient keeps
    its output and one f32 per query row (the log-sum-exp) for it, as the
    CUDA backend's flash attention does.

    Placement is best fit over a list of free blocks that merge as they are
    given back, and, for steps of up to 1024 buffers, greedy placements in
    four orders (largest, biggest area, longest-lived, last to die first);
    the smallest peak wins, and it stays near the lower bound: the largest
    number of bytes live at once, which no placement can beat.

    The plan is in the IR: on each op but a constant `tg.place`, a
    `#tg.place` with per result either its arena offset or `view N` (it
    shares the bytes of operand N); on each all-reduce `tg.bucket_span` and
    on each attention that keeps statistics `tg.scratch`, a
    `#tg.span<offset, bytes>`; on the function `tg.arena`, a `#tg.arena` of
    the peak (`bytes`), the bound (`live`) and the `alignment`. The dialect
    checks each offset against it (aligned, and inside the arena) and each
    view against its operand (which holds the result's bytes).

    ```mlir
    // After
    func.func @f(%x: tensor<8x64xf32>, %w: tensor<64x64xf32>) -> tensor<f32>
        attributes {tg.arena = #tg.arena<bytes = 4096, live = 4096, alignment = 64>} {
      %h = tg.matmul %x, %w {tg.place = #tg.place<[0]>} : ...
      %r = tg.reshape %h {tg.place = #tg.place<[view 0]>} : ...
      %l = tg.reduce_sum %r {tg.place = #tg.place<[2048]>} : ...
      return %l : tensor<f32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
  let options = [
    Option<"alignment", "alignment", "int64_t", "64",
           "Offsets and sizes are multiples of this many bytes (a power of "
           "two: 64 for the C++ backend, 256 for CUDA)">,
    Option<"attentionStatistics", "attention-statistics", "bool", "false",
           "Each tg.attention with a gradient keeps its output and its "
           "rows' log-sum-exp until the gradient (the CUDA backend)">,
  ];
  let statistics = [
    Statistic<"numBuffers", "buffers", "Values placed in the arena">,
    Statistic<"numViews", "views", "Values that share an operand's buffer">,
    Statistic<"numBuckets", "buckets", "All-reduce buckets laid out">,
  ];
}

def PlaceConstantsPass : Pass<"tg-place-constants", "ModuleOp"> {
  let summary = "Places the constants a backend reads from memory in one section";
  let description = [{
    Most constants of a step are literals in the code a backend prints: a
    one-value constant an elementwise op or kernel reads, a classifier
    kernel's unit gradient seed. Every other constant (a table a GEMM or a
    layer body reads, a seed that is not one, a constant a function returns)
    is read from memory, and this pass gives each such `tg.constant` an
    offset in one section of the module, which a backend fills once when it
    starts: `tg.constant_offset` on the constant, and on the module
    `tg.constants`, a `#tg.constants` of the section's size and alignment.
    The dialect checks each offset against it: aligned, inside, apart from
    every other. Which reads are literals is the dialect's rule
    (`readsConstantFromMemory`), which the CUDA emitter follows.

    Constants are laid out in module order, each at a multiple of
    `alignment`, for the functions the backend runs: the layer bodies, and
    the pipeline's functions in a pipelined module (the unpipelined step
    functions stay in the module but are not run), every function
    otherwise. It runs last (after tg-outline-layers, which copies
    constants into the bodies), for the CUDA target, whose constants live
    in device memory; the C++ backend prints them as arrays.

    ```mlir
    // After
    module attributes {tg.constants = #tg.constants<bytes = 256, alignment = 256>} {
      func.func @train_step(...) {
        %seed = tg.constant {tg.constant_offset = 0 : i64} dense<5.000000e-01> : tensor<f32>
        %one = tg.constant dense<1.000000e+00> : tensor<f32>  // a literal
        ...
    ```
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
  let options = [
    Option<"alignment", "alignment", "int64_t", "256",
           "Offsets are multiples of this many bytes, and each constant "
           "takes a multiple of it (a power of two)">,
  ];
  let statistics = [
    Statistic<"numPlaced", "placed", "Constants read from memory">,
  ];
}

def VerifyMemoryPass : Pass<"tg-verify-memory", "func::FuncOp"> {
  let summary = "Checks that no two buffers live at once share arena bytes";
  let description = [{
    Reads the plan tg-plan-memory wrote and fails, naming both ops, when two
    buffers whose lives overlap overlap in the arena, when a buffer (with
    its padding) ends past the arena, when an op that owns memory has no offset, or
    when a bucket's gradients do not lie side by side in its span. It
    recomputes the lives from the IR, so it also catches a plan that a later
    pass made stale.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
}

#endif // TG_PASSES_MEMORY_TD
