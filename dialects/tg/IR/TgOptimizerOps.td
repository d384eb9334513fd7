//===- TgOptimizerOps.td - tg optimizer ops ----------------*- tablegen -*-===//
//
// The ops tg-optimizer appends to a train step: the learning-rate schedule,
// the global gradient norm and one fused update per parameter.
//
//===----------------------------------------------------------------------===//

#ifndef TG_OPTIMIZER_OPS_TD
#define TG_OPTIMIZER_OPS_TD

include "mlir/IR/EnumAttr.td"

// Model files and the tg.training table spell both kinds as strings
// (schedule.kind, optimizer.kind): the importer checks them against these
// cases and tg-optimizer turns them into these attributes.
def Tg_ScheduleKind : I32EnumAttr<"ScheduleKind",
    "the learning-rate schedule tg.lr_schedule follows", [
    I32EnumAttrCase<"constant", 0>, I32EnumAttrCase<"cosine", 1>,
    I32EnumAttrCase<"linear", 2>, I32EnumAttrCase<"step", 3>,
    I32EnumAttrCase<"cyclic", 4>, I32EnumAttrCase<"wsd", 5>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_ScheduleKindAttr : EnumAttr<Tg_Dialect, Tg_ScheduleKind, "schedule">;

def Tg_OptimizerKind : I32EnumAttr<"OptimizerKind",
    "the update rule tg.optimizer_update applies", [
    I32EnumAttrCase<"sgd", 0>, I32EnumAttrCase<"adam", 1>,
    I32EnumAttrCase<"adamw", 2>, I32EnumAttrCase<"rmsprop", 3>,
    I32EnumAttrCase<"adagrad", 4>, I32EnumAttrCase<"lamb", 5>,
    I32EnumAttrCase<"lion", 6>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_OptimizerKindAttr : EnumAttr<Tg_Dialect, Tg_OptimizerKind, "optimizer">;

def Tg_LrScheduleOp : Tg_Op<"lr_schedule", [Pure]> {
  let summary = "Learning rate at a step";
  let description = [{
    Scales `base_lr` by the schedule `kind` (`#tg<schedule cosine>`; the
    default is `constant`) at `step` (counting from 1):
    - `constant`: base_lr after a linear warmup of `warmup_steps`;
    - `cosine`: warmup, then cosine decay to `min_lr` at `total_steps`;
    - `linear`: warmup, then linear decay to `min_lr` at `total_steps`;
    - `step`: warmup, then multiplied by `gamma` every `step_size` steps;
    - `cyclic`: triangular cycles between base_lr and `max_lr`, each half
      cycle `step_size` steps;
    - `wsd`: warmup, stable at base_lr, then linear decay to `min_lr` over
      the last `decay_steps` of `total_steps`.

    ```mlir
    %lr = tg.lr_schedule %step, %base {kind = #tg<schedule cosine>, warmup_steps = 100 : i64, total_steps = 5000 : i64}
        : tensor<i64>, tensor<f32> -> tensor<f32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$step, 0DTensorOf<[F32]>:$base_lr,
                   DefaultValuedAttr<Tg_ScheduleKindAttr,
                       "::mlir::tg::ScheduleKind::constant">:$kind,
                   DefaultValuedAttr<I64Attr, "0">:$warmup_steps,
                   DefaultValuedAttr<I64Attr, "0">:$total_steps,
                   DefaultValuedAttr<F64Attr, "0.0">:$min_lr,
                   DefaultValuedAttr<I64Attr, "0">:$step_size,
                   DefaultValuedAttr<F64Attr, "0.1">:$gamma,
                   DefaultValuedAttr<F64Attr, "0.0">:$max_lr,
                   DefaultValuedAttr<I64Attr, "0">:$decay_steps);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $step `,` $base_lr attr-dict `:` type($step) `,` type($base_lr) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tg_GlobalNormOp : Tg_Op<"global_norm", [Pure]> {
  let summary = "The L2 norm of a list of tensors taken as one vector";
  let description = [{
    Takes at least one tensor.

    ```mlir
    %n = tg.global_norm %g0, %g1 : tensor<64x128xf32>, tensor<128xf32> -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Tg_FloatTensor>:$inputs);
  let results = (outs 0DTensorOf<[F32]>:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  // The norm of nothing has no use, and the custom form cannot spell it.
  let hasVerifier = 1;
}

/// tensor<f32>, which the custom forms need not spell.
def Tg_F32Scalar : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;

def Tg_OptimizerUpdateOp : Tg_Op<"optimizer_update",
                                 [Pure, AttrSizedOperandSegments]> {
  let summary = "One optimizer step for one parameter";
  let description = [{
    Returns the updated parameter and optimizer state. `kind` (a
    `#tg<optimizer ...>`, printed bare after the op name) and the state
    slots it carries:
    - `sgd`: none, or `momentum_buffer` when momentum > 0 (Nesterov with
      `nesterov`);
    - `adam`, `adamw`: `exp_avg`, `exp_avg_sq` (bias-corrected; AdamW decays
      the weight decoupled, Adam adds weight_decay * param to the gradient);
    - `rmsprop`: `square_avg` (smoothing `alpha`), plus `momentum_buffer`
      when momentum > 0;
    - `adagrad`: `sum`;
    - `lamb`: `exp_avg`, `exp_avg_sq` (trust ratio ||p|| / ||update||);
    - `lion`: `exp_avg` (sign update with beta1, momentum with beta2).
    The updates follow PyTorch's optimizers of the same name.

    With `grad_scale` (an f32 scalar: the clip factor, 1 / micro-batches),
    the update reads `grad * grad_scale` as its gradient, scaling each
    element as it reads it. tg-fuse's cuda target folds a tg.mul that
    scales a gradient only its update reads into this operand; the C++
    backend takes updates without it.

    ```mlir
    %p1, %m1, %v1 = tg.optimizer_update adamw %p, %g, %lr, %step, %m, %v {weight_decay = 1.0e-01 : f64}
        : tensor<64x10xf32>, tensor<64x10xf32>, tensor<f32>, tensor<i64>, tensor<64x10xf32>, tensor<64x10xf32>
        -> tensor<64x10xf32>, tensor<64x10xf32>, tensor<64x10xf32>
    ```
  }];
  let arguments = (ins Tg_OptimizerKindAttr:$kind, Tg_FloatTensor:$param,
                   Tg_FloatTensor:$grad, 0DTensorOf<[F32]>:$lr,
                   0DTensorOf<[I64]>:$step, Variadic<Tg_FloatTensor>:$state,
                   Optional<Tg_F32Scalar>:$grad_scale,
                   DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                   DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                   DefaultValuedAttr<F64Attr, "1.0e-8">:$eps,
                   DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                   DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                   DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                   DefaultValuedAttr<F64Attr, "0.99">:$alpha);
  let results = (outs Tg_FloatTensor:$new_param,
                  Variadic<Tg_FloatTensor>:$new_state);
  let assemblyFormat = [{
    $kind $param `,` $grad `,` $lr `,` $step (`,` $state^)?
    (`grad_scale` $grad_scale^)? attr-dict `:`
    type($param) `,` type($grad) `,` type($lr) `,` type($step) (`,` type($state)^)?
    `->` type(results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The state slot names `kind` needs with these hyperparameters.
    static ::llvm::SmallVector<::llvm::StringRef>
    stateSlots(::mlir::tg::OptimizerKind kind, double momentum);
    /// Whether one multi-tensor launch may run this update beside `other`:
    /// the same kind, hyperparameters, learning rate and step (each with
    /// its own gradient scale, or none).
    bool sharesLaunchWith(OptimizerUpdateOp other);
  }];
}

#endif // TG_OPTIMIZER_OPS_TD
