//===- Passes.td - Sharding passes -------------------------*- tablegen -*-===//

#ifndef TG_PASSES_SHARDING_TD
#define TG_PASSES_SHARDING_TD

include "mlir/Pass/PassBase.td"

def PropagateShardingPass : Pass<"tg-propagate-sharding", "ModuleOp"> {
  let summary = "Gives every value of the step functions a sharding";
  let description = [{
    Runs after tg-optimizer, on a module with a `tg.mesh` (without one it
    does nothing: the module runs on one process). Three sources, in order
    of precedence, each recorded in `tg.sharding_origin`:

    1. Pins: a `tg.sharding` the argument already has (from the model file)
       and every `tg.sharding_constraint`.
    2. The preset (`preset`), for the arguments without a pin:
       - the batch inputs are split along their `batch` dim over the data
         axes (the mesh axes named `data` or `dp`), under every preset;
       - `dp`: parameters and optimizer state whole on every process;
       - `zero1`: optimizer state split over the data axes (its first dim
         that divides), each gradient reduced whole (a
         `tg.sharding_constraint` before the update) and each process
         updating its piece;
       - `zero2`: as zero1, but each gradient reduced to the piece its
         process updates (tg.reduce_scatter);
       - `zero3`: as zero2, with the parameters split too, gathered where
         they are read;
       - `tp`, Megatron-LM's tensor parallelism over the axis `tp`: a
         matrix a matmul multiplies by is split by its columns where the
         matmul's input is whole along the contraction (column-parallel),
         by its rows where the input is split along it (row-parallel, a
         partial sum reduced once); biases and the rest follow the ops
         that read them, and are whole where nothing splits them;
       - `sp`, tp plus Megatron-LM's sequence parallelism: the
         [batch, seq, ...] product of a row-parallel matmul is pinned split
         along the sequence over `tp` (a tg.reduce_scatter instead of an
         all-reduce), so the norms and residual adds after it run on a
         piece of the sequence, and the next column-parallel matmul gathers
         it (tg.all_gather).
       Optimizer state follows its parameter's pin, plus the ZeRO split.
    3. Propagation, forward through each function: each op's sharding
       follows from its operands' through its ShardingRuleOpInterface (the
       first operand that splits a factor decides it; a factor's axes are
       used once). Parameters split over axes other than the data axes
       decide first (a tensor-parallel weight keeps its split), then the
       values the op computes on, then the other parameters (one split for
       memory, ZeRO-3, is gathered). Gradient accumulators (`tg.accum`) take the sharding of
       the gradients added to them; results get the sharding the function
       must return (resultTarget).

    ```mlir
    // --mesh=data=2, preset zero3
    func.func @train_step(%w: tensor<64x128xf32> {tg.param = "fc1.weight",
        tg.sharding = #tg.sharding<@mesh, [{"data"}, {} ]>,
        tg.sharding_origin = "preset zero3"}, %x: tensor<32x64xf32> {...,
        tg.sharding = #tg.sharding<@mesh, [{"data"}, {} ]>,
        tg.sharding_origin = "preset zero3: the batch"}, ...) {
      %h = tg.matmul %x, %w {tg.sharding = [#tg.sharding<@mesh, [{"data"}, {} ]>],
                             tg.sharding_origin = ["tg.matmul from x"]} ...
    ```

    Conflicts are not resolved here but made explicit: an op whose operand
    has another sharding than the op needs gets a reshard in tg-partition,
    named in its `tg.reshard`.
  }];
  let options = [
    Option<"preset", "preset", "std::string", "\"dp\"",
           "dp, zero1, zero2, zero3, tp or sp: the sharding of unpinned arguments">
  ];
  let dependentDialects = ["::mlir::tg::TgDialect"];
}

def PartitionPass : Pass<"tg-partition", "ModuleOp"> {
  let summary = "Rewrites the sharded step functions into per-process programs";
  let description = [{
    Runs after tg-propagate-sharding. Each function's arguments and values
    get the shapes one process holds (each split dim divided by the sizes
    of its axes); each op runs on the pieces its rule allows, and where an
    operand's sharding is not the one the op needs, collectives reshard it
    (tg.reduce_scatter or tg.all_reduce for partial sums, tg.all_gather,
    tg.all_slice), each with a `tg.reshard` that names the value and the
    change. A mean over a split factor is scaled so the pieces sum to it;
    `tg.global_norm` sums its squares over the axes its inputs are split
    on. Results are resharded to what the function returns.

    Data parallelism is this pass and nothing else: with the batch split
    over `data`, the gradients are partial sums over it, and the update
    (which needs them whole) reduces them:

    ```mlir
    // before (global shapes)
    %g = tg.matmul %x, %dy {transpose_lhs = true, tg.sharding = [#tg.sharding<@mesh, [{}, {} ], partial = {"data"}>]}
        : tensor<32x64xf32>, tensor<32x128xf32> -> tensor<64x128xf32>
    %new:3 = tg.optimizer_update adamw %w, %g, ...
    // after, on each of 2 processes
    %g = tg.matmul %x, %dy {transpose_lhs = true} : tensor<16x64xf32>, tensor<16x128xf32> -> tensor<64x128xf32>
    %r = tg.all_reduce %g {mesh_axis = "data", tg.reshard = "tg.matmul: [{}, {} ], partial = {\"data\"} -> [{}, {} ]"} : tensor<64x128xf32>
    %new:3 = tg.optimizer_update adamw %w, %r, ...
    ```

    A value reduced once is reused: `tg.global_norm` reduces each gradient
    to the sharding its update needs, so clipping costs no second
    reduction. Without a `tg.mesh` the pass does nothing.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
}

#endif // TG_PASSES_SHARDING_TD
