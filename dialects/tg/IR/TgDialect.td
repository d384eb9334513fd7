//===- TgDialect.td - The tg training dialect --------------*- tablegen -*-===//
//
// The dialect definition. Ops live in TgOps.td, attributes in TgAttrs.td.
//
//===----------------------------------------------------------------------===//

#ifndef TG_DIALECT_TD
#define TG_DIALECT_TD

include "mlir/IR/OpBase.td"

def Tg_Dialect : Dialect {
  let name = "tg";
  let cppNamespace = "::mlir::tg";
  let summary = "Training graphs on ranked tensors with value semantics";
  let description = [{
    The `tg` dialect describes a model's forward computation, its gradients
    and its optimizer update as ops on ranked tensors with value semantics.
    A model is imported as

    ```mlir
    module attributes {tg.model = "mlp", tg.training = {batch_size = 32 : i64}} {
      func.func @forward(
          %w: tensor<64x10xf32> {tg.param = "fc.weight",
                                 tg.init = #tg.init<normal, std = 0.02>},
          %x: tensor<32x64xf32> {tg.input = "x", tg.dim_names = ["batch", ""]},
          %y: tensor<32xi64> {tg.input = "y", tg.dim_names = ["batch"]})
          -> (tensor<f32> {tg.output = "loss"}) {
        %logits = tg.matmul %x, %w : tensor<32x64xf32>, tensor<64x10xf32> -> tensor<32x10xf32>
        %loss = tg.cross_entropy %logits, %y : tensor<32x10xf32>, tensor<32xi64> -> tensor<f32>
        return %loss : tensor<f32>
      }
    }
    ```

    Function argument attributes (checked by the dialect):
    - `tg.param = "name"`: a model parameter; `tg.init` its initializer;
      `tg.frozen` marks it as not trainable (no gradient, no update).
    - `tg.input = "name"`: a batch input; `tg.dim_names` says which dims
      follow the batch size (`"batch"`) and sequence length (`"seq"`).
    Result attributes: `tg.output = "name"`; result 0 is the loss;
    `tg.grad = "param"` marks the gradient of a parameter (tg-autodiff).
    The train step (tg-optimizer) adds argument attributes `tg.state =
    "param.slot"` (optimizer state), `tg.accum = "param"` (the gradient summed
    over the step's earlier micro-batches) and `tg.scalar = "step" |
    "base_lr" | "micro_batches"`, and
    result attributes `tg.update = "name"` (the new value of a parameter or
    state argument) and `tg.metric = "loss" | "grad_norm" | "lr"`.
    Module attributes: `tg.model` (the model's name), `tg.training` (the
    model file's training table as a dictionary) and `tg.precision`, the
    precision policy tg-precision applied (`"bf16"`; absent, or `"fp32"`,
    when everything computes in f32), and `tg.phase`, the last pipeline
    phase tgc ran the module through (`"optimizer"`, `"fusion"`, ...), which
    `tgc --compile-from` reads.
    The memory plan (tg-plan-memory): the op attribute `tg.place`
    (`#tg.place`: per result, its arena offset, the operand whose buffer it
    shares, or in a layer body the slot of the caller's offset table), the
    `#tg.span`s `tg.bucket_span` and `tg.scratch`, and the function
    attribute `tg.arena` (`#tg.arena`: the peak, its lower bound and the
    alignment).
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();
    // Attaches DifferentiableOpInterface to the ops (TgVJP.cpp).
    void registerVJPs();
    // Attaches ShardingRuleOpInterface to the ops (TgShardingRules.cpp).
    void registerShardingRules();
    // Names of the discardable attributes the dialect owns.
    static constexpr ::llvm::StringLiteral kParamAttr = "tg.param";
    static constexpr ::llvm::StringLiteral kInitAttr = "tg.init";
    static constexpr ::llvm::StringLiteral kFrozenAttr = "tg.frozen";
    // A parameter held as a row-major view of its shape in files.
    static constexpr ::llvm::StringLiteral kFileShapeAttr = "tg.file_shape";
    static constexpr ::llvm::StringLiteral kInputAttr = "tg.input";
    static constexpr ::llvm::StringLiteral kDimNamesAttr = "tg.dim_names";
    static constexpr ::llvm::StringLiteral kOutputAttr = "tg.output";
    static constexpr ::llvm::StringLiteral kGradAttr = "tg.grad";
    static constexpr ::llvm::StringLiteral kStateAttr = "tg.state";
    static constexpr ::llvm::StringLiteral kScalarAttr = "tg.scalar";
    static constexpr ::llvm::StringLiteral kAccumAttr = "tg.accum";
    /// tg-pipeline-split: a parameter's gradient sum after a chunk's
    /// reduction over the data axes (a result of @chunkC_reduce, an
    /// argument of @stageS_update), held where the sum was.
    static constexpr ::llvm::StringLiteral kReducedAttr = "tg.reduced";
    static constexpr ::llvm::StringLiteral kUpdateAttr = "tg.update";
    static constexpr ::llvm::StringLiteral kMetricAttr = "tg.metric";
    static constexpr ::llvm::StringLiteral kModelAttr = "tg.model";
    static constexpr ::llvm::StringLiteral kTrainingAttr = "tg.training";
    static constexpr ::llvm::StringLiteral kPrecisionAttr = "tg.precision";
    static constexpr ::llvm::StringLiteral kPhaseAttr = "tg.phase";
    /// On the module: pipeline stages the plan is priced with
    /// ({stages = P, virtual_stages = V}); modelled by the cost model and
    /// tg-auto-shard, not executable.
    static constexpr ::llvm::StringLiteral kPipelineAttr = "tg.pipeline";
    /// tg-pipeline-split: on an argument or result of a chunk's function,
    /// the value (a per-micro-batch buffer) it reads or writes, by number;
    /// on a function, its part of the pipelined step ({kind = "forward" |
    /// "backward" | "weight" | "reduce", chunk = c} or {kind = "update",
    /// stage = s});
    /// on the module, the values each boundary between chunks c and c + 1
    /// moves (an array of {forward = [...], backward = [...]}).
    static constexpr ::llvm::StringLiteral kSlotAttr = "tg.slot";
    static constexpr ::llvm::StringLiteral kPipelineRoleAttr = "tg.pipeline_role";
    static constexpr ::llvm::StringLiteral kPipelineTransfersAttr = "tg.pipeline_transfers";
    /// tg-pipeline-schedule: on the module, each stage's actions in order
    /// ("F0", "send-F0", "B0", "W0", ... as tgc --report=pipeline prints
    /// them) and the schedule's name.
    static constexpr ::llvm::StringLiteral kPipelineActionsAttr = "tg.pipeline_actions";
    // The memory plan (tg-plan-memory): each op's #tg.place, the
    // function's #tg.arena, the #tg.span of buckets and attention scratch.
    static constexpr ::llvm::StringLiteral kPlaceAttr = "tg.place";
    static constexpr ::llvm::StringLiteral kArenaAttr = "tg.arena";
    static constexpr ::llvm::StringLiteral kBucketSpanAttr = "tg.bucket_span";
    static constexpr ::llvm::StringLiteral kScratchAttr = "tg.scratch";
    // The constants a backend reads from memory (tg-place-constants): on
    // the module, the section's #tg.constants; on each such tg.constant,
    // its offset in the section.
    static constexpr ::llvm::StringLiteral kConstantsAttr = "tg.constants";
    static constexpr ::llvm::StringLiteral kConstantOffsetAttr = "tg.constant_offset";
    // The adapters tg-lora added: on the module, a #tg.lora per weight.
    static constexpr ::llvm::StringLiteral kLoraAttr = "tg.lora";
    // What tg-remat chose, for the memory report.
    static constexpr ::llvm::StringLiteral kRematAttr = "tg.remat";
    /// On an op tg-remat copied into the backward (a unit attribute): the
    /// copy recomputes the forward's op there, and is no common
    /// subexpression of it (cse would merge the two and keep the forward's
    /// value alive again).
    static constexpr ::llvm::StringLiteral kRecomputeAttr = "tg.recompute";
    /// On @train_step with gradient accumulation: the micro-batches per
    /// step it was built for (the executable's --batch-size may run more).
    static constexpr ::llvm::StringLiteral kMicroBatchesAttr = "tg.micro_batches";
    /// On @train_step after tg-auto-shard: what the solver found.
    static constexpr ::llvm::StringLiteral kAutoShardAttr = "tg.auto_shard";
    /// On an op: the model-file block it computes for, as the importer
    /// read it from the node's name: a repeated layer ("h.3") or a
    /// top-level module ("wte", "ln_f"). Passes that build ops for an op
    /// (its gradient, its collectives, its kernel) give them its tg.layer;
    /// remat, tg-pipeline-split, tg-outline-layers and tg-auto-shard group
    /// by it. Printed IR keeps it where debug locations are dropped.
    static constexpr ::llvm::StringLiteral kLayerAttr = "tg.layer";
    // Layer bodies (tg-outline-layers). On a function: a body several
    // layers share (its name, the first layer it was taken from); its ops'
    // tg.place say slots of its offset table instead of offsets. On the
    // func.call of a body: the arena offset of each slot for this layer.
    static constexpr ::llvm::StringLiteral kLayerBodyAttr = "tg.layer_body";
    static constexpr ::llvm::StringLiteral kSlotOffsetsAttr = "tg.slot_offsets";
  }];
}

class Tg_Op<string mnemonic, list<Trait> traits = []> :
    Op<Tg_Dialect, mnemonic, traits>;

#endif // TG_DIALECT_TD
