//===- Passes.td - Schedule passes -------------------------*- tablegen -*-===//

#ifndef TG_PASSES_SCHEDULE_TD
#define TG_PASSES_SCHEDULE_TD

include "mlir/Pass/PassBase.td"

def SchedulePass : Pass<"tg-schedule", "func::FuncOp"> {
  let summary = "Orders a step's kernels and buckets its gradient all-reduce";
  let description = [{
    Decides when each piece of the step runs, so that the order a backend
    prints, and which collective waits for which gradients, are in the IR
    (`tgc --compile-to=schedule`) rather than inside an emitter. The block
    order of a function is its schedule: a backend launches ops in that
    order, on the compute stream, except the bucketed all-reduces below.

    - **Gradient chains first.** An elementwise op (or elementwise
      tg.kernel) whose results only feed all-reduces, directly or through
      other such ops (the division of accumulated gradients, a loss-scale
      multiply), moves up to just after the op that produces its last
      operand (the bucket's tg.await for a bucket's result) (to the top when it reads arguments only, as the cast of the
      micro-batch count does), so its gradient is ready as early as the
      backward pass allows.
    - **Buckets.** Each tg.all_reduce without a `bucket` is split into
      buckets: its inputs in the order the backward pass produces them,
      cut when a bucket reaches `bucket-bytes` or the element type changes
      (one message holds one type). Each bucket becomes a tg.all_reduce of
      its own with `bucket = N`, placed right after the producer of its last
      gradient, so its communication overlaps the rest of the backward
      pass, as PyTorch DDP's 25 MB buckets do. `bucket-bytes=0` gives each
      gradient its own bucket.
    - **Waits.** A `tg.await` of each bucket goes right before the
      first op that reads its results: there the compute stream waits for
      the communication stream (an event). Ops before it run concurrently
      with the reduction. A bucket nothing reads is awaited before the
      return.

    A CPU backend runs the buckets as blocking MPI calls where they stand
    and prints nothing for a tg.await; a CUDA backend launches each bucket
    on its communication stream and prints an event wait at its tg.await.

    ```mlir
    // Before: one all-reduce after the backward pass
    %gw2 = tg.matmul %h, %d2 {transpose_lhs} : ...
    %gw1 = tg.matmul %x, %d1 {transpose_lhs} : ...
    %g:2 = tg.all_reduce %gw1, %gw2 {reduction = #tg<reduction mean>} : ...
    %n = tg.global_norm %g#0, %g#1 : ...
    // After (bucket-bytes=0): each gradient reduced as soon as it exists
    %gw2 = tg.matmul %h, %d2 {transpose_lhs} : ...
    %r2 = tg.all_reduce %gw2 {bucket = 0 : i64, reduction = #tg<reduction mean>} : ...
    %gw1 = tg.matmul %x, %d1 {transpose_lhs} : ...
    %r1 = tg.all_reduce %gw1 {bucket = 1 : i64, reduction = #tg<reduction mean>} : ...
    tg.await %r2 : ...
    tg.await %r1 : ...
    %n = tg.global_norm %r1, %r2 : ...
    ```
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", "25ll << 20",
           "Close an all-reduce bucket once it holds this many bytes "
           "(0: one gradient per bucket)">,
  ];
  let statistics = [
    Statistic<"numBuckets", "buckets", "All-reduce buckets formed">,
    Statistic<"numHoisted", "hoisted-ops",
              "Gradient-chain ops moved up to their producers">,
  ];
}

#endif // TG_PASSES_SCHEDULE_TD
