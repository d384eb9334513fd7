//===- Passes.td - Optimizer passes ------------------------*- tablegen -*-===//

#ifndef TG_PASSES_OPTIMIZER_TD
#define TG_PASSES_OPTIMIZER_TD

include "mlir/Pass/PassBase.td"

def BuildTrainStepPass : Pass<"tg-optimizer", "ModuleOp"> {
  let summary = "Appends the optimizer update and builds @train_step";
  let description = [{
    Takes `@forward_backward` (from tg-autodiff) and the module's
    `tg.training` table and builds

    ```
    @train_step(params..., state..., batch..., step, base_lr
                [, accumulated grads..., micro_batches])
        -> (new trainable params..., new state..., loss, grad_norm, lr)
    ```

    The step computes the loss and gradients; with gradient accumulation
    (`grad_accum` > 1) it adds the gradients of the step's earlier
    micro-batches (arguments `tg.accum = "<param>"`, summed by the runtime's
    accumulate calls) and divides by `micro_batches` (an i32 scalar). It then
    computes the global gradient norm
    (always, as a metric), clips the gradients to `clip_grad_norm` when it is
    positive (as torch.nn.utils.clip_grad_norm_), evaluates the learning-rate
    schedule at `step` (counting from 1) and applies one `tg.optimizer_update`
    per trainable parameter. Parameters whose names match a `no_decay` glob
    pattern (`*.bias`, `*ln_*`) get no weight decay. State arguments start at
    zero; their count per parameter depends on the optimizer.

    Arguments carry `tg.param`, `tg.state = "<param>.<slot>"`, `tg.input`,
    `tg.accum = "<param>"` and `tg.scalar = "step" | "base_lr" |
    "micro_batches"`; results carry `tg.update = "<name>"` or
    `tg.metric = "loss" | "grad_norm" | "lr"`. A state argument carries
    its parameter's `tg.file_shape` too (tg-split-fused-projections), so
    checkpoints show the moments in the parameter's shape in files.

    A module with pipeline stages (`tg.pipeline`) also gets the update
    alone, for tg-pipeline-split to divide between the stages:

    ```
    @apply_gradients(trainable params..., state..., gradient sums...,
                     step, base_lr, micro_batches)
        -> (new trainable params..., new state..., grad_norm, lr)
    ```

    the sums (`tg.accum`) over all the step's micro-batches, divided by
    `micro_batches`, then the same norm, clipping, schedule and updates.

    The table spells `optimizer.kind` and `schedule.kind` as strings, as the
    model file does; they become the kinds of `tg.optimizer_update` (`adamw`)
    and `tg.lr_schedule` (`#tg<schedule cosine>`), and a string that names
    no kind is an error that lists them.

    Options override the training table (as tgc's flags do). Data
    parallelism is not this pass's: over a mesh, the batch is split and the
    gradients become partial sums that tg-partition reduces.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect", "::mlir::func::FuncDialect"];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"\"",
           "Optimizer kind (sgd, adam, adamw, rmsprop, adagrad, lamb, lion); "
           "default: the training table's, else adamw">,
    Option<"schedule", "schedule", "std::string", "\"\"",
           "LR schedule kind (constant, cosine, linear, step, cyclic, wsd)">,
    Option<"totalSteps", "total-steps", "int64_t", "0",
           "Schedule length; default: the table's total_steps, else steps">,
    Option<"warmupSteps", "warmup-steps", "int64_t", "-1",
           "Warmup steps; default: the table's">,
    Option<"weightDecay", "weight-decay", "double", "-1.0",
           "Weight decay; default: the table's">,
    Option<"clipGradNorm", "clip-grad-norm", "double", "-1.0",
           "Clip gradients to this global norm (0: off); default: the table's">,
    Option<"gradAccum", "grad-accum", "int64_t", "0",
           "Micro-batches per step the step is compiled for (> 1 adds the "
           "accumulated-gradient arguments); default: the table's grad_accum">,
  ];
  let statistics = [
    Statistic<"numUpdates", "updates", "Parameters updated">,
    Statistic<"numNoDecay", "no-decay", "Parameters without weight decay">,
  ];
}

def InferenceForwardPass : Pass<"tg-inference-forward", "ModuleOp"> {
  let summary = "Puts @forward in inference mode for evaluation";
  let description = [{
    After tg-autodiff has differentiated `@forward` (with its dropout) into
    `@forward_backward`, `@forward` is only what evaluation runs: the
    training executable's validation loss and outputs, on the CPU and the
    GPU. Evaluation runs a model in inference mode, as PyTorch's
    `model.eval()` does, so this pass removes the ops that only training
    applies: each `tg.dropout` becomes the identity.

    ```mlir
    // Before
    func.func @forward(%x: tensor<8x64xf32>, ...) -> tensor<f32> {
      %d = tg.dropout %x {p = 1.0e-01 : f64, seed = 7 : i64} : tensor<8x64xf32>
      ...
    // After
    func.func @forward(%x: tensor<8x64xf32>, ...) -> tensor<f32> {
      ... (uses of %d now use %x)
    ```

    It fails when the module has no `@forward_backward` yet: running it
    before tg-autodiff would train without dropout.
  }];
  let dependentDialects = ["::mlir::tg::TgDialect", "::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numDropouts", "dropouts", "Dropouts removed from @forward">,
  ];
}

#endif // TG_PASSES_OPTIMIZER_TD
