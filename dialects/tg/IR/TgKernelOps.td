//===- TgKernelOps.td - Fused kernels ----------------------*- tablegen -*-===//
//
// The kernel level of the step: after tg-fuse, a tg.kernel holds the tg ops
// one generated kernel computes, so the grouping the backends print is in
// the IR, where `tgc --compile-to=fusion` shows it and FileCheck tests it.
//
//===----------------------------------------------------------------------===//

#ifndef TG_KERNEL_OPS_TD
#define TG_KERNEL_OPS_TD

include "mlir/IR/EnumAttr.td"

def Tg_KernelKind : I32EnumAttr<"KernelKind", "what a fused kernel computes", [
    I32EnumAttrCase<"elementwise", 0>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_KernelKindAttr : EnumAttr<Tg_Dialect, Tg_KernelKind, "kernel_kind">;

def Tg_KernelOp : Tg_Op<"kernel", [IsolatedFromAbove, RecursiveMemoryEffects,
                                   SingleBlock]> {
  let summary = "Tg ops computed by one generated kernel";
  let description = [{
    The body computes the results from the inputs (its block arguments) with
    ordinary tg ops and yields them; no intermediate of the body is stored.
    `kind` says how the backends print it:

    - `elementwise`: one loop over the iteration space, the shape of every
      result and of every op in the body (elementwise ops, with numpy
      broadcasting of smaller inputs). A CPU backend prints one OpenMP loop
      that keeps the intermediates in registers.

    `name` names the generated kernel after the ops it fuses.

    ```mlir
    %y = tg.kernel elementwise (%h, %b : tensor<32x128xf32>, tensor<128xf32>)
        attributes {name = "fused_add_relu"} {
    ^bb0(%x: tensor<32x128xf32>, %bias: tensor<128xf32>):
      %s = tg.add %x, %bias : tensor<32x128xf32>, tensor<128xf32> -> tensor<32x128xf32>
      %r = tg.relu %s : tensor<32x128xf32>
      tg.yield %r : tensor<32x128xf32>
    } -> tensor<32x128xf32>
    ```
  }];
  let arguments = (ins Tg_KernelKindAttr:$kind, Variadic<Tg_Tensor>:$inputs,
                   OptionalAttr<StrAttr>:$name);
  let results = (outs Variadic<Tg_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $kind (`(` $inputs^ `:` type($inputs) `)`)? attr-dict-with-keyword $body
    `->` type($results)
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The terminator of the body.
    YieldOp getYield();
  }];
}

def Tg_YieldOp : Tg_Op<"yield", [Pure, Terminator,
                                 HasParent<"KernelOp">]> {
  let summary = "The results of a tg.kernel body";
  let description = [{
    ```mlir
    tg.yield %r, %s : tensor<32x128xf32>, tensor<32x128xf32>
    ```
  }];
  let arguments = (ins Variadic<Tg_Tensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

#endif // TG_KERNEL_OPS_TD
