//===- Passes.td - Layer passes ----------------------------*- tablegen -*-===//

#ifndef TG_PASSES_LAYERS_TD
#define TG_PASSES_LAYERS_TD

include "mlir/Pass/PassBase.td"

def OutlineLayersPass : Pass<"tg-outline-layers", "ModuleOp"> {
  let summary = "One function per distinct layer body, called once per layer";
  let description = [{
    The last pass before a backend prints a planned step (after
    tg-plan-memory and tg-verify-memory; `tgc --compile-to=layers`). A deep
    model repeats the same layer many times, and an unrolled step hands the
    host compiler as many copies of the same code. This pass decides which
    layers share code, so that the backend prints each distinct body once
    and the compiler's time stops growing with the depth.

    - **Runs.** In each planned function (`tg.arena`), the
      consecutive ops of one layer (their `tg.layer`, a repeated layer
      such as `h.3`; an optimizer update by its parameter's name) form a
      run: a
      layer's forward, its backward (with what tg-remat recomputes) and its
      updates are separate runs. Constants neither belong to nor end a run.
      An op without a `tg.layer` goes with the run it follows when it reads
      that run (the sum of a value's gradients that tg-autodiff adds), else
      with the layer of a parameter's argument it reads (the sum of a
      micro-batch's gradient into its accumulator), else with the one layer
      all its readers work for (the gradient clipping's multiply).
      An op the body could not place ends one: an all-reduce bucket
      (`tg.bucket_span`), the `tg.await` of one, an op with
      attention scratch (`tg.scratch`) or an attention backward that reads
      its forward's, or an op without a `tg.place` (a constant).
    - **Bodies.** A run becomes a candidate function: the values it reads
      from before it are its arguments (in the order first read), the
      constants it reads are copied in, and the values read after it are
      its results. Each result's arena offset becomes a slot of the body's
      offset table (`slot N` in the `#tg.place` of the body's ops, in place
      of the offset; views stay views), so the body says where nothing is:
      the call passes where everything is. The body's ops leave their `tg.layer` to the
      call; their locations keep their node names with the layer written
      as `*` (`h.*.attn.c_attn`).
    - **Sharing.** Two candidates share a body when their IR, printed, is
      the same: the same ops, shapes, attributes (fusion, shardings,
      precision, remat's copies, a dropout's seed), the same data flow and
      the same results. Offsets and weights are not part of it. A run
      whose body no other run has stays inline; a run that differs (the
      first layer's forward reads the embedding's add, a pinned sharding,
      another remat choice) is a variant, compiled once however many runs
      share it. The sharing spans the module, so @forward's layers and
      @train_step's can share when they compute the same.
    - **Calls.** Each run becomes a `func.call` of its body with the run's
      arguments, `tg.slot_offsets` (the arena offset of each slot for this
      layer), and a `tg.place` for its results: the offsets the ops had,
      or `view N` of the argument a result's view chain ends at. The memory plan is unchanged: every buffer stays where
      tg-plan-memory put it, and the ops run in the same order.

    Bodies are `func.func private @layer_body_N` with `tg.layer_body` naming
    the function and layer they were first taken from.

    ```mlir
    // After: layer 1's forward is layer 0's body at other offsets
    func.func private @layer_body_0(%x: tensor<16x64x128xf32>, ...)
        -> (...) attributes {tg.layer_body = "train_step h.0"} {
      %0 = tg.layer_norm %x weight %w bias %b {tg.place = #tg.place<[slot 0]>} ...
      ...
    }
    %12:9 = func.call @layer_body_0(%11, %arg14, ...) {
        tg.place = #tg.place<[...]>, tg.slot_offsets = array<i64: ...>}
        : (...) -> (...)
    ```
  }];
  let dependentDialects = ["::mlir::tg::TgDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"minRepeats", "min-repeats", "unsigned", "2",
           "Outline a body only when at least this many runs share it">,
  ];
}

#endif // TG_PASSES_LAYERS_TD
