//===- tg-translate.cpp - Model files to tg IR and back ---------*- C++ -*-===//
//
// tg-translate --import-model FILE prints the tg IR of a model file (JSON or
// binary .tgm); tg-translate --export-model FILE.mlir writes tg IR back as a
// model file; --emit-cpp and --emit-cuda print the C++ or CUDA source of
// planned tg IR (tgc --compile-to=layers), as tgc --emit=cpp and
// --emit=cuda do after their passes: the emitters are translations, which
// run on any planned IR, hand-written or edited. Diagnostics point into the
// input (line and column for JSON and MLIR) and the exit code is 1 on any
// error.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/EmitCpp.h"
#include "compiler/codegen/EmitCuda.h"
#include "dialects/tg/IR/TgDialect.h"
#include "frontend/ModelFile.h"
#include "frontend/onnx/OnnxImport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;

#if LLVM_ADDRESS_SANITIZER_BUILD
// With TGC_SANITIZE, this tool is instrumented but Debian's LLVM and MLIR
// libraries are not. The allocators' inline code in LLVM's headers then comes
// in two copies: the instrumented one poisons a new slab, the library's never
// unpoisons what it hands out, and ASan reports a use-after-poison inside
// MLIRContext's constructor. Manual poisoning is off; ASan still checks every
// access against the heap, stack and globals it tracks itself.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}
#endif

namespace {

enum class Action {
  None,
  ImportModel,
  ImportOnnx,
  ExportModel,
  EmitCpp,
  EmitCuda
};
enum class FormatOption { Auto, Json, Tgm };

llvm::cl::OptionCategory toolCategory("tg-translate options");
llvm::cl::OptionCategory
    printingCategory("IR printing options (of --import-model)");

llvm::cl::opt<Action> action(
    llvm::cl::desc("What to do (one is required):"),
    llvm::cl::init(Action::None),
    llvm::cl::values(
        clEnumValN(Action::ImportModel, "import-model",
                   "Read a model file (.json or .tgm; the input, '-' for "
                   "stdin) and print its tg IR"),
        clEnumValN(Action::ImportOnnx, "import-onnx",
                   "Read an ONNX model (torch.onnx.export, opsets 13-17), "
                   "translate it into a model file, write its parameters' "
                   "values (--weights) and print its tg IR"),
        clEnumValN(Action::ExportModel, "export-model",
                   "Read tg IR (as --import-model prints it) and write it as "
                   "a model file"),
        clEnumValN(Action::EmitCpp, "emit-cpp",
                   "Read planned tg IR (tgc --compile-to=layers) and write "
                   "its C++ source, as tgc --emit=cpp does"),
        clEnumValN(Action::EmitCuda, "emit-cuda",
                   "Read planned tg IR (tgc --target=cuda "
                   "--compile-to=layers) and write its CUDA source, as the "
                   ".cu of tgc --emit=cuda")),
    llvm::cl::cat(toolCategory));

llvm::cl::opt<std::string> onnxWeights(
    "weights",
    llvm::cl::desc("With --import-onnx: the safetensors file the parameters' "
                   "values are written to (default: the input's path + "
                   ".safetensors)"),
    llvm::cl::value_desc("file"), llvm::cl::cat(toolCategory));
llvm::cl::opt<std::string> onnxModelOut(
    "model-out",
    llvm::cl::desc("With --import-onnx: also write the translated model "
                   "file (JSON) here"),
    llvm::cl::value_desc("file"), llvm::cl::cat(toolCategory));
llvm::cl::opt<std::string> onnxLoss(
    "loss",
    llvm::cl::desc("With --import-onnx, for a forward-only export: the loss "
                   "over its first output, cross_entropy or mse"),
    llvm::cl::cat(toolCategory));
llvm::cl::opt<std::string> onnxLabelInput(
    "label-input",
    llvm::cl::desc("With --loss: the new batch input of the labels"),
    llvm::cl::cat(toolCategory));
llvm::cl::opt<int64_t> onnxBatch(
    "batch-size",
    llvm::cl::desc("With --import-onnx: fixes a dynamic first input dim"),
    llvm::cl::init(0), llvm::cl::cat(toolCategory));

llvm::cl::opt<std::string> sourceName(
    "source-name",
    llvm::cl::desc("With --emit-cpp or --emit-cuda: the model file the IR came "
                   "from, named in the source's comments (default: the "
                   "input's name)"),
    llvm::cl::cat(toolCategory));

llvm::cl::opt<unsigned> opsPerFunction(
    "ops-per-function",
    llvm::cl::desc("With --emit-cpp or --emit-cuda: a step function of more "
                   "ops (launches) is written in parts of at most this many, "
                   "as tgc's flag of that name (default: as tgc)"),
    llvm::cl::cat(toolCategory));

llvm::cl::opt<FormatOption> modelFormat(
    "model-format",
    llvm::cl::desc("The model file encoding (default: auto; --import-model "
                   "guesses from the extension, then from the 'TGM1' "
                   "identifier; --export-model writes tgm when -o ends in "
                   ".tgm, else json)"),
    llvm::cl::init(FormatOption::Auto),
    llvm::cl::values(clEnumValN(FormatOption::Auto, "auto", "Guess"),
                     clEnumValN(FormatOption::Json, "json", "JSON text"),
                     clEnumValN(FormatOption::Tgm, "tgm",
                                "Binary FlatBuffers (.tgm)")),
    llvm::cl::cat(toolCategory));

llvm::cl::opt<std::string> inputFilename(llvm::cl::Positional,
                                         llvm::cl::desc("<input file>"),
                                         llvm::cl::init("-"),
                                         llvm::cl::cat(toolCategory));

llvm::cl::opt<std::string> outputFilename("o",
                                          llvm::cl::desc("Output file name "
                                                         "(default: stdout)"),
                                          llvm::cl::value_desc("filename"),
                                          llvm::cl::init("-"),
                                          llvm::cl::cat(toolCategory));

llvm::cl::opt<bool> splitInputFile(
    "split-input-file",
    llvm::cl::desc("Split the input at '// -----' lines and translate each "
                   "chunk on its own (JSON model files may hold // comments)"),
    llvm::cl::init(false), llvm::cl::cat(toolCategory));

} // namespace

