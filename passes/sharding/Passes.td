//===- Passes.td - Sharding passes -------------------------*- tablegen -*-===//

#ifndef TG_PASSES_SHARDING_TD
#define TG_PASSES_SHARDING_TD

include "mlir/Pass/PassBase.td"

def SplitFusedProjectionsPass
    : Pass<"tg-split-fused-projections", "ModuleOp"> {
  let summary = "Computes each block of a fused projection from its own view "
                "of the weight, so that tensor parallelism can split heads";
  let description = [{
    Runs on @forward before tg-autodiff, when the module's mesh has a `tp`
    axis, on the weights whose preset (their own `tg.shard`, else
    `preset`) is tp, sp or megatron; otherwise it does nothing. tgc runs
    it for every plan, tg-auto-shard's as for tp, so that the solver may
    choose head-parallel attention (see compiler/pipeline/Pipeline.cpp).

    A fused projection is a matmul by a parameter `W` (plus, optionally, a
    parameter bias `b`) whose output is read only by slices that tile its
    last dim into n >= 2 equal blocks: GPT-2's `c_attn`, `W` [C, 3C], whose
    q, k and v are the three C-wide slices. No contiguous split of [C, 3C]
    gives each process the same heads of q, k and v, so tensor parallelism
    would have to gather the projection. This pass holds `W` as the
    row-major view [C, 3, C] (`b` as [3, C]) and computes block j as
    `x @ W[:, j, :] + b[j, :]`; splitting the view's last dim is then
    head-parallel attention. Same elements in the same order: the
    checkpoints keep the shape [C, 3C], which `tg.file_shape` on the
    argument records. A transposed `W` [3C, C] is held as [3, C, C].

    ```mlir
    // Before: %qkv = tg.matmul %x, %w : ..., tensor<128x384xf32> -> ...
    //         %q = tg.slice %qkv {start = [0, 0, 0], limit = [8, 64, 128]}
    // After:
    func.func @forward(%w: tensor<128x3x128xf32> {tg.param = "c_attn.weight",
                                 tg.file_shape = array<i64: 128, 384>}, ...)
      %wq = tg.slice %w {start = [0, 0, 0], limit = [128, 1, 128]}
      %wq2 = tg.reshape %wq : tensor<128x1x128xf32> -> tensor<128x128xf32>
      %q = tg.matmul %x, %wq2 : ...
    ```
  }];
  let options = [
    Option<"preset", "preset", "std::string", "\"tp\"",
           "The sharding preset of the weights without their own tg.shard">,
  ];
}

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
         partial sum reduced once); a table an embedding reads is split
         by its rows (vocabulary-parallel; a tied LM head then splits the
         logits by class); biases and the rest follow the ops that read
         them, and are whole where nothing splits them. A parameter read
         through views (its tg.cast to bf16, the tg.slice and tg.reshape
         of a block of a fused projection, see
         tg-split-fused-projections) takes the split that gives the view
         what its reader needs, and its views follow;
       - `sp`, tp plus Megatron-LM's sequence parallelism: the
         [batch, seq, ...] product of a row-parallel matmul (or of a
         vocabulary-parallel embedding) is pinned split
         along the sequence over `tp` (a tg.reduce_scatter instead of an
         all-reduce), so the norms and residual adds after it run on a
         piece of the sequence, and the next column-parallel matmul gathers
         it (tg.all_gather). Such partial sums that are only added to
         each other (the input gradients of a fused projection's blocks)
         are pinned after their sum, reduce-scattered once;
       - `megatron`, sp plus Megatron-LM's distributed optimizer: the
         optimizer state split over the data axes as zero1's, each
         gradient reduced once per step to the piece its process updates
         (tg.reduce_scatter; the micro-batches' gradients are added
         unreduced), the updated pieces gathered.
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
    change. A whole value pinned as a partial sum over an axis is kept on
    the axis' first process and zero on the others (a tg.select by the
    process's coordinate, found by slicing a tg.iota over the axis; no
    communication). An embedding whose table's rows are split, and a
    cross-entropy (or its gradient) whose classes are, run in Megatron-LM's
    vocabulary-parallel form: out-of-piece ids look up zeros (a partial
    sum), and the softmax gathers the rows' maxima and all-reduces their
    sums of exponentials, one number per row each, so the logits are never
    gathered; the table's gradient, wanted split by rows, is computed for
    each process's rows only. A mean over a split factor is scaled so the
    pieces sum to it; over an elastic axis (tg.mesh's `elastic`, tgc
    --mesh=data=auto) it is divided by the axis' size counted at run time
    (a tg.all_reduce of 1 over it, once per function), and the pass fails
    where anything but an input is split over an elastic axis or a
    collective other than tg.all_reduce crosses it, since those shapes
    would change with the process count. `tg.global_norm` sums its squares
    over the axes its inputs are split on. Results are resharded to what
    the function returns.

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
    reduction. Readers next to each other that need the same value
    resharded the same way share one collective (the blocks of a fused
    projection, tg-split-fused-projections, gathering their input under
    sp); readers further apart reshard again, so no gathered value (a
    ZeRO-3 parameter, an sp activation) lives longer than before. Without a
    `tg.mesh` the pass does nothing.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect"];
}

