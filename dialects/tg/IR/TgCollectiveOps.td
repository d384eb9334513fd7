//===- TgCollectiveOps.td - tg collectives -----------------*- tablegen -*-===//
//
// Communication between the processes of a run. Data-parallel training
// averages gradients with tg.all_reduce; the sharding passes to come add the
// others (all_gather, reduce_scatter, all_to_all) over named mesh axes.
//
//===----------------------------------------------------------------------===//

#ifndef TG_COLLECTIVE_OPS_TD
#define TG_COLLECTIVE_OPS_TD

include "mlir/IR/EnumAttr.td"

// How a collective combines the processes' values. Not shared with
// tg.cross_entropy's `reduction`: a loss may be left unreduced (`none`,
// which changes its result type), a collective may not, and NCCL's other
// combiners (max, min) would join here, not there.
def Tg_Reduction : I32EnumAttr<"Reduction", "how a collective combines values", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"mean", 1>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_ReductionAttr : EnumAttr<Tg_Dialect, Tg_Reduction, "reduction">;

def Tg_AllReduceOp : Tg_Op<"all_reduce", [InferTypeOpAdaptor]> {
  let summary = "Sum or mean of tensors over the replicas of a mesh axis";
  let description = [{
    Every process of the run holds its own value of each input; the results
    are the elementwise `sum` or `mean` over the processes along
    `mesh_axis` (the data-parallel replicas for `"data"`). With one process
    the op is the identity. The inputs travel together, so a backend may
    bucket and overlap them with the computation that produces them.

    The results have the inputs' types. Not `Pure`: it synchronises with the
    other processes, so it is neither hoisted, merged nor dropped.

    `bucket`, set by tg-schedule, makes the op one bucket of the step's
    gradient reduction: its inputs travel as one message on the
    communication stream, starting where the op stands, while the compute
    stream goes on; the first op that reads a result waits for it (that op
    lists the bucket in its `tg.waits`). Without `bucket` a backend runs
    the op where it stands and waits for it at once.

    ```mlir
    %g:2 = tg.all_reduce %g0, %g1 {reduction = #tg<reduction mean>, mesh_axis = "data"}
        : tensor<64x128xf32>, tensor<128xf32>
    %h = tg.all_reduce %g2 {bucket = 0 : i64, reduction = #tg<reduction mean>}
        : tensor<768x768xf32>
    ```
  }];
  let arguments = (ins Variadic<Tg_FloatTensor>:$inputs,
                   DefaultValuedAttr<Tg_ReductionAttr, "::mlir::tg::Reduction::sum">:$reduction,
                   DefaultValuedStrAttr<StrAttr, "data">:$mesh_axis,
                   OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$bucket);
  let results = (outs Variadic<Tg_FloatTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

#endif // TG_COLLECTIVE_OPS_TD
