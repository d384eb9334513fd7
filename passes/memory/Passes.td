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
    reads its input, `tg.optimizer_update` writes the new parameter and
    state over the old ones. Constants and arguments need no arena.

    Placement is best fit over a list of free blocks that merge as they are
    given back, so the peak stays near the lower bound: the largest number
    of bytes live at once, which no placement can beat.

    The plan is in the IR: on each op `tg.offsets` (per result, the arena
    offset, or -1 for a view or a constant) and, where a result views an
    operand, `tg.views` (per result, the operand it shares, or -1); on the
    function `tg.arena_bytes` (the peak) and `tg.live_bytes` (the bound).

    ```mlir
    // After
    func.func @f(%x: tensor<8x64xf32>, %w: tensor<64x64xf32>) -> tensor<f32>
        attributes {tg.arena_bytes = 4096 : i64, tg.live_bytes = 4096 : i64} {
      %h = tg.matmul %x, %w {tg.offsets = array<i64: 0>} : ...
      %r = tg.reshape %h {tg.offsets = array<i64: -1>, tg.views = array<i64: 0>} : ...
      %l = tg.reduce_sum %r {tg.offsets = array<i64: 2048>} : ...
      return %l : tensor<f32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
  let statistics = [
    Statistic<"numBuffers", "buffers", "Buffers placed in the arena">,
    Statistic<"numViews", "views", "Values that share an operand's buffer">,
  ];
}

def VerifyMemoryPass : Pass<"tg-verify-memory", "func::FuncOp"> {
  let summary = "Checks that no two buffers live at once share arena bytes";
  let description = [{
    Reads the plan tg-plan-memory wrote and fails, naming both ops, when two
    buffers whose lives overlap overlap in the arena, when a buffer ends
    past `tg.arena_bytes`, or when an op that owns memory has no offset. It
    recomputes the lives from the IR, so it also catches a plan that a later
    pass made stale.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
}

#endif // TG_PASSES_MEMORY_TD
