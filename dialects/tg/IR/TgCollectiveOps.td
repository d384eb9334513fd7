//===- TgCollectiveOps.td - tg collectives -----------------*- tablegen -*-===//
//
// Communication between the processes of a run, over the named axes of the
// module's tg.mesh. tg-partition inserts them where the sharding of a value
// changes (a partial sum becomes whole, a split tensor is gathered, ...) and
// records why in `tg.reshard`.
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
    stream goes on, until the bucket's one `tg.await` (which comes before
    any op that reads a result). Without `bucket` a backend runs the op
    where it stands and waits for it at once.

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

def Tg_AwaitOp : Tg_Op<"await"> {
  let summary = "Where the step waits for an all-reduce bucket";
  let description = [{
    The event of the execution level: a bucket (a `tg.all_reduce` with
    `bucket`) runs on the communication stream from where it stands, and
    its `tg.await` marks where the compute stream waits for it to finish,
    as IREE's `stream.timepoint.await` does for a timepoint. tg-schedule
    places one right before the first op that reads the bucket (before the
    return when nothing does). A backend whose collectives block prints
    nothing for it.

    ```mlir
    %h:2 = tg.all_reduce %g0, %g1 {bucket = 3 : i64, reduction = #tg<reduction mean>}
        : tensor<64x128xf32>, tensor<128xf32>
    ...
    tg.await %h#0, %h#1 : tensor<64x128xf32>, tensor<128xf32>
    %w = tg.sub %p, %h#0 : tensor<64x128xf32>, tensor<64x128xf32> -> tensor<64x128xf32>
    ```

    The verifier's rules: the operands are every result of one bucket, in
    order; nothing else in its block reads a result before it. A bucket
    has exactly one tg.await (the `tg.all_reduce`'s rule).
  }];
  let arguments = (ins Variadic<Tg_FloatTensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The bucket this waits for (null when the IR is not verified).
    AllReduceOp getBucketOp();
  }];
}

// The collectives that change a tensor's shape along one dim: the result's
// `dim` is the input's times (all_gather) or divided by (reduce_scatter,
// all_slice) the size of `mesh_axis`.
class Tg_ReshapingCollective<string mnemonic, list<Trait> traits = []> :
    Tg_Op<mnemonic, traits> {
  let results = (outs Tg_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tg_AllGatherOp : Tg_ReshapingCollective<"all_gather"> {
  let summary = "Concatenates the processes' pieces of a tensor along a dim";
  let description = [{
    The processes along `mesh_axis` each hold one piece of a tensor split
    along `dim`; each gets the whole, the pieces in the order of the
    processes' coordinates on the axis.

    ```mlir
    tg.mesh @mesh ["data" = 4]
    %w = tg.all_gather %piece {dim = 0 : i64, mesh_axis = "data"}
        : tensor<16x768xf32> -> tensor<64x768xf32>
    ```
  }];
  let arguments = (ins Tg_Tensor:$input,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                   StrAttr:$mesh_axis);
}

def Tg_ReduceScatterOp : Tg_ReshapingCollective<"reduce_scatter"> {
  let summary = "Sums the processes' tensors and leaves each one piece";
  let description = [{
    The elementwise `sum` (or `mean`) of the processes' tensors along
    `mesh_axis`, split along `dim`: the process at coordinate `i` on the
    axis gets piece `i`. What an all-reduce does, at half its traffic, for
    a consumer that only needs its piece (ZeRO's sharded gradients).

    ```mlir
    %g = tg.reduce_scatter %partial {dim = 0 : i64, mesh_axis = "data",
                                     reduction = #tg<reduction sum>}
        : tensor<64x768xf32> -> tensor<16x768xf32>
    ```
  }];
  let arguments = (ins Tg_FloatTensor:$input,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                   StrAttr:$mesh_axis,
                   DefaultValuedAttr<Tg_ReductionAttr, "::mlir::tg::Reduction::sum">:$reduction);
}

def Tg_AllSliceOp : Tg_ReshapingCollective<"all_slice", [Pure]> {
  let summary = "Keeps this process's piece of a replicated tensor";
  let description = [{
    The inverse of tg.all_gather without communication: every process along
    `mesh_axis` holds the whole tensor and keeps piece `i` along `dim`,
    where `i` is its coordinate on the axis.

    ```mlir
    %piece = tg.all_slice %w {dim = 0 : i64, mesh_axis = "data"}
        : tensor<64x768xf32> -> tensor<16x768xf32>
    ```
  }];
  let arguments = (ins Tg_Tensor:$input,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$dim,
                   StrAttr:$mesh_axis);
}

// Point-to-point: between the processes `offset` apart on `mesh_axis`
// (a pipeline's neighbouring stages on "pp"). Verified and printed; no
// backend lowers them yet (the pass that cuts a step into pipeline chunks
// and the runtime's driver that runs them are still to come).

def Tg_SendOp : Tg_Op<"send"> {
  let summary = "Sends a tensor to the process `offset` away on an axis";
  let description = [{
    Sends `input` to the process whose coordinate on `mesh_axis` is this
    process's plus `offset` (its other coordinates the same), which takes
    it with the tg.recv of the same `tag` and the opposite offset. Does not
    wait for the receiver. A pipeline stage sends its activations to the
    next stage (offset 1) and its input gradients to the one before
    (offset -1).

    ```mlir
    tg.mesh @mesh ["pp" = 4, "data" = 2]
    tg.send %h {mesh_axis = "pp", offset = 1 : i64, tag = 0 : i64}
        : tensor<16x64x768xf32>
    ```
  }];
  let arguments = (ins Tg_Tensor:$input, StrAttr:$mesh_axis, I64Attr:$offset,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$tag);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tg_RecvOp : Tg_Op<"recv"> {
  let summary = "Receives a tensor from the process `offset` away on an axis";
  let description = [{
    Waits for the tensor that the process whose coordinate on `mesh_axis` is
    this process's plus `offset` sends with the tg.send of the same `tag`
    (and the opposite offset), and returns it. The result type is what the
    sender sends.

    ```mlir
    %h = tg.recv {mesh_axis = "pp", offset = -1 : i64, tag = 0 : i64}
        : tensor<16x64x768xf32>
    ```
  }];
  let arguments = (ins StrAttr:$mesh_axis, I64Attr:$offset,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$tag);
  let results = (outs Tg_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // TG_COLLECTIVE_OPS_TD
