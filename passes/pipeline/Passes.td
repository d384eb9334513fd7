//===- Passes.td - Pipeline parallelism passes -------------*- tablegen -*-===//

#ifndef TG_PASSES_PIPELINE_TD
#define TG_PASSES_PIPELINE_TD

include "mlir/Pass/PassBase.td"

def PipelineSplitPass : Pass<"tg-pipeline-split", "ModuleOp"> {
  let summary = "Cuts the step into pipeline chunks: F, B and W per chunk";
  let description = [{
    For a module with `tg.pipeline = {stages = P, virtual_stages = V}`,
    cuts `@forward_backward` into P x V chunks of consecutive layers (the
    model file's repeated names, h.0.*, h.1.*, ...; chunk c runs on stage
    c mod P; the embeddings go with the first chunk, the final norm, the
    head and the loss with the last) and gives each chunk three functions.
    The cuts are the model file's where it pins them
    (`training.pipeline_cuts`: the first layer of each chunk after the
    first), else those that make the slowest chunk fastest by the cost
    model's time of each layer's ops in @train_step on `cluster` (so the
    chunks with the embeddings and the head get fewer layers where those
    weigh).

    - `@chunkC_forward` (F): its forward ops;
    - `@chunkC_backward` (B): the backward ops that an earlier chunk needs,
      the gradients of its inputs;
    - `@chunkC_weight` (W): the rest of its backward ops, which lead only to
      its parameters' gradients (`tg.grad = "name"` results, added to the
      step's sums).

    The B/W split comes from the graph tg-autodiff built: no op is computed
    twice. A value one function computes and another reads becomes a slot
    (`tg.slot = N` on the result and the argument), a buffer per
    micro-batch. The module's `tg.pipeline_transfers` lists, for each
    boundary between chunks c and c + 1, the slots it moves forward (after
    F of chunk c) and backward (after B of chunk c + 1), relaying values
    that skip chunks.

    A parameter used on several stages (GPT-2's `wte`, in the embedding and
    the tied head) keeps a gradient part on each: the stages add them once a
    step. `@apply_gradients` (built by tg-optimizer for pipelined modules)
    becomes one `@stageS_update` per stage over the parameters it holds: the
    tied gradients summed over the `pp` axis, the gradient norm as the
    square root of the stages' summed squares (each parameter counted on the
    first stage that holds it), then the same clipping, schedule and
    updates.

    On a mesh (`pp x dp x tp`) each stage is a copy of the mesh the step was
    sharded and partitioned on: the pass prepends the axis `pp` to it
    (`tg.mesh @mesh ["pp" = P, "data" = 2, "tp" = 2]`, or `["pp" = P]`
    without one), so the stages are the outermost coordinate, as
    Megatron-LM orders its ranks. The chunks keep the step's collectives
    over the other axes (tp's all-reduces, zero3's gathers, which a chunk
    reading a parameter repeats in its backward; the loss reduced over the
    data axes goes with the last chunk's forward); a reduction bundling
    several gradients is cut into one per gradient, each with its chunk.
    Where @forward_backward reduces a gradient over a data axis after
    summing its parts (zero2's and zero3's reduce-scatter), each chunk
    reduces its own part, so a tied weight keeps a part, and its copy, on
    each stage that reads it. A chain of casts, gathers and slices of an
    argument (zero3 under bf16 gathers a parameter's bf16 copy) is made
    again in each function that reads it.
    The gradient sums stay as @forward_backward returns them (partial over
    the data axes, as tg-partition made @apply_gradients reduce them).
    Where @apply_gradients reduces a sum over a mesh axis before anything
    else reads it (scalings by the step's scalars, then an all-reduce or a
    reduce-scatter: dp, zero1, megatron) and one chunk on each stage
    holding the parameter adds to it, that chunk's `@chunkC_reduce`
    (`{kind = "reduce", chunk = c}`) does the reduction: its all-reduces of
    one kind and axis as one, its results `tg.reduced = "name"` written
    where the sum was, and @stageS_update reads them (`tg.reduced`
    arguments) instead of reducing. tg-pipeline-schedule runs it right
    after the chunk's last W, so the reduction of one chunk's gradients
    runs while the stage would wait for another chunk's backward. A tied
    weight's parts are reduced so on each stage, then summed over pp in
    the update (the sums and scalings are linear).

    A module planned with stages after tg-optimizer ran (no
    `@apply_gradients`: tg IR given --pipeline-stages to price it) is left
    as it is; the reports price it and tgc refuses to build it.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect", "::mlir::func::FuncDialect"];
  let options = [
    Option<"cluster", "cluster", "std::string", "\"cpu-local\"",
           "The cluster whose cost model times the layers">,
  ];
  let statistics = [
    Statistic<"numChunks", "chunks", "Chunks built">,
    Statistic<"numSlots", "slots", "Values moved between functions">,
  ];
}

def PipelineSchedulePass : Pass<"tg-pipeline-schedule", "ModuleOp"> {
  let summary = "Writes each stage's actions for a pipeline schedule";
  let description = [{
    After tg-pipeline-split: each stage's ordered list of actions for one
    step, as `tg.pipeline_actions` on the module (an array per stage of
    "F3", "send-F3", "recv-B3", "B3", "W3", "BW3" ... with "@c" for the
    chunk where a stage holds several) and the schedule's name in
    `tg.pipeline`. The micro-batches are those @train_step was built for
    (`tg.micro_batches`, the training table's grad_accum).

    - `gpipe`: every forward, then every backward (holds all M
      micro-batches' activations);
    - `1f1b`: one forward one backward after P - s warm-up forwards on
      stage s (holds at most P);
    - `interleaved`: Megatron-LM's with V chunks per stage (M a multiple of
      P);
    - `zb-h1`: 1F1B with B and W apart, the W passes deferred into the
      bubble at 1F1B's memory (Qi et al., ICLR 2024), placed by playing the
      step on the cost model's times of each chunk's F, B and W functions;
    - `auto`: whichever of 1F1B and ZB-H1 (interleaved when V > 1) the cost
      model plays fastest.

    Each chunk with a `@chunkC_reduce` (tg-pipeline-split) gets its
    "reduce" action (or "reduce@c") right after its last W or BW and the
    send of that backward's gradients: its gradient sums are reduced over
    the data axes once a step, as soon as they are whole.

    Every list is checked by playing it: an order that deadlocks, reads an
    activation or gradient before it exists, or reduces a chunk's gradient
    sums before its last W, is an error.

    With the list, how each stage keeps its slots (`tg.pipeline_buffers`:
    per stage, each micro-batch's buffer of each slot, the buffers per
    slot, after which action each receive can be posted and which actions
    wait for the sends in flight): a slot's micro-batches share buffers
    where their uses, first action to last, do not overlap, the fewest the
    list allows. 1F1B's first stage thus holds P micro-batches'
    activations, GPipe's all M. The executable allocates these buffers and
    `tgc --report=memory` counts them.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
  let options = [
    Option<"schedule", "schedule", "::mlir::tg::pipeline::ScheduleChoice",
           "::mlir::tg::pipeline::ScheduleChoice::Auto", "The schedule",
           [{::llvm::cl::values(
             clEnumValN(::mlir::tg::pipeline::ScheduleChoice::GPipe, "gpipe",
                        "every forward, then every backward"),
             clEnumValN(::mlir::tg::pipeline::ScheduleChoice::OneFOneB,
                        "1f1b", "one forward one backward"),
             clEnumValN(::mlir::tg::pipeline::ScheduleChoice::Interleaved,
                        "interleaved", "Megatron-LM's, V chunks a stage"),
             clEnumValN(::mlir::tg::pipeline::ScheduleChoice::ZeroBubbleH1,
                        "zb-h1", "1F1B with W passes deferred into the bubble"),
             clEnumValN(::mlir::tg::pipeline::ScheduleChoice::Auto, "auto",
                        "the fastest that suits"))}]>,
    Option<"cluster", "cluster", "std::string", "\"cpu-local\"",
           "The cluster whose cost model times the chunks (zb-h1, auto)">,
  ];
}

#endif // TG_PASSES_PIPELINE_TD