/// --emit-cpp, --emit-cuda: the source of planned IR, which the passes
/// have taken to tgc's last phase.
static LogicalResult emitSource(ModuleOp module, StringRef inputName,
                                llvm::raw_ostream &os) {
  std::optional<tg::IrPhase> phase = tg::recordedPhase(module);
  if (phase != tg::IrPhase::layers)
    return emitError(module.getLoc())
           << "the emitters take planned tg IR, after tgc's last phase "
              "(tgc --compile-to=layers); this module is "
           << (phase
                   ? "after phase '" + tg::stringifyIrPhase(*phase).str() + "'"
                   : std::string("of no phase (no tg.phase)"));
  std::string from = sourceName.getNumOccurrences()
                         ? sourceName.getValue()
                         : llvm::sys::path::filename(inputName).str();
  unsigned parts = opsPerFunction.getNumOccurrences()
                       ? std::max(1u, opsPerFunction.getValue())
                       : 0;
  if (action == Action::EmitCpp) {
    tg::CppEmitOptions options;
    options.sourceName = from;
    if (parts)
      options.opsPerFunction = parts;
    return tg::emitCpp(module, os, options);
  }
  tg::CudaEmitOptions options;
  options.sourceName = from;
  if (StringRef precision = tg::appliedPrecision(module); !precision.empty())
    options.precision = precision.str();
  if (parts)
    options.launchesPerFunction = parts;
  return tg::emitCuda(module, os, options);
}

