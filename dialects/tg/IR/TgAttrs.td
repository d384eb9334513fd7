//===- TgAttrs.td - tg dialect attributes ------------------*- tablegen -*-===//
//
// Attributes of the tg dialect: parameter initializers, shardings and the
// memory plan's arena.
//
//===----------------------------------------------------------------------===//

#ifndef TG_ATTRS_TD
#define TG_ATTRS_TD

include "dialects/tg/IR/TgDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tg_InitKind : I32EnumAttr<"InitKind", "parameter initializer kind", [
    I32EnumAttrCase<"zeros", 0>,
    I32EnumAttrCase<"ones", 1>,
    I32EnumAttrCase<"constant", 2>,
    I32EnumAttrCase<"normal", 3>,
    I32EnumAttrCase<"uniform", 4>,
    I32EnumAttrCase<"xavier_uniform", 5>,
    I32EnumAttrCase<"xavier_normal", 6>,
    I32EnumAttrCase<"kaiming_uniform", 7>,
    I32EnumAttrCase<"kaiming_normal", 8>,
    I32EnumAttrCase<"file", 9>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}

// Facts about a module and its arguments that passes and tools decide and
// read (discardable attributes, verified by the dialect):
// - `tg.phase = #tg<phase partition>`: the last of tgc's phases the module
//   went through;
// - `tg.precision = #tg<precision bf16>`: the policy tg-precision applied;
// - `tg.shard = #tg<shard zero3>` on a parameter: the model file's preset
//   for it, over the module's.
def Tg_IrPhase : I32EnumAttr<"IrPhase",
    "the last of tgc's phases a module went through", [
    I32EnumAttrCase<"import", 0>, I32EnumAttrCase<"precision", 1>,
    I32EnumAttrCase<"autodiff", 2>, I32EnumAttrCase<"optimizer", 3>,
    I32EnumAttrCase<"sharding", 4>, I32EnumAttrCase<"partition", 5>,
    I32EnumAttrCase<"pipeline", 6>, I32EnumAttrCase<"fusion", 7>,
    I32EnumAttrCase<"schedule", 8>, I32EnumAttrCase<"memory", 9>,
    I32EnumAttrCase<"layers", 10>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_IrPhaseAttr : EnumAttr<Tg_Dialect, Tg_IrPhase, "phase">;

// The precision policies tg-precision applies; fp16 and fp8 join when it
// can.
def Tg_PrecisionPolicy : I32EnumAttr<"PrecisionPolicy",
    "the precision policy of a module", [
    I32EnumAttrCase<"fp32", 0>, I32EnumAttrCase<"bf16", 1>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_PrecisionPolicyAttr : EnumAttr<Tg_Dialect, Tg_PrecisionPolicy,
                                      "precision">;

// tg-propagate-sharding's presets (passes/sharding/Passes.td says what each
// shards).
def Tg_ShardPreset : I32EnumAttr<"ShardPreset", "a sharding preset", [
    I32EnumAttrCase<"dp", 0>, I32EnumAttrCase<"zero1", 1>,
    I32EnumAttrCase<"zero2", 2>, I32EnumAttrCase<"zero3", 3>,
    I32EnumAttrCase<"tp", 4>, I32EnumAttrCase<"sp", 5>,
    I32EnumAttrCase<"megatron", 6>]> {
  let cppNamespace = "::mlir::tg";
  let genSpecializedAttr = 0;
}
def Tg_ShardPresetAttr : EnumAttr<Tg_Dialect, Tg_ShardPreset, "shard">;

// A double with a default, held as an APFloat (which hashes and compares
// bitwise), parsed and printed as a float literal.
class Tg_DoubleParameter<string default> :
    DefaultValuedParameter<"::llvm::APFloat", "::llvm::APFloat(" # default # ")"> {
  let comparator = "$_lhs.bitwiseIsEqual($_rhs)";
  let parser = [{ [&]() -> ::mlir::FailureOr<::llvm::APFloat> {
    double value;
    if ($_parser.parseFloat(value))
      return ::mlir::failure();
    return ::llvm::APFloat(value);
  }() }];
  let printer = [{ $_printer << $_self.convertToDouble() }];
}

def Tg_InitializerAttr : AttrDef<Tg_Dialect, "Initializer"> {
  let mnemonic = "init";
  let summary = "How a parameter's initial value is drawn";
  let description = [{
    Names the distribution of a parameter's initial value. Only the fields a
    kind reads are meaningful: `normal` reads `mean` and `std`; `uniform`
    reads `low` and `high`; `constant` reads `value`; the Xavier and Kaiming
    kinds read `gain` and compute fans from the shape (for a 2-D `[in, out]`
    weight fan_in = in and fan_out = out; for a conv weight `[O, I, kh, kw]`
    fan_in = I*kh*kw and fan_out = O*kh*kw); `file` reads the tensor `key` from
    the safetensors file `file`.

    ```mlir
    #tg.init<normal, std = 0.02>
    #tg.init<kaiming_uniform, gain = 1.0>
    #tg.init<file, file = "gpt2.safetensors", key = "wte.weight">
    ```
  }];
  let parameters = (ins
    "::mlir::tg::InitKind":$kind,
    Tg_DoubleParameter<"0.0">:$mean,
    Tg_DoubleParameter<"1.0">:$std,
    Tg_DoubleParameter<"-1.0">:$low,
    Tg_DoubleParameter<"1.0">:$high,
    Tg_DoubleParameter<"1.0">:$gain,
    Tg_DoubleParameter<"0.0">:$value,
    StringRefParameter<"safetensors file", "\"\"">:$file,
    StringRefParameter<"tensor name in the file", "\"\"">:$key
  );
  let assemblyFormat = [{
    `<` $kind (`,` struct($mean, $std, $low, $high, $gain, $value, $file, $key)^)? `>`
  }];
  let genVerifyDecl = 1;
}

def Tg_ArenaAttr : AttrDef<Tg_Dialect, "Arena"> {
  let mnemonic = "arena";
  let summary = "A function's memory plan: one arena, its peak and alignment";
  let description = [{
    tg-plan-memory places every buffer a function computes at an offset in
    one arena, which the backends allocate once: `bytes` is the arena's size
    (the plan's peak), `live` the most bytes live at once (a lower bound on
    any plan's peak, so `live <= bytes`), `alignment` the power of two every
    offset is a multiple of (64 for the C++ backend's vector loops, 256 for
    cuBLASLt's fastest kernels). On a planned function it is `tg.arena`;
    the offsets of its ops (their `#tg.place`, `tg.bucket_span` and
    `tg.scratch`) are checked against it: aligned, and their bytes inside.

    ```mlir
    func.func @train_step(...) attributes {
        tg.arena = #tg.arena<bytes = 4096, live = 3072, alignment = 64>}
    ```
  }];
  let parameters = (ins "int64_t":$bytes, "int64_t":$live,
                        "int64_t":$alignment);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tg_PlaceAttr : AttrDef<Tg_Dialect, "Place"> {
  let mnemonic = "place";
  let summary = "Where the memory plan puts each result of an op";
  let description = [{
    tg-plan-memory gives every op of a planned function that computes
    tensors its `tg.place`: for each result, in order, either an offset in
    the function's `#tg.arena` (the result's own bytes), `view N` (the
    result shares the bytes of operand N: a reshape, an optimizer update
    writing over its parameter, an all-reduce in place), or, in a layer
    body that tg-outline-layers built, `slot N` (the arena offset the
    body's caller passes at index N of its `tg.slot_offsets`). Constants
    have none: they are literals of the code or in the module's constants
    section (`tg.constant_offset`).

    The dialect checks each entry where it stands: an offset aligned and
    inside the arena with the result's bytes, a view of an operand that
    exists and holds at least the result's bytes, a slot only in a layer
    body and an offset never in one. tg-verify-memory checks what needs
    the lives of the values: that no two live buffers overlap.

    ```mlir
    %h = tg.reshape %x {tg.place = #tg.place<[view 0]>} : ...
    %y, %s = tg.kernel ... {tg.place = #tg.place<[0, 4096]>}
    ```
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::tg::ResultPlace",
                                          "each result's place">:$places);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The arena offset of result `n`, when it has bytes of its own there.
    std::optional<int64_t> arenaOffset(unsigned n) const;
    /// The operand result `n` is a view of, if it is one.
    std::optional<unsigned> viewedOperand(unsigned n) const;
    /// The slot of the caller's table that holds result `n`'s offset.
    std::optional<int64_t> slot(unsigned n) const;
  }];
}

def Tg_SpanAttr : AttrDef<Tg_Dialect, "Span"> {
  let mnemonic = "span";
  let summary = "Bytes of a function's arena an op keeps for itself";
  let description = [{
    `bytes` at `offset` of the function's `#tg.arena` that tg-plan-memory
    gives an op beyond its results: an all-reduce's bucket, where its
    gradients lie side by side for one message (`tg.bucket_span`), or the
    statistics an attention keeps for its gradient (`tg.scratch`). Checked
    against the arena like a result's place.

    ```mlir
    %g:2 = tg.all_reduce ... {tg.bucket_span = #tg.span<offset = 512, bytes = 2048>}
    ```
  }];
  let parameters = (ins "int64_t":$offset, "int64_t":$bytes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tg_LoraAdapterAttr : AttrDef<Tg_Dialect, "LoraAdapter"> {
  let mnemonic = "lora";
  let summary = "A weight's low-rank adapters, as tg-lora added them";
  let description = [{
    The parameters `a` (`[in, r]`) and `b` (`[r, out]`) that tg-lora gave
    the frozen weight `base`, which the step reads as `x @ base + (x @ a) @
    b * scale`, or with `transposed` as `x @ base^T + ...`. On the module
    in `tg.lora`, one per adapted weight: what an executable needs to merge
    the adapters into the weights it saves (`--save-final ... --merge-lora`:
    `base + scale * a @ b`, transposed as `base` is).

    ```mlir
    module attributes {tg.lora = [#tg.lora<base = "h.0.attn.c_attn.weight",
        a = "h.0.attn.c_attn.lora_A", b = "h.0.attn.c_attn.lora_B",
        scale = 2.0, transposed = false>]}
    ```
  }];
  let parameters = (ins StringRefParameter<"the adapted weight">:$base,
                        StringRefParameter<"the adapter A">:$a,
                        StringRefParameter<"the adapter B">:$b,
                        Tg_DoubleParameter<"1.0">:$scale,
                        "bool":$transposed);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tg_ConstantsAttr : AttrDef<Tg_Dialect, "Constants"> {
  let mnemonic = "constants";
  let summary = "A module's constants section: the constants read from memory";
  let description = [{
    Most constants of a step are literals in the code a backend prints (a
    splat an elementwise kernel reads, a classifier's unit gradient seed);
    the others are read from memory. tg-place-constants lays those out in
    one section of the module, which a backend uploads once: `bytes` is its
    size, `alignment` the power of two each constant's offset is a multiple
    of. On the module it is `tg.constants`; each placed `tg.constant` has
    its offset, `tg.constant_offset`, checked against it: aligned, inside,
    and overlapping no other.

    ```mlir
    module attributes {tg.constants = #tg.constants<bytes = 512, alignment = 256>} {
      ...
      %table = tg.constant {tg.constant_offset = 256 : i64} dense<[...]> : tensor<6xf32>
    ```
  }];
  let parameters = (ins "int64_t":$bytes, "int64_t":$alignment);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tg_ShardingAttr : AttrDef<Tg_Dialect, "Sharding"> {
  let mnemonic = "sharding";
  let summary = "How a tensor is split over the axes of a device mesh";
  let description = [{
    Axis-based, as Shardy's: for each dimension of the tensor, the axes of
    the mesh `@mesh` that split it, major to minor (`{}`: not split); and
    the axes over which the tensor is a partial sum (each process holds a
    term; the value is their sum). An axis that appears nowhere replicates
    the tensor over it. An axis appears at most once, and the product of the
    sizes of a dimension's axes divides the dimension.

    ```mlir
    tg.mesh @mesh ["data" = 2, "tp" = 4]
    // rows split over data, columns over tp
    #tg.sharding<@mesh, [{"data"}, {"tp"} ]>
    // rows split over data and tp, data major
    #tg.sharding<@mesh, [{"data", "tp"}, {} ]>
    // replicated rows and columns, each tp process holding a term of the sum
    #tg.sharding<@mesh, [{}, {} ], partial = {"tp"}>
    ```

    On function arguments and results it is the `tg.sharding` attribute; on
    ops, `tg.sharding` holds one per result. `tg.sharding_origin` beside it
    says where each came from (`pin: ...`, `preset zero3`, `propagated from
    %arg0 by tg.matmul`).
  }];
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    "::mlir::ArrayAttr":$dims,
    "::mlir::ArrayAttr":$partial
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// One list of axis names per dimension, and the partial axes.
    static ShardingAttr get(::mlir::MLIRContext *context,
                            ::llvm::StringRef mesh,
                            ::llvm::ArrayRef<::llvm::SmallVector<::llvm::StringRef>> dims,
                            ::llvm::ArrayRef<::llvm::StringRef> partial = {});
    /// Not split and not partial over any axis.
    static ShardingAttr replicated(::mlir::MLIRContext *context,
                                   ::llvm::StringRef mesh, int64_t rank);
    int64_t getRank() const { return getDims().size(); }
    /// The axes that split dimension `dim`, major to minor.
    ::llvm::SmallVector<::llvm::StringRef> axesOf(int64_t dim) const;
    ::llvm::SmallVector<::llvm::StringRef> partialAxes() const;
    /// Which dimension `axis` splits, -1 when none.
    int64_t dimOf(::llvm::StringRef axis) const;
    bool isPartial() const { return !getPartial().empty(); }
    /// Neither split nor partial.
    bool isReplicated() const;
    /// The same split without the partial axes.
    ShardingAttr withoutPartial() const;
  }];
}

#endif // TG_ATTRS_TD