def AutoShardPass : Pass<"tg-auto-shard", "ModuleOp"> {
  let summary = "Chooses the shardings of the step by cost, as pins";
  let description = [{
    Runs after tg-optimizer and before tg-propagate-sharding, on a module
    with a `tg.mesh` (without one it does nothing). It states the choice of
    shardings for `@train_step` as an optimisation problem and writes the
    solution as pins that tg-propagate-sharding keeps and tg-partition
    carries out:

    - a node per parameter and optimizer state argument (its strategies:
      each way the mesh axes can split its dims; with `zero`, the data axes
      too), and per op (each way the axes can split the factors of its
      ShardingRuleOpInterface, as decideOpSharding runs it; an op without a
      rule, or pinned by a `tg.sharding_constraint`, has one). An op that
      is linear in an operand (or a sum of its operands: add, concat) may
      also take it as a partial sum over axes its factors leave free, where
      some strategy of the operand's producer leaves it so: tensor
      parallelism's backward sums of partial gradients and a weight
      gradient's cast and views into its accumulator are reduced once,
      after them;
    - a node's cost: the op's modelled time on its piece (planning/cost:
      FLOPs and bytes on the cluster's roofline); its memory: the bytes of
      its results on one device, live from the op to its last reader
      (arguments: the whole step);
    - an edge per operand: the modelled time of the collectives that
      reshard the value from its producer's choice to what the reader's
      choice needs (alpha-beta per mesh axis and link level), including
      the all-reduce or reduce-scatter of partial sums; a new parameter or
      state value is resharded to its argument's sharding for the next step
      (ZeRO-1/2's all-gather);
    - the limit: `memory-limit` bytes, else the cluster's device memory;
    - with gradient accumulation (@train_step's `tg.micro_batches`, set by
      tg-optimizer, and a `@forward_backward` for the other micro-batches),
      a step runs the forward and backward ops once per micro-batch and the
      optimizer's once: the first (and the reshardings between them, or
      from a parameter to them) weigh `tg.micro_batches` times, the ops
      that read an accumulator or the optimizer's state once. A gradient
      accumulator (which may also stay a partial sum over the data axes)
      has an edge from the op that computes its gradient: the other
      micro-batches' gradients are resharded into it K - 1 times.

    The solver (planning/shardsolve, also `tg-shard-solve`) returns a
    strategy per node. Besides its own starting points it starts from the
    standard plans (`start-presets`: tg-propagate-sharding's presets, each
    run on a copy of the module and read as strategies of the problem, as
    `price-current` reads them), so its plan is no worse in its model than
    any of them that fits. Its heuristics alone can miss a plan an engineer
    would write down: on GPT-3 6.7B at data=8,tp=2 with 4 pipeline stages
    and 64 micro-batches they ended at 19.4 s, split the MLP's contraction
    over the data axis, where the tp preset prices at 2.0 s in the same
    model. Arguments get `tg.sharding` with origin
    `solver`; an op whose operand the solver wants in another sharding than
    its producer gives it reads it through a `tg.sharding_constraint` (one
    per value and sharding), so decideOpSharding decides what the solver
    chose. `@train_step` gains `tg.auto_shard`: the modelled cost, the
    method and the problem's size.

    ```mlir
    // --mesh=data=2,tp=2, before
    func.func @train_step(%w: tensor<128x512xf32> {tg.param = "fc1.weight"}, ...)
    // after
    func.func @train_step(%w: tensor<128x512xf32> {tg.param = "fc1.weight",
        tg.sharding = #tg.sharding<@mesh, [{}, {"tp"} ]>,
        tg.sharding_origin = "solver"}, ...) attributes {tg.auto_shard = {...}}
    ```

    Repeated layers are solved once (`tie-layers`, on by default): a node
    of layer `STACK.N` (an op whose `tg.layer` is `h.3`, among them its
    backward ops; its parameter `h.3.attn.c_attn.weight` and that one's
    optimizer state) is tied to the node in the same role of layer N-1 (the
    same layer or name with N taken out, the same op, the same place among
    the layer's ops of that kind, the same strategies) by an edge that allows only equal strategies. The solver contracts each chain of ties into one
    node, so its search is over one layer's choices however deep the stack,
    while the memory limit still counts every layer's live ranges. Under a
    tight limit, layers that choose apart may fit where alike ones do not
    (on a 6-layer GPT-2 at 30.5 MB a plan 1.3% slower, the closest seen):
    `tie-layers=false` lets them.

    With `remat=full` (tgc --remat=full) it prices tg-remat's policy,
    which runs after tg-partition: a forward op of a layer whose results
    stay in the layer is run again in the backward pass, so they live only
    until their last forward reader, and the op costs twice. Other remat
    policies are not priced (an error names them).

    On a module with `tg.pipeline = {stages = P, virtual_stages = V}`
    (tgc --pipeline-stages), before tg-pipeline-split cuts the step, it
    plans one
    pipeline stage's device: every cost is a P-th (the stage runs a P-th
    of the layers), the forward and backward ops weigh as many
    micro-batches as the `schedule` option's play of the pipeline takes,
    every chunk's F, B and W alike (K + (P - 1) / V under 1F1B and
    interleaving, K + (P - 1) / 3 under ZB-H1: the bubble; `auto`, tgc's
    default, plays the one tg-pipeline-schedule would choose on such
    costs), and the activations that cross
    from one chunk of layers to the next (the residual stream, as its
    sharding leaves it) cost the sends, 2 (P V - 1) + 2 V K of them a step.
    Memory is the first stage's device's, with the layers placed as the
    compiled step's estimate places them (P x V consecutive chunks, chunk
    c on stage c mod P; what comes before the first layer on the first):
    its layers' parameters, state, accumulators and values (the other
    stages' count nothing), where what the forward pass keeps for the
    backward and computes from the batch counts once per micro-batch in
    flight (playPipeline), and what the weights alone give (their bf16
    casts) once. Without named layers, a P-th of every parameter and of
    everything kept for the backward (times the micro-batches in flight
    for activations). This is the solver's proxy: tgc prices each
    compiled plan as built (the split's chunk functions under the
    schedule's action lists, each stage's memory as --report=memory
    plans it), which also counts the gradient sums, the slots' transfer
    buffers and the update's arena that this count leaves out.

    To see why the solver prefers its plan to another, `price-current`
    prices the shardings a module already has (a preset's, after
    tg-propagate-sharding) in the same problem, without solving, and
    `breakdown=FILE` writes either plan's cost by role (op and model-file
    name, the layer index taken out), in nanoseconds:

    ```sh
    tgc model.json --mesh=data=2,tp=2 --shard=tp --compile-to=optimizer \
        --mlir-print-debuginfo -o step.mlir
    tg-opt step.mlir --tg-auto-shard="breakdown=solver.tsv"
    tg-opt step.mlir --tg-propagate-sharding=preset=tp \
        --tg-auto-shard="price-current=true breakdown=tp.tsv"
    ```

    (`--mlir-print-debuginfo` keeps the model file's names, which the
    breakdown's roles read; the repeated layers are tied by the ops'
    `tg.layer` with or without them.)

    Not modelled yet: overlap of collectives with compute, the memory
    planner's reuse of buffers (live ranges are the ops' order), and the
    partitioner's reuse of a partial sum reduced once for several readers
    (each reader's edge pays).
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", "\"cpu-local\"",
           "The cluster spec: a name in planning/cost/clusters or a JSON file">,
    Option<"memoryLimit", "memory-limit", "int64_t", "0",
           "Bytes one device may hold (0: the cluster's device memory)">,
    Option<"allowStrategies", "allow-strategies", "std::string", "\"dp,zero,tp\"",
           "What the solver may choose: dp (the batch over the data axes, always), zero (state, gradients and parameters split over the data axes), tp (the other axes split weights and activations)">,
    Option<"seed", "seed", "uint64_t", "0", "The solver's seed">,
    Option<"timeLimit", "time-limit", "double", "10",
           "Seconds the solver may search">,
    Option<"cbc", "cbc", "std::string", "\"cbc\"",
           "The CBC program the solver runs (a name on PATH or a path; one "
           "that is missing or fails is warned about, and the plan searched "
           "without it)">,
    Option<"dumpProblem", "dump-problem", "std::string", "\"\"",
           "Also write the problem in the IOPDDL format to this file (for tg-shard-solve)">,
    Option<"remat", "remat", "std::string", "\"none\"",
           "The recomputation tg-remat will apply: none, or full (a layer's activations recomputed in the backward pass, not kept)">,
    Option<"schedule", "schedule", "::mlir::tg::pipeline::ScheduleChoice",
           "::mlir::tg::pipeline::ScheduleChoice::Auto",
           "With pipeline stages: the schedule whose bubble and held "
           "micro-batches the plan is priced by (gpipe, 1f1b, interleaved, "
           "zb-h1, or auto: the fastest that suits, as "
           "tg-pipeline-schedule chooses)",
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
    Option<"tieLayers", "tie-layers", "bool", "true",
           "Repeated layers choose alike: each node of layer N is tied to the node in the same role of layer N-1, so the solver plans one layer for the stack">,
    Option<"priceCurrent", "price-current", "bool", "false",
           "Solve nothing: price the shardings the step already has (as tg-propagate-sharding left them, for a preset) in the solver's model, and change nothing but tg.auto_shard">,
    Option<"startPresets", "start-presets", "std::string",
           "\"dp,zero3,tp,sp,megatron\"",
           "The presets whose plans the solver also starts from, comma separated (those outside allow-strategies are left out; empty: none)">,
    Option<"breakdown", "breakdown", "std::string", "\"\"",
           "Write the priced plan's cost by role (op kind and model-file name, layer index taken out) to this file, as tab-separated lines">
  ];
  let statistics = [
    Statistic<"numNodes", "nodes", "Nodes of the problem">,
    Statistic<"numEdges", "edges", "Edges of the problem">,
    Statistic<"numPins", "pins", "Shardings written">,
    Statistic<"numTied", "tied", "Nodes tied to the same role of the layer before">
  ];
  let dependentDialects = ["::mlir::tg::TgDialect"];
}

#endif // TG_PASSES_SHARDING_TD