/// Translates one buffer (the whole input, or one chunk of it).
static LogicalResult translate(std::unique_ptr<llvm::MemoryBuffer> buffer,
                               llvm::raw_ostream &os) {
  DialectRegistry registry;
  registry.insert<tg::TgDialect, func::FuncDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  const llvm::MemoryBuffer *input =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  StringRef name = input->getBufferIdentifier();
  StringRef contents = input->getBuffer();

  if (action == Action::ImportOnnx) {
    if (name == "<stdin>")
      return emitError(UnknownLoc::get(&context))
             << "--import-onnx reads a file (its external data lies beside "
                "it), not stdin";
    tg::OnnxImportOptions options;
    options.weightsPath = onnxWeights;
    options.modelOut = onnxModelOut;
    options.loss = onnxLoss;
    options.labelInput = onnxLabelInput;
    tg::ImportOptions importOptions;
    if (onnxBatch > 0)
      importOptions.batchSize = onnxBatch;
    OwningOpRef<ModuleOp> module =
        tg::importOnnxFile(name, &context, options, importOptions);
    if (!module)
      return failure();
    module->print(os, OpPrintingFlags());
    os << "\n";
    return success();
  }
  if (action == Action::ImportModel) {
    tg::ModelFileFormat format = modelFormat == FormatOption::Json
                                     ? tg::ModelFileFormat::Json
                                 : modelFormat == FormatOption::Tgm
                                     ? tg::ModelFileFormat::Binary
                                     : tg::guessModelFileFormat(name, contents);
    OwningOpRef<ModuleOp> module =
        tg::importModel(name, contents, format, &context);
    if (!module)
      return failure();
    module->print(os, OpPrintingFlags());
    os << "\n";
    return success();
  }

  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return failure();
  if (action == Action::EmitCpp || action == Action::EmitCuda)
    return emitSource(*module, name, os);
  tg::ModelFileFormat format =
      modelFormat == FormatOption::Tgm ? tg::ModelFileFormat::Binary
      : modelFormat == FormatOption::Json
          ? tg::ModelFileFormat::Json
          : (StringRef(outputFilename).ends_with_insensitive(".tgm")
                 ? tg::ModelFileFormat::Binary
                 : tg::ModelFileFormat::Json);
  return tg::exportModel(*module, format, os);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  // --help lists this tool's options and the IR printing ones, not the
  // hundreds that LLVM's libraries register.
  llvm::cl::HideUnrelatedOptions({&toolCategory, &printingCategory});
  for (StringRef name : {"mlir-print-debuginfo", "mlir-pretty-debuginfo",
                         "mlir-print-local-scope", "mlir-print-op-generic",
                         "mlir-elide-elementsattrs-if-larger"}) {
    auto it = llvm::cl::getRegisteredOptions().find(name);
    if (it == llvm::cl::getRegisteredOptions().end())
      continue;
    it->second->addCategory(printingCategory);
    it->second->setHiddenFlag(llvm::cl::NotHidden);
  }
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "tg-translate: converts between tgc model files (.json, .tgm) and tg "
      "IR, and planned tg IR to C++ or CUDA source\n\n"
      "  tg-translate --import-model model.json            print the tg IR\n"
      "  tg-translate --import-onnx model.onnx             the same, from "
      "ONNX\n"
      "  tg-translate --export-model in.mlir -o model.tgm  write a model "
      "file\n"
      "  tg-translate --emit-cpp planned.mlir -o step.cpp   the C++ source\n"
      "  tg-translate --emit-cuda planned.mlir -o step.cu   the CUDA source\n");

  if (action == Action::None) {
    llvm::WithColor::error(llvm::errs(), "tg-translate")
        << "pass --import-model, --import-onnx, --export-model, --emit-cpp "
           "or --emit-cuda "
           "(see --help)\n";
    return 1;
  }

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      openInputFile(inputFilename, &error);
  if (!input) {
    llvm::WithColor::error(llvm::errs(), "tg-translate") << error << "\n";
    return 1;
  }

  // The result goes to a string first so that a failed export leaves no
  // partial output file behind.
  std::string result;
  llvm::raw_string_ostream os(result);
  // A chunk of a split input is padded with the whitespace it replaces, so
  // that line and column numbers in diagnostics are those of the whole file.
  size_t cursor = 0;
  auto processChunk = [&](std::unique_ptr<llvm::MemoryBuffer> chunk,
                          const llvm::MemoryBufferRef &source,
                          raw_ostream &os) {
    StringRef whole = source.getBuffer(), text = chunk->getBuffer();
    size_t at = whole.find(text, cursor);
    if (at == StringRef::npos)
      return translate(std::move(chunk), os);
    cursor = at + text.size();
    StringRef before = whole.take_front(at);
    size_t lineStart = before.rfind('\n');
    lineStart = lineStart == StringRef::npos ? 0 : lineStart + 1;
    std::string padded(before.count('\n'), '\n');
    padded.append(at - lineStart, ' ');
    padded.append(text.begin(), text.end());
    return translate(llvm::MemoryBuffer::getMemBufferCopy(
                         padded, source.getBufferIdentifier()),
                     os);
  };
  if (failed(splitAndProcessBuffer(std::move(input), processChunk, os,
                                   splitInputFile ? kDefaultSplitMarker : "",
                                   splitInputFile ? "// -----" : "")))
    return 1;

  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::WithColor::error(llvm::errs(), "tg-translate") << error << "\n";
    return 1;
  }
  output->os() << result;
  output->keep();
  return 0;
}
