//===- Passes.td - Automatic differentiation passes --------*- tablegen -*-===//

#ifndef TG_PASSES_AUTODIFF_TD
#define TG_PASSES_AUTODIFF_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"tg-autodiff", "ModuleOp"> {
  let summary = "Builds the gradients of every trainable parameter";
  let description = [{
    Reverse-mode differentiation of `@forward(params..., batch...) -> (loss,
    outputs...)`. It adds `@forward_backward` with the same arguments, which
    returns the forward's results followed by the gradient of the loss with
    respect to each trainable parameter (arguments with `tg.param` and without
    `tg.frozen`), in argument order, each marked `tg.grad = "<param name>"`.
    `@forward` stays, for evaluation.

    Each op states its own vector-Jacobian product through
    DifferentiableOpInterface; the pass walks the ops backwards from the loss
    and sums the gradients of values with several uses. Only values that both
    depend on a trainable parameter and reach the loss get a gradient: frozen
    parameters, integer inputs and dead branches cost nothing.

    Before:
    ```mlir
    func.func @forward(%w: tensor<4x2xf32> {tg.param = "w"},
                       %x: tensor<8x4xf32> {tg.input = "x"}) -> tensor<f32> {
      %y = tg.matmul %x, %w : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
      %l = tg.reduce_sum %y : tensor<8x2xf32> -> tensor<f32>
      return %l : tensor<f32>
    }
    ```
    After (abridged):
    ```mlir
    func.func @forward_backward(%w: ..., %x: ...)
        -> (tensor<f32>, tensor<4x2xf32> {tg.grad = "w"}) {
      %y = tg.matmul %x, %w ...
      %l = tg.reduce_sum %y ...
      %one = tg.constant dense<1.0> : tensor<f32>
      %gy = tg.broadcast_to ... : tensor<1x1xf32> -> tensor<8x2xf32>
      %gw = tg.matmul %x, %gy {transpose_lhs = true} ...
      return %l, %gw : tensor<f32>, tensor<4x2xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::tg::TgDialect", "::mlir::func::FuncDialect"];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The function to differentiate">,
    Option<"outputName", "output", "std::string", "\"forward_backward\"",
           "The function to create">,
  ];
  let statistics = [
    Statistic<"numGradients", "gradients", "Parameter gradients built">,
    Statistic<"numFrozen", "frozen", "Parameters skipped as frozen">,
  ];
}

def FreezePass : Pass<"tg-freeze", "ModuleOp"> {
  let summary = "Freezes the parameters whose names match a glob";
  let description = [{
    Marks each parameter of `@forward` whose name matches one of `patterns`
    (globs, as `no_decay` takes them: `h.0.*`, `wte.weight`, `*.bias`)
    `tg.frozen`, as a model file's `"trainable": false` does: tg-autodiff
    builds no gradient for it, tg-optimizer no update and no optimizer
    state, and the sharding presets keep it whole. Fine-tuning freezes the
    layers it leaves as they are; the memory report shows what their
    gradients and state no longer take. Runs before tg-autodiff (`tgc
    --freeze PATTERN`, repeatable).

    A pattern that names no parameter is an error that lists the
    parameters, and so is freezing all of them (nothing would train).

    ```mlir
    // -tg-freeze="patterns=h.0.*"
    func.func @forward(%w0: tensor<8x8xf32> {tg.param = "h.0.w", tg.frozen},
                       %w1: tensor<8x8xf32> {tg.param = "h.1.w"}, ...)
    ```
  }];
  let dependentDialects = ["::mlir::tg::TgDialect", "::mlir::func::FuncDialect"];
  let options = [
    ListOption<"patterns", "patterns", "std::string",
               "Globs on parameter names: a parameter that matches one is "
               "frozen">,
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The function whose parameters are frozen">,
  ];
  let statistics = [
    Statistic<"numFrozen", "frozen", "Parameters frozen">,
  ];
}

def LoraPass : Pass<"tg-lora", "ModuleOp"> {
  let summary = "Adds low-rank adapters to the weights of chosen matmuls";
  let description = [{
    LoRA (Hu et al., 2021) as PEFT applies it: for each weight `W`
    (`[in, out]`, read as `x @ W`) of a module named in `targets` (its
    parameter `<module>.weight`, where the module is a target or ends with
    `.<target>`: `c_attn` adapts `h.0.attn.c_attn.weight` and every other
    layer's), two parameters `<module>.lora_A` (`[in, rank]`, uniform in
    ±1/sqrt(in), PEFT's Kaiming-uniform with a = sqrt(5)) and
    `<module>.lora_B` (`[rank, out]`, zeros), and each `x @ W` becomes
    `x @ W + (x @ A) @ B * alpha / rank`. B starting at zero, the adapted
    model computes what the base did until A and B train.

    Every other parameter is frozen (`tg.frozen`), as PEFT's default:
    only the adapters train, and their gradients and optimizer state are
    all the step holds beside the frozen weights. Runs on the imported
    model, before tg-precision (`tgc --lora=r=8,alpha=16,targets=c_attn`).

    A target that names no weight, a weight that is not 2-D or that
    something other than a matmul's right operand reads (a tied embedding),
    and a rank below 1 are errors.

    ```mlir
    // -tg-lora="rank=2 alpha=4 targets=fc"
    %y = tg.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
    // becomes, with %a = fc.lora_A : tensor<16x2xf32>, %b = fc.lora_B : tensor<2x4xf32>
    %y0 = tg.matmul %x, %w ...
    %xa = tg.matmul %x, %a ...
    %xab = tg.matmul %xa, %b ...
    %s = tg.mul %xab, %scale : tensor<8x4xf32>, tensor<f32> -> tensor<8x4xf32>
    %y = tg.add %y0, %s ...
    ```
  }];
  let dependentDialects = ["::mlir::tg::TgDialect", "::mlir::func::FuncDialect"];
  let options = [
    Option<"rank", "rank", "int64_t", "8", "The adapters' rank r">,
    Option<"alpha", "alpha", "double", "8.0",
           "The adapters' scale is alpha / rank">,
    ListOption<"targets", "targets", "std::string",
               "The modules whose weights get adapters (c_attn, q_proj, ...)">,
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The function whose parameters are adapted">,
  ];
  let statistics = [
    Statistic<"numAdapted", "adapted", "Weights given adapters">,
  ];
}

#endif // TG_PASSES_AUTODIFF_TD
