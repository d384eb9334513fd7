//===- TgAttrs.td - tg dialect attributes ------------------*- tablegen -*-===//
//
// Attributes of the tg dialect: parameter initializers.
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

#endif // TG_ATTRS_TD
