//===- TgShardingOps.td - Device meshes and sharding pins --*- tablegen -*-===//
//
// The mesh a module is sharded over and the op that pins the sharding of an
// intermediate value. Shardings themselves are #tg.sharding attributes
// (TgAttrs.td); tg-propagate-sharding fills them in, tg-partition turns
// them into local shapes and collectives (TgCollectiveOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef TG_SHARDING_OPS_TD
#define TG_SHARDING_OPS_TD

include "mlir/IR/SymbolInterfaces.td"

def Tg_MeshOp : Tg_Op<"mesh", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "A device mesh: named axes with sizes";
  let description = [{
    The processes of a run arranged as an N-dimensional grid whose axes have
    names. Process `r` sits at the coordinates of `r` in row-major order
    (the last axis varies fastest), so the processes along the last axis
    are neighbours: put the axis that talks most (tensor parallel) last.
    A run starts as many processes as the product of the sizes.

    ```mlir
    tg.mesh @mesh ["data" = 2, "tp" = 2]
    ```

    An axis marked `elastic` (`tgc --mesh=data=auto`) takes its size from
    the process count at launch: the product of the other axes' sizes
    divides it. Its size here is the one the plan was priced for. Nothing
    is split over an elastic axis but the batch, and its only collectives
    are all-reduces (tg-partition checks both), so the step is the same
    code for every size: a mean over it divides by the size the run
    counts, not by a constant.

    ```mlir
    tg.mesh @mesh ["data" = 2 elastic, "tp" = 2]
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$axes,
                   DenseI64ArrayAttr:$shape,
                   OptionalAttr<StrArrayAttr>:$elastic);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The size of axis `name`, -1 when the mesh has no such axis.
    int64_t axisSize(::llvm::StringRef name);
    /// The number of processes: the product of the axis sizes.
    int64_t getNumProcesses();
    /// Whether axis `name` takes its size from the process count at launch.
    bool isElastic(::llvm::StringRef name);
    ::llvm::SmallVector<::llvm::StringRef> getAxisNames();
  }];
}

def Tg_ShardingConstraintOp : Tg_Op<"sharding_constraint",
    [Pure, SameOperandsAndResultType]> {
  let summary = "Pins the sharding of a value";
  let description = [{
    The identity on values, whose result has the sharding `sharding`:
    tg-propagate-sharding treats it as a user pin (it wins over presets and
    propagation), and tg-partition reshards the input to it and drops the
    op.

    ```mlir
    %h = tg.sharding_constraint %x <@mesh, [{"data"}, {"tp"} ]>
        : tensor<8x512xf32>
    ```
  }];
  let arguments = (ins Tg_Tensor:$input, Tg_ShardingAttr:$sharding);
  let results = (outs Tg_Tensor:$result);
  let assemblyFormat = "$input $sharding attr-dict `:` type($input)";
  let hasVerifier = 1;
}

#endif // TG_SHARDING_OPS_TD
