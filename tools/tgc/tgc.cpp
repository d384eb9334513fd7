//===- tgc.cpp - The tgc driver: model file to training executable -*- C++ -*-===//
//
// Runs a model through the phases of compiler/pipeline/Pipeline.h: import
// (model file or tg IR), autodiff, optimizer, then emits the step as C++
// (CPU) or CUDA and builds the training executable with the host compiler or
// nvcc (or, --simt, the CUDA executable for this host: the host compiler on
// the .cu rewritten by runtime/cuda/simt). It can stop after any phase
// (--compile-to, --emit) and start from IR that has been through one
// (--compile-from), and takes mlir-opt's IR printing and timing flags
// (--mlir-print-ir-after-all, --mlir-timing).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/EmitCpp.h"
#include "compiler/codegen/EmitCuda.h"
#include "compiler/pipeline/BuildCache.h"
#include "compiler/pipeline/HostCompile.h"
#include "compiler/pipeline/MemoryReport.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/pipeline/PlanSearch.h"
#include "compiler/pipeline/ShardingReport.h"
#include "dialects/tg/IR/TgDialect.h"
#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "frontend/ModelFile.h"
#include "frontend/onnx/OnnxImport.h"
#include "passes/pipeline/Chunks.h"
#include "passes/precision/Passes.h"
#include "passes/sharding/AutoPartitioner.h"
#include "passes/sharding/Sharding.h"
#include "llvm/Support/JSON.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <functional>
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::tg;
namespace cl = llvm::cl;

namespace {

/// Where temporary files go ($TMPDIR, else /tmp), for messages.
std::string temporaryDirectory() {
  SmallString<128> dir;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, dir);
  return dir.str().str();
}

cl::OptionCategory tgcCategory("tgc options");
cl::OptionCategory trainingCategory(
    "Training overrides (the model file's training table)");

cl::opt<std::string>
    inputFile(cl::Positional, cl::Required,
              cl::desc("<model.json | model.tgm | model.onnx | file.mlir>"),
              cl::cat(tgcCategory));
/// The input as given: an ONNX model's translation replaces inputFile, but
/// the executable is named after the model.
std::string givenInput;
cl::opt<std::string> outputFile(
    "o",
    cl::desc("Output: the executable (default: the model file's name "
             "without extension), the source, the IR (default: stdout), or "
             "with --emit=cuda a directory (default: NAME-cuda)"),
    cl::value_desc("file"), cl::cat(tgcCategory));

enum class EmitKind { Mlir, Cpp, Cuda, Exe };
cl::opt<EmitKind> emit(
    "emit", cl::desc("What to write"), cl::init(EmitKind::Exe),
    cl::values(clEnumValN(EmitKind::Mlir, "mlir",
                          "tg IR (after --compile-to, default: import)"),
               clEnumValN(EmitKind::Cpp, "cpp",
                          "the generated C++ source of the training step"),
               clEnumValN(EmitKind::Cuda, "cuda",
                          "a directory that builds the CUDA executable "
                          "without tgc: NAME.cu, CMakeLists.txt (runtime from "
                          "source) and NAME.manifest.json"),
               clEnumValN(EmitKind::Exe, "exe",
                          "the training executable (default)")),
    cl::cat(tgcCategory));
cl::opt<std::string> compileTo(
    "compile-to",
    cl::desc("Stop after this phase and print its IR: import, precision, "
             "autodiff, optimizer, sharding, partition, pipeline (with "
             "--pipeline-stages: the chunks and each stage's actions), "
             "fusion, schedule, memory, layers (the CPU step's repeated "
             "layers as calls of one body each; source and executable as "
             "--emit=cpp and exe)"),
    cl::value_desc("phase"), cl::cat(tgcCategory));
cl::opt<std::string> compileFrom(
    "compile-from",
    cl::desc("The phase a .mlir input has been through (default: import, or "
             "what its functions show)"),
    cl::value_desc("phase"), cl::cat(tgcCategory));
cl::opt<std::string> report(
    "report",
    cl::desc("memory: compile to the memory phase and print the plan: the "
             "arena's peak beside its lower bound, and bytes by category "
             "(as the --target's backend lays it out; pipelined, each "
             "stage's: its parameters, state, gradient sums, the slot "
             "buffers its schedule keeps and its largest arena); sharding: "
             "the plan's "
             "modelled cost beside the standard plans; pipeline (with "
             "--pipeline-stages): each stage's actions under "
             "--pipeline-schedule, played on the cost model's per-chunk "
             "times: the step, each stage's bubble and what it holds"),
    cl::value_desc("kind"), cl::cat(tgcCategory));
cl::opt<std::string> reportPlot(
    "report-plot",
    cl::desc("with --report=memory: draw the bytes live over @train_step "
             "as an SVG picture in this file, a curve per remat policy "
             "(none, selective, full and the one chosen); with "
             "--report=pipeline: the schedule's timeline, a row per stage"),
    cl::value_desc("file.svg"), cl::cat(tgcCategory));
cl::opt<std::string> fusionRules(
    "fusion",
    cl::desc("tg-fuse's rules: none, elementwise or all (default), as "
             "far as the target's backend prints them (tg-fuse's target: "
             "cpu, or cuda with --target=cuda and --emit=cuda)"),
    cl::init("all"), cl::value_desc("rules"), cl::cat(tgcCategory));
cl::opt<std::string> rematPolicy(
    "remat",
    cl::desc("tg-remat: none (default); selective (recompute cheap forward "
             "values, GELU, layer norm and dropout outputs, where that keeps "
             "nothing else alive longer); full (each layer keeps only its "
             "input); auto (the fewest added FLOPs under --memory-budget)"),
    cl::init("none"), cl::value_desc("policy"), cl::cat(tgcCategory));
cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("The planned peak of the step must fit this (bytes, or with a "
             "unit: 12GB, 10GiB, 512MiB); implies --remat=auto. Default: "
             "the training table's memory_budget"),
    cl::value_desc("size"), cl::cat(tgcCategory));
cl::opt<std::string> batchSizeFlag(
    "batch-size",
    cl::desc("The micro-batch (dims named \"batch\" take it): a number, or "
             "auto: the largest that fits --device-memory with the chosen "
             "--remat, with gradient accumulation to the model file's global "
             "batch (batch_size x grad_accum)"),
    cl::value_desc("N|auto"), cl::cat(tgcCategory));
cl::opt<std::string> deviceMemory(
    "device-memory",
    cl::desc("--batch-size=auto: the memory of one device (12GB, 80GiB); "
             "default the training table's memory_budget"),
    cl::value_desc("size"), cl::cat(tgcCategory));
cl::opt<std::string> rematSolver(
    "remat-solver",
    cl::desc("--remat=auto: auto (default): each choice judged by the "
             "peak it plans to; every choice planned on a step of at most 10 "
             "ops that may run again (the same op of every layer counted "
             "once), with the search beside it where layers are, else the "
             "search alone, as min-cut: the min-cut's choices over the bytes "
             "kept, then ops (each layer's on its own, so layers may "
             "differ) added and dropped by peak; exact: CBC's "
             "fewest FLOPs "
             "(each distinct layer's, or the whole graph's) for each "
             "activation budget tgc tries, judged by bytes kept, as a "
             "pipelined step is budgeted"),
    cl::init("auto"), cl::value_desc("solver"), cl::cat(tgcCategory));
cl::opt<std::string> target(
    "target",
    cl::desc("Where the step runs: cpu (default; C++ with OpenMP and "
             "OpenBLAS) or cuda (NVIDIA GPUs; built with nvcc, or with "
             "--simt for this host)"),
    cl::cat(tgcCategory));
cl::opt<std::string> precision(
    "precision",
    cl::desc("fp32 or bf16 (bf16 compute, fp32 master weights, optimizer "
             "state and loss). cuda: default the model file's training "
             "precision, else bf16; cpu: fp32 only"),
    cl::value_desc("policy"), cl::cat(tgcCategory));
cl::opt<bool> simt(
    "simt",
    cl::desc("With --target=cuda: build the CUDA executable for this host, "
             "without a GPU or nvcc (runtime/cuda/simt): the .cu as "
             "--target=cuda writes it, compiled by the host C++ compiler with "
             "every CUDA thread a fiber, linked against host stand-ins of the "
             "CUDA runtime, cuBLASLt and NCCL (over MPI). Slow; it runs the "
             "CUDA code at its real launch configurations, for tests"),
    cl::cat(tgcCategory));
cl::opt<std::string> cudaArch(
    "cuda-arch",
    cl::desc("GPU architecture for --target=cuda (nvcc's -arch; default "
             "sm_90: H100/H200)"),
    cl::init("sm_90"), cl::value_desc("sm_XX"), cl::cat(tgcCategory));
cl::opt<double> bucketMiB(
    "allreduce-bucket-mb",
    cl::desc("Data parallel: gradients are all-reduced in buckets of about "
             "this many MiB (tg-schedule), each as soon as the backward has "
             "written it (default 25)"),
    cl::init(25.0), cl::value_desc("MiB"), cl::cat(tgcCategory));
cl::opt<unsigned> optLevel(
    "opt-level",
    cl::desc("Host compiler optimization level for the executable (0-3; "
             "default 3, but 1 for a CUDA executable, whose host code only "
             "launches kernels: nvcc optimizes device code either way, and "
             "-O3 on a deep model's launch code takes minutes)"),
    cl::init(3), cl::cat(tgcCategory));
cl::opt<unsigned> opsPerFunction(
    "ops-per-function",
    cl::desc("The generated source splits a step of more ops (C++) or "
             "launches (CUDA) into functions of at most this many, so that "
             "the host compiler's time grows linearly with the model's depth "
             "(default 64 ops, 256 launches; a layer body's call counts a "
             "quarter of its arguments and results, and on CUDA a "
             "multi-tensor update a quarter of its tensors)"),
    cl::cat(tgcCategory));
cl::opt<bool> outlineLayers(
    "outline-layers",
    cl::desc("Print each distinct layer body once and call it per layer "
             "(tg-outline-layers, the layers phase). "
             "--outline-layers=false prints every layer's ops inline"),
    cl::init(true), cl::cat(tgcCategory));
cl::opt<bool> buildCache(
    "build-cache",
    cl::desc("Reuse the objects of units (each layer body, the steps) "
             "compiled before with the same compiler, flags and runtime "
             "headers, and their precompiled common headers, from "
             "$TGC_CACHE_DIR, else $XDG_CACHE_HOME/tgc, else "
             "~/.cache/tgc (default on; --build-cache=false compiles all)"),
    cl::init(true), cl::cat(tgcCategory));
cl::opt<std::string> buildCacheSize(
    "build-cache-size",
    cl::desc("The build cache keeps at most this many bytes, dropping the "
             "least recently used objects (default 2GiB)"),
    cl::init("2GiB"), cl::value_desc("size"), cl::cat(tgcCategory));
cl::opt<bool> saveTemps(
    "save-temps",
    cl::desc("Keep the generated source next to the executable (the "
             "program's units and objects in EXE.units/; a CUDA program also "
             "as one file, EXE.cu; with --simt EXE.cu and EXE.simt.cpp, the "
             ".cu rewritten)"),
    cl::cat(tgcCategory));
cl::opt<bool> verbose("v",
                      cl::desc("Print the host compiler (or nvcc) command "
                               "(with --simt, the rewrite's too)"),
                      cl::cat(tgcCategory));

cl::OptionCategory onnxCategory(
    "ONNX models (tgc model.onnx: translated into model.onnx.json and "
    "model.onnx.safetensors, the parameters' values, then compiled)");
cl::opt<std::string> onnxLoss(
    "loss",
    cl::desc("The loss of a forward-only export, over its first output: "
             "cross_entropy (logits [..., classes] and integer labels) or "
             "mse (default: the graph's scalar output is the loss)"),
    cl::value_desc("cross_entropy|mse"), cl::cat(onnxCategory));
cl::opt<std::string> onnxLabelInput(
    "label-input",
    cl::desc("With --loss: the name of the new batch input of the labels"),
    cl::value_desc("name"), cl::cat(onnxCategory));
cl::opt<std::string> onnxTraining(
    "training",
    cl::desc("The training table, a JSON file in the model file's form "
             "({\"optimizer\": {\"kind\": \"adamw\", \"lr\": 3e-4}, "
             "\"steps\": 1000, ...}); --optimizer and --lr override it"),
    cl::value_desc("file"), cl::cat(onnxCategory));
cl::opt<double> onnxLr("lr",
                       cl::desc("The learning rate of the training table"),
                       cl::init(-1.0), cl::cat(onnxCategory));
cl::opt<bool> raiseFlag(
    "raise",
    cl::desc("tg-raise: attention and GELU written out op by op become "
             "tg.attention and tg.gelu (default: on for ONNX models, off "
             "for model files and IR)"),
    cl::cat(onnxCategory));
cl::opt<std::string> onnxPrefix(
    "onnx-prefix",
    cl::desc("Write the translation to PATH.json and PATH.safetensors "
             "(default: beside the ONNX file, MODEL.onnx.json and "
             "MODEL.onnx.safetensors)"),
    cl::value_desc("path"), cl::cat(onnxCategory));

cl::opt<std::string> optimizer(
    "optimizer",
    cl::desc("sgd, adam, adamw, rmsprop, adagrad, lamb or lion"),
    cl::cat(trainingCategory));
cl::opt<std::string> schedule(
    "schedule", cl::desc("constant, cosine, linear, step, cyclic or wsd"),
    cl::cat(trainingCategory));
cl::opt<int64_t> totalSteps("total-steps",
                            cl::desc("Length of the LR schedule"),
                            cl::init(0), cl::cat(trainingCategory));
cl::opt<int64_t> warmupSteps("warmup-steps", cl::desc("LR warmup steps"),
                             cl::init(-1), cl::cat(trainingCategory));
cl::opt<double> weightDecay("weight-decay", cl::desc("Weight decay"),
                            cl::init(-1.0), cl::cat(trainingCategory));
cl::opt<double> clipGradNorm(
    "clip-grad-norm", cl::desc("Clip gradients to this global norm (0: off)"),
    cl::init(-1.0), cl::cat(trainingCategory));
cl::list<std::string>
    freeze("freeze",
           cl::desc("Freeze the parameters whose names match this glob (h.0.*, "
                    "wte.weight, *.bias; repeatable), as the model file's "
                    "\"trainable\": false does: no gradient, no update, no "
                    "optimizer state (tg-freeze)"),
           cl::value_desc("pattern"), cl::cat(trainingCategory));
cl::opt<std::string> loraFlag(
    "lora",
    cl::desc("Fine-tune with low-rank adapters (tg-lora): "
             "r=RANK,alpha=ALPHA,targets=MODULE,... (default r=8, alpha=8): "
             "each weight of a target module (c_attn names every layer's "
             "attn.c_attn) gets A and B, B starting at zero, and every other "
             "parameter is frozen"),
    cl::value_desc("r=8,alpha=16,targets=c_attn,c_proj"),
    cl::cat(trainingCategory));
cl::opt<int64_t> gradAccum(
    "grad-accum",
    cl::desc("Compile for gradient accumulation over micro-batches (> 1 lets "
             "the executable's --batch-size be a multiple of the model's "
             "batch)"),
    cl::init(0), cl::cat(trainingCategory));
cl::opt<std::string> meshFlag(
    "mesh",
    cl::desc("The device mesh the executable runs on, as named axes with "
             "sizes: data=2, data=2,tp=2 (default: the training table's "
             "mesh, else one process). The batch is split over the axes "
             "named data or dp; an axis pp holds pipeline stages "
             "(--pipeline-stages), each a copy of the other axes; a run starts "
             "exactly as many processes as "
             "the mesh has. data=auto (elastic data parallel): the data "
             "axis takes its size from the process count at launch (any "
             "multiple of the other axes' product), nothing but the batch "
             "is split over it (dp, tp or sp), and the plan is priced for "
             "2 replicas"),
    cl::value_desc("axis=size,..."), cl::cat(trainingCategory));
cl::opt<std::string> shardPreset(
    "shard",
    cl::desc("How parameters and optimizer state are sharded where nothing "
             "pins them (default: tp when the mesh has a tp axis, else dp): "
             "dp (whole on every process), "
             "zero1 (optimizer state split), zero2 (and gradients reduced "
             "to the pieces), zero3 (and parameters split, gathered where "
             "read), tp (matrices split over the axis tp, Megatron-LM's "
             "column- then row-parallel layers, attention split by heads "
             "(fused QKV weights too) and vocabulary-parallel "
             "embedding and cross-entropy), sp (tp, with the "
             "activations between them split along the sequence), megatron "
             "(sp with Megatron-LM's distributed optimizer: state split over "
             "the data axes, gradients reduce-scattered once per step)"),
    cl::cat(trainingCategory));

cl::OptionCategory planCategory("Sharding plans (--auto-shard, "
                                "--report=sharding)");
cl::opt<bool> autoShard(
    "auto-shard",
    cl::desc("Choose the shardings by cost: tg-auto-shard's solver plans "
             "the step on the --cluster's cost model under --memory-limit "
             "(the model file's pins kept; its search also starts from the "
             "standard plans), and the fastest plan that fits among its and "
             "the standard ones (dp, zero3, tp x dp, tp+sp x dp, megatron, "
             "as --allow-strategies allows), each priced on the compiled "
             "step, is built"),
    cl::cat(planCategory));
cl::opt<std::string> autoPartitionerFlag(
    "auto-partitioner",
    cl::desc("--auto-shard: the automatic partitioner that plans the step, "
             "by name (tgc: tg-auto-shard; a pass plugin, --load-pass-plugin, "
             "registers its own)"),
    cl::init("tgc"), cl::value_desc("name"), cl::cat(planCategory));
cl::list<std::string>
    passPlugins("load-pass-plugin",
                cl::desc("Load a pass plugin (a shared library exporting "
                         "mlirGetPassPluginInfo): its passes and the automatic "
                         "partitioners it registers (repeatable)"),
                cl::value_desc("file.so"), cl::cat(planCategory));
cl::opt<bool> solverOnly(
    "solver-plan",
    cl::desc("--auto-shard: build the solver's plan even where a standard "
             "plan is modelled faster (to inspect or measure it)"),
    cl::cat(planCategory));
cl::opt<std::string> clusterFlag(
    "cluster",
    cl::desc("The cluster the cost model prices: a shipped spec "
             "(h100-sxm-8, h200-8, a100-8, cpu-local; see "
             "planning/cost/clusters/README.md) or a JSON file (default "
             "cpu-local, with --target=cuda h100-sxm-8)"),
    cl::value_desc("name|file.json"), cl::cat(planCategory));
cl::opt<std::string> memoryLimitFlag(
    "memory-limit",
    cl::desc("--auto-shard and --report=sharding: the bytes one device may "
             "hold (12GB, 80GiB; default the cluster's device memory)"),
    cl::value_desc("size"), cl::cat(planCategory));
cl::opt<std::string> allowStrategies(
    "allow-strategies",
    cl::desc("--auto-shard: what the solver may choose, comma separated: "
             "dp (the batch over the data axes, always), zero (state, "
             "gradients and parameters split over the data axes), tp (the "
             "other axes split weights and activations); default all"),
    cl::init("dp,zero,tp"), cl::value_desc("list"), cl::cat(planCategory));
cl::opt<uint64_t> shardSeed("shard-seed",
                            cl::desc("--auto-shard: the solver's seed"),
                            cl::init(0), cl::cat(planCategory));
cl::opt<double> shardTimeLimit(
    "shard-time-limit",
    cl::desc("--auto-shard: seconds the solver may search (default 10)"),
    cl::init(10), cl::cat(planCategory));
cl::opt<bool> shardPerLayer(
    "shard-per-layer",
    cl::desc("--auto-shard: let each repeated layer (h.0.*, h.1.*, ... in "
             "the model file) choose its own shardings; by default each "
             "layer's node is tied to the same node of the layer before, so "
             "the solver plans one layer for the stack and its time does not "
             "grow with depth"),
    cl::init(false), cl::cat(planCategory));
cl::opt<std::string> pipelineStagesText(
    "pipeline-stages",
    cl::desc("run the step as P pipeline stages, the repeated layers "
             "split into P consecutive groups, each stage a copy of the "
             "--mesh (P x its processes: mpirun -np P with no mesh); the "
             "same as a mesh axis pp=P (--mesh=pp=2,data=2). "
             "--report=sharding, --auto-shard, --compare-plans price it as "
             "built, and both targets build it (default 1). auto, with "
             "--auto-shard: the stages come out of the mesh's data axis "
             "(P dividing it, the accumulation P times as long, so the "
             "global batch stays), each P with 1, 2 and 4 chunks a stage "
             "(or --virtual-stages), every candidate planned and priced as "
             "built; the fastest that fits is built"),
    cl::init("1"), cl::value_desc("P|auto"), cl::cat(planCategory));
/// --pipeline-stages as a count (1 for auto), and whether it was auto.
int64_t pipelineStagesFlag = 1;
bool autoStages = false;
cl::opt<int64_t> virtualStagesFlag(
    "virtual-stages",
    cl::desc("with --pipeline-stages: chunks of layers per device, as "
             "Megatron-LM's interleaved schedule places them (its "
             "micro-batches, --grad-accum, a multiple of P; default 1)"),
    cl::init(1), cl::value_desc("V"), cl::cat(planCategory));
cl::opt<std::string> pipelineScheduleFlag(
    "pipeline-schedule",
    cl::desc("with --pipeline-stages: the schedule the executable runs and "
             "--report=pipeline plays: gpipe, 1f1b, "
             "interleaved (Megatron-LM's, with --virtual-stages), zb-h1 "
             "(zero bubble: each backward split into its input and weight "
             "halves, the weight halves filling the bubble at 1F1B's "
             "memory), or auto (the fastest of 1f1b and zb-h1, or "
             "interleaved, as the cost model plays them; default)"),
    cl::init("auto"), cl::value_desc("schedule"), cl::cat(planCategory));
cl::opt<std::string> comparePlans(
    "compare-plans",
    cl::desc("tgc --compare-plans A.mlir B.mlir: compile both plans (tg IR "
             "at or after the sharding phase, or model files compiled with "
             "the flags given) through the memory phase and print them side "
             "by side: modelled step, compute, communication, collectives by "
             "kind, memory, and every parameter or state sharded otherwise"),
    cl::value_desc("A.mlir"), cl::cat(planCategory));
cl::opt<std::string> reportJson(
    "report-json",
    cl::desc("with --report=sharding: the same report as JSON in this file"),
    cl::value_desc("file.json"), cl::cat(planCategory));

/// The last phase whose output `module` shows.
Phase phaseOf(ModuleOp module) {
  // tgc records the phase of the IR it writes; IR from elsewhere is read
  // from its functions.
  if (std::optional<IrPhase> recorded = recordedPhase(module))
    if (auto phase = parsePhase(stringifyIrPhase(*recorded)))
      return *phase;
  if (module.lookupSymbol("train_step"))
    return Phase::Optimizer;
  if (module.lookupSymbol("forward_backward"))
    return Phase::Autodiff;
  if (!appliedPrecision(module).empty())
    return Phase::Precision;
  return Phase::Import;
}

/// "12GB" (10^9), "10GiB" (2^30), "512MiB", "800000" (bytes); none when it
/// is not such a size.
std::optional<int64_t> parseSize(StringRef text) {
  text = text.trim();
  size_t digits = 0;
  while (digits < text.size() &&
         (llvm::isDigit(text[digits]) || text[digits] == '.'))
    ++digits;
  double number;
  if (digits == 0 || text.take_front(digits).getAsDouble(number))
    return std::nullopt;
  StringRef unit = text.drop_front(digits).trim();
  double scale = llvm::StringSwitch<double>(unit.lower())
                     .Cases({"", "b"}, 1)
                     .Cases({"k", "kb"}, 1e3)
                     .Cases({"m", "mb"}, 1e6)
                     .Cases({"g", "gb"}, 1e9)
                     .Cases({"t", "tb"}, 1e12)
                     .Case("kib", 1024.0)
                     .Case("mib", 1048576.0)
                     .Case("gib", 1073741824.0)
                     .Case("tib", 1099511627776.0)
                     .Default(0);
  if (scale == 0 || number * scale > 9e18)
    return std::nullopt;
  return (int64_t)(number * scale);
}

/// The model's training-table precision ("" when it has none).
std::string tablePrecision(ModuleOp module) {
  auto table = module->getAttrOfType<DictionaryAttr>(TgDialect::kTrainingAttr);
  auto value = table ? table.getAs<StringAttr>("precision") : StringAttr();
  return value ? value.getValue().str() : "";
}

/// "sm_90" -> "90", "90a" -> "90a"; "" for what is not an architecture.
std::string archNumber(StringRef arch) {
  arch.consume_front("sm_");
  arch.consume_front("compute_");
  if (arch.empty() || !llvm::isDigit(arch.front()) ||
      !llvm::all_of(arch, [](char c) { return llvm::isAlnum(c); }))
    return "";
  return arch.str();
}

LogicalResult fail(const Twine &message) {
  llvm::errs() << "tgc: error: " << message << "\n";
  return failure();
}

/// The file name without directory and extension ("examples/mlp.json" ->
/// "mlp").
std::string stemOf(StringRef path) { return llvm::sys::path::stem(path).str(); }

LogicalResult writeText(StringRef path, llvm::function_ref<LogicalResult(
                                            llvm::raw_ostream &)> write) {
  std::string error;
  auto out = openOutputFile(path.empty() ? "-" : path, &error);
  if (!out)
    return fail(error);
  if (failed(write(out->os())))
    return failure();
  out->keep();
  return success();
}

/// The executable's path (-o, else the model file's stem) and where its
/// generated source goes (EXE.EXT with --save-temps, else a temporary file).
LogicalResult prepareExecutable(StringRef extension, std::string &executable,
                                std::string &source) {
  executable = outputFile.empty() ? stemOf(givenInput) : outputFile.getValue();
  if (llvm::sys::fs::is_directory(executable))
    return fail("output '" + executable + "' is a directory");
  if (saveTemps) {
    source = executable + "." + extension.str();
    return success();
  }
  SmallString<128> temp;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
          "tgc-" + stemOf(givenInput), extension, temp))
    return fail("cannot create a temporary source file in " +
                temporaryDirectory() + ": " + ec.message());
  source = temp.str().str();
  return success();
}

/// The build cache --build-cache and --build-cache-size ask for.
FailureOr<BuildCache> buildCacheFromFlags() {
  if (!buildCache)
    return BuildCache();
  std::optional<int64_t> limit = parseSize(buildCacheSize);
  if (!limit || *limit < 0)
    return fail("--build-cache-size: expected a size (2GB, 500MiB), got '" +
                buildCacheSize + "'");
  return BuildCache::standard(*limit);
}

/// With -v: how many of `numUnits` were compiled and how many came from
/// the cache (and where it is).
void printBuildStats(size_t numUnits, const UnitBuildStats &stats,
                     const BuildCache &cache) {
  if (verbose)
    llvm::errs() << "tgc: " << numUnits << " units: " << stats.compiled
                 << " compiled, " << stats.reused << " from the build cache"
                 << (cache.enabled() ? " " + cache.directory().str()
                                     : std::string(" (off)"))
                 << "\n";
}

/// The sources of an executable's units: a temporary directory, or beside
/// the executable with --save-temps (EXE.units/), removed at the end unless
/// kept.
struct UnitDirectory {
  SmallString<128> path;
  ~UnitDirectory() {
    if (!saveTemps && !path.empty())
      llvm::sys::fs::remove_directories(path);
  }
  LogicalResult create(StringRef executable) {
    if (saveTemps) {
      path = (executable + ".units").str();
      if (std::error_code ec = llvm::sys::fs::create_directories(path))
        return fail("cannot create " + path.str().str() + ": " + ec.message());
      return success();
    }
    if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(
            "tgc-" + stemOf(givenInput), path))
      return fail("cannot create a temporary directory in " +
                  temporaryDirectory() + ": " + ec.message());
    return success();
  }
};

/// The CUDA executable with nvcc: the program's units (each layer body,
/// the steps) compiled side by side, each from the build cache when
/// compiled before, and linked; with --save-temps also EXE.cu, the program
/// as one file.
LogicalResult buildCudaExecutable(ModuleOp module,
                                  const CudaEmitOptions &options,
                                  StringRef arch) {
  std::string executable =
      outputFile.empty() ? stemOf(givenInput) : outputFile.getValue();
  if (llvm::sys::fs::is_directory(executable))
    return fail("output '" + executable + "' is a directory");
  std::vector<CudaUnit> cudaUnits;
  if (failed(emitCudaUnits(module, options, cudaUnits)))
    return failure();
  if (saveTemps && failed(writeText(executable + ".cu", [&](raw_ostream &os) {
        return emitCuda(module, os, options);
      })))
    return failure();
  UnitDirectory work;
  if (failed(work.create(executable)))
    return failure();
  FailureOr<BuildCache> cache = buildCacheFromFlags();
  if (failed(cache))
    return failure();
  CudaCompileOptions compileOptions;
  compileOptions.optimization =
      "-O" + std::to_string(optLevel.getNumOccurrences() ? optLevel : 1);
  compileOptions.arch = "sm_" + arch.str();
  compileOptions.verbose = verbose;
  std::vector<SourceUnit> units;
  for (CudaUnit &u : cudaUnits)
    units.push_back({u.name, std::move(u.text)});
  UnitBuildStats stats;
  if (llvm::Error error = compileCudaUnits(units, work.path, executable,
                                           compileOptions, *cache, &stats))
    return fail(llvm::toString(std::move(error)));
  printBuildStats(units.size(), stats, *cache);
  return success();
}

/// --emit=cuda: the .cu source with its CMakeLists.txt and manifest, in a
/// directory (-o, default NAME-cuda).
LogicalResult writeCudaProject(ModuleOp module, const CudaEmitOptions &options,
                               StringRef arch) {
  std::string dir =
      outputFile.empty() ? stemOf(givenInput) + "-cuda" : outputFile.getValue();
  if (llvm::sys::fs::exists(dir) && !llvm::sys::fs::is_directory(dir))
    return fail("--emit=cuda writes a directory, and '" + dir + "' is a file");
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return fail("cannot create '" + dir + "': " + ec.message());
  std::string name = stemOf(givenInput);
  SmallString<256> cu(dir), cmake(dir), manifest(dir);
  llvm::sys::path::append(cu, name + ".cu");
  llvm::sys::path::append(cmake, "CMakeLists.txt");
  llvm::sys::path::append(manifest, name + ".manifest.json");
  CudaEmitSummary summary;
  if (failed(writeText(cu, [&](llvm::raw_ostream &os) {
        return emitCuda(module, os, options, &summary);
      })))
    return failure();
  // The runtime's real folder: share/tgc/runtime is a link in the build
  // tree, and the CMake project may be built where that link is not.
  SmallString<256> runtime(runtimeRoot()), root;
  llvm::sys::path::append(runtime, "runtime");
  if (llvm::sys::fs::real_path(runtime, root))
    root = runtime;
  llvm::sys::path::remove_filename(root);
  if (failed(writeText(cmake, [&](llvm::raw_ostream &os) {
        os << cudaCMakeLists(name, name + ".cu", root, arch);
        return success();
      })))
    return failure();
  return writeText(manifest, [&](llvm::raw_ostream &os) {
    return writeCudaManifest(module, summary, name + ".cu", os);
  });
}

/// --simt: the program as one .cu, rewritten for the host compiler and
/// built for this host.
LogicalResult buildSimtExecutable(ModuleOp module,
                                  const CudaEmitOptions &options) {
  std::string executable, source;
  if (failed(prepareExecutable("cu", executable, source)))
    return failure();
  llvm::scope_exit removeSource([&] {
    if (!saveTemps)
      llvm::sys::fs::remove(source);
  });
  if (failed(writeText(source, [&](llvm::raw_ostream &os) {
        return emitCuda(module, os, options);
      })))
    return failure();
  // The rewritten source beside the .cu with --save-temps, else another
  // temporary file.
  std::string rewritten;
  if (saveTemps) {
    rewritten = executable + ".simt.cpp";
  } else {
    SmallString<128> temp;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "tgc-" + stemOf(givenInput) + "-simt", "cpp", temp))
      return fail("cannot create a temporary source file in " +
                  temporaryDirectory() + ": " + ec.message());
    rewritten = temp.str().str();
  }
  llvm::scope_exit removeRewritten([&] {
    if (!saveTemps)
      llvm::sys::fs::remove(rewritten);
  });
  SimtCompileOptions simtOptions;
  if (optLevel.getNumOccurrences())
    simtOptions.optimization = "-O" + std::to_string(optLevel);
  simtOptions.verbose = verbose;
  if (llvm::Error error =
          compileSimtExecutable(source, rewritten, executable, simtOptions))
    return fail(llvm::toString(std::move(error)));
  return success();
}

/// --target=cuda after the passes: the .cu source (--emit=cuda: with its
/// CMakeLists.txt and manifest, in a directory), or the executable built
/// with nvcc (--simt: for this host, with the host compiler).
LogicalResult emitForCuda(ModuleOp module, StringRef sourceName,
                          StringRef policy, StringRef arch, Phase last) {
  CudaEmitOptions options;
  options.sourceName = sourceName.str();
  options.precision = policy.str();
  if (opsPerFunction.getNumOccurrences())
    options.launchesPerFunction = std::max(1u, opsPerFunction.getValue());
  if (last == Phase::Source)
    return writeCudaProject(module, options, arch);
  if (simt)
    return buildSimtExecutable(module, options);
  return buildCudaExecutable(module, options, arch);
}

/// The pipeline --report=pipeline shows: its shape, per-chunk costs and
/// the schedule played on them.
struct ReportedPipeline {
  pipeline::Shape shape;
  pipeline::Costs costs;
  pipeline::StageActions actions;
  pipeline::Timeline timeline;
  std::string schedule;
};

/// Built (tg-pipeline-schedule's action lists, as the executable runs
/// them), or priced (stages given after the optimizer phase: the
/// --pipeline-schedule choice played on the step's ops placed on chunks).
FailureOr<ReportedPipeline> reportedPipeline(ModuleOp module,
                                             const CostModel &cost) {
  ReportedPipeline out;
  if (module->hasAttr(TgDialect::kPipelineActionsAttr)) {
    llvm::Expected<BuiltPipeline> played = playBuiltPipeline(module, cost);
    if (!played)
      return fail("--report=pipeline: " + llvm::toString(played.takeError()));
    out.shape = played->shape;
    out.costs = std::move(played->costs);
    out.actions = std::move(played->actions);
    out.timeline = std::move(played->timeline);
    out.schedule = played->schedule;
    return out;
  }
  llvm::Expected<pipeline::Costs> chunkCosts = pipelineChunkCosts(module, cost);
  if (!chunkCosts)
    return fail("--report=pipeline: " + llvm::toString(chunkCosts.takeError()));
  out.costs = std::move(*chunkCosts);
  PipelineStages stages = getPipelineStages(module);
  int64_t micro = std::max<int64_t>(1, tableInteger(module, "grad_accum"));
  out.shape = pipeline::Shape{stages.stages, stages.virtualStages, micro};
  llvm::Expected<pipeline::ChosenSchedule> chosen =
      pipeline::chooseSchedule(pipelineScheduleFlag, out.shape, out.costs);
  if (!chosen)
    return fail("--pipeline-schedule: " + llvm::toString(chosen.takeError()));
  out.actions = std::move(chosen->actions);
  out.timeline = std::move(chosen->timeline);
  out.schedule = scheduleName(chosen->schedule).str();
  return out;
}

/// --report=pipeline: the schedule (--pipeline-schedule) each stage runs,
/// played on the cost model's per-chunk times: the action lists, the step
/// and each stage's bubble and peak of micro-batches held, and with
/// --report-plot the timeline as an SVG picture.
LogicalResult writePipelineReport(ModuleOp module, const CostModel &cost) {
  FailureOr<ReportedPipeline> reported = reportedPipeline(module, cost);
  if (failed(reported))
    return failure();
  const pipeline::Shape &shape = reported->shape;
  const pipeline::Costs &costs = reported->costs;
  const pipeline::StageActions &bestActions = reported->actions;
  const pipeline::Timeline &bestTimeline = reported->timeline;
  const std::string &scheduleText = reported->schedule;
  llvm::raw_ostream &os = llvm::outs();
  auto ms = [](double seconds) {
    return llvm::formatv("{0:f3} ms", seconds * 1e3).str();
  };
  os << llvm::formatv("pipeline: {0} stages x {1} chunks a stage, {2} "
                      "micro-batches, schedule {3}{4} (modelled)\n",
                      shape.stages, shape.virtualStages, shape.microBatches,
                      scheduleText,
                      pipelineScheduleFlag == "auto" ? " (auto)" : "");
  os << "per micro-batch (forward F, input backward B, weight backward W):\n";
  for (int64_t c = 0; c < shape.chunks(); ++c)
    os << llvm::formatv("  chunk {0} on stage {1}: F {2}, B {3}, W {4}\n", c,
                        shape.stageOf(c), ms(costs.forward[c]),
                        ms(costs.backwardInput[c]),
                        ms(costs.backwardWeight[c]));
  for (int64_t c = 0; c < (int64_t)costs.reduce.size(); ++c)
    if (shape.reduces(c))
      os << llvm::formatv("  chunk {0}'s gradient sums over the data axes "
                          "(once a step, after its last W): {1}\n",
                          c, ms(costs.reduce[c]));
  os << "  a transfer between stages: " << ms(costs.transfer) << "\n";
  os << pipeline::printActions(bestActions, shape);
  os << "step (the micro-batches through the pipeline, before the update): "
     << ms(bestTimeline.makespan) << "\n";
  for (int64_t s = 0; s < shape.stages; ++s)
    os << llvm::formatv("  stage {0}: busy {1}, idle {2:f1}%, holds at most "
                        "{3} micro-batches between F and B and {4} deferred "
                        "W\n",
                        s, ms(bestTimeline.busy[s]),
                        100 * bestTimeline.idleFraction(s),
                        bestTimeline.peakInFlight[s],
                        bestTimeline.peakDeferredW[s]);
  if (!reportPlot.empty())
    return writeText(reportPlot, [&](llvm::raw_ostream &svg) {
      svg << pipeline::drawSvg(
          shape, bestTimeline,
          llvm::formatv("{0}: {1} stages, {2} micro-batches, step {3}",
                        scheduleText, shape.stages, shape.microBatches,
                        ms(bestTimeline.makespan))
              .str());
      return success();
    });
  return success();
}

/// --report=sharding: the chosen plan beside the others, as text on
/// stdout, and as JSON and SVG where asked.
LogicalResult writeShardingReport(ModuleOp module, const PlanEstimate &chosen,
                                  ArrayRef<PlanEstimate> others,
                                  const CostModel &cost, int64_t limit) {
  if (!chosen.error.empty())
    return fail("cannot price the plan: " + chosen.error);
  printShardingReport(module, chosen, others, cost, limit, llvm::outs());
  if (!reportJson.empty() &&
      failed(writeText(reportJson, [&](llvm::raw_ostream &os) {
        os << llvm::formatv("{0:2}", shardingReportJson(module, chosen, others,
                                                        cost, limit))
           << "\n";
        return success();
      })))
    return failure();
  if (!reportPlot.empty())
    return writeText(reportPlot, [&](llvm::raw_ostream &os) {
      writeShardingPlot(chosen, others, limit, os);
      return success();
    });
  return success();
}

/// The input at `path`: tg IR (.mlir; its buffer becomes the main file of
/// `sourceMgr`, which must hold none yet and which diagnostics point into,
/// and `from` is the phase it was written after)
/// or a model file, imported (`from` = import). Null once an error has been
/// printed.
OwningOpRef<ModuleOp> loadInput(StringRef path, MLIRContext &context,
                                llvm::SourceMgr &sourceMgr,
                                const ImportOptions &importOptions,
                                Phase &from) {
  from = Phase::Import;
  if (!path.ends_with(".mlir"))
    return importModelFile(path, &context, importOptions);
  std::string error;
  auto file = openInputFile(path, &error);
  if (!file) {
    (void)fail(error);
    return nullptr;
  }
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (module)
    from = phaseOf(*module);
  return module;
}

//===----------------------------------------------------------------------===//
// The flags, checked
//===----------------------------------------------------------------------===//

/// What the flags ask of a run, once checked: how far to compile, the
/// options the passes take, the target, and how to import the model.
struct Request {
  Phase last = Phase::Executable;
  std::optional<int64_t> memoryLimit;
  FusionRules fusion = FusionRules::None;
  RematPolicy remat = RematPolicy::None;
  RematSolver solver = RematSolver::Auto;
  /// --memory-budget, when given.
  std::optional<int64_t> budgetFlag;
  bool cuda = false;
  /// --cuda-arch without its prefix ("90").
  std::string arch;
  ImportOptions importOptions;
  /// --batch-size=auto, or the training table's auto_batch.
  bool autoBatch = false;
  /// --device-memory, or the training table's memory_budget once the
  /// micro-batch is chosen.
  std::optional<int64_t> deviceBytes;
  /// The precision policy (precisionPolicy), once the model is loaded.
  std::string policy;
};

/// `flag`'s `value` as a positive size into `size` (none when `value` is
/// empty), or an error that gives `examples`.
LogicalResult parseSizeFlag(StringRef flag, StringRef value, StringRef examples,
                            std::optional<int64_t> &size) {
  if (value.empty())
    return success();
  size = parseSize(value);
  if (!size || *size <= 0)
    return fail(flag + " takes a positive size such as " + examples +
                ", got '" + value + "'");
  return success();
}

/// --lora's r=RANK,alpha=ALPHA,targets=A,B,...: a word without `=` after
/// targets is one more target.
FailureOr<PipelineOptions::Lora> parseLoraFlag(StringRef spec) {
  PipelineOptions::Lora lora;
  StringRef key;
  auto bad = [&](const Twine &why) {
    return fail("--lora: " + why +
                " (expected r=RANK,alpha=ALPHA,targets=MODULE,...; got '" +
                spec + "')");
  };
  for (StringRef item : llvm::split(spec, ',')) {
    item = item.trim();
    StringRef value = item;
    if (item.contains('='))
      std::tie(key, value) = item.split('=');
    else if (key != "targets")
      return bad("'" + item + "' is no key=value");
    if (key == "r" || key == "rank") {
      if (value.getAsInteger(10, lora.rank) || lora.rank < 1)
        return bad("the rank must be a positive integer, got '" + value + "'");
    } else if (key == "alpha") {
      if (value.getAsDouble(lora.alpha) || !(lora.alpha > 0))
        return bad("alpha must be a positive number, got '" + value + "'");
    } else if (key == "targets") {
      if (value.empty())
        return bad("an empty target");
      lora.targets.push_back(value.str());
    } else {
      return bad("unknown key '" + key + "'");
    }
  }
  if (lora.targets.empty())
    return bad("no targets: name the modules whose weights get adapters");
  return lora;
}

/// The last phase --compile-to and --emit ask for (--report and
/// --compare-plans move it later: stopForReports).
FailureOr<Phase> lastPhaseFromFlags() {
  std::optional<Phase> stopAfter;
  if (!compileTo.empty()) {
    stopAfter = parsePhase(compileTo);
    if (!stopAfter)
      return fail("unknown phase '" + compileTo +
                  "' for --compile-to; expected " +
                  phaseNamesUpTo(Phase::Executable));
  }
  Phase last = Phase::Executable;
  if (emit == EmitKind::Mlir)
    last = stopAfter.value_or(Phase::Import);
  else if (emit == EmitKind::Cpp || emit == EmitKind::Cuda)
    last = Phase::Source;
  else if (stopAfter)
    last = *stopAfter;
  if (emit == EmitKind::Mlir && last > kLastIRPhase)
    return fail(
        "--emit=mlir writes IR: --compile-to must be import, "
        "precision, autodiff, optimizer, sharding, partition, pipeline, "
        "fusion, schedule, memory or layers");
  return last;
}

/// --report, --pipeline-schedule, --report-plot and --solver-plan: known
/// values, and the flags each needs beside it.
LogicalResult checkReportFlags() {
  if (!report.empty() && report != "memory" && report != "sharding" &&
      report != "pipeline")
    return fail("unknown --report '" + report +
                "'; expected memory, sharding or pipeline");
  if (!pipeline::parseScheduleChoice(pipelineScheduleFlag))
    return fail("unknown --pipeline-schedule '" + pipelineScheduleFlag +
                "'; expected gpipe, 1f1b, interleaved, zb-h1 or auto");
  if (!reportPlot.empty() && report.empty())
    return fail("--report-plot draws a report: add --report=memory or "
                "--report=sharding");
  if (solverOnly && !autoShard)
    return fail("--solver-plan picks among --auto-shard's plans: add "
                "--auto-shard");
  return success();
}

/// The pass plugins (--load-pass-plugin), and --auto-partitioner among the
/// partitioners they and tgc register.
LogicalResult loadAutoPartitioner() {
  for (const std::string &path : passPlugins) {
    llvm::Expected<PassPlugin> plugin = PassPlugin::load(path);
    if (!plugin)
      return fail("--load-pass-plugin: " + llvm::toString(plugin.takeError()));
    plugin->registerPassRegistryCallbacks();
  }
  registerTgAutoPartitioner();
  if (!lookupAutoPartitioner(autoPartitionerFlag)) {
    std::vector<std::string> names;
    for (const AutoPartitioner *p : registeredAutoPartitioners())
      names.push_back(p->name);
    return fail("unknown --auto-partitioner '" + autoPartitionerFlag +
                "'; registered: " + llvm::join(names, ", ") +
                " (a pass plugin registers its own: --load-pass-plugin)");
  }
  if (autoPartitionerFlag.getNumOccurrences() && !autoShard)
    return fail("--auto-partitioner plans the shardings with --auto-shard: "
                "add --auto-shard");
  return success();
}

/// --report and --compare-plans compile to the memory phase (`last`) and
/// print what they find there: no --compile-to or --emit beside them.
LogicalResult stopForReports(Phase &last) {
  if (!reportJson.empty() && report != "sharding")
    return fail("--report-json writes the sharding report: add "
                "--report=sharding");
  if (!report.empty()) {
    if (!compileTo.empty() || emit != EmitKind::Exe)
      return fail("--report=" + report +
                  " compiles to the memory phase and prints "
                  "the plan; drop --compile-to and --emit");
    last = Phase::Memory;
  }
  if (!comparePlans.empty()) {
    if (!report.empty() || !compileTo.empty() || emit != EmitKind::Exe)
      return fail("--compare-plans prints two plans; drop --report, "
                  "--compile-to and --emit");
    last = Phase::Memory;
  }
  return success();
}

/// --pipeline-stages (a count, or auto with --auto-shard from a model
/// file) and --virtual-stages, into pipelineStagesFlag and autoStages.
LogicalResult parsePipelineStageFlags() {
  autoStages = pipelineStagesText == "auto";
  if ((!autoStages &&
       (StringRef(pipelineStagesText).getAsInteger(10, pipelineStagesFlag) ||
        pipelineStagesFlag < 1)) ||
      virtualStagesFlag < 1)
    return fail("--pipeline-stages and --virtual-stages take counts of at "
                "least 1 (--pipeline-stages also auto, with --auto-shard), "
                "got --pipeline-stages=" +
                pipelineStagesText +
                " --virtual-stages=" + std::to_string(virtualStagesFlag));
  if (autoStages && !autoShard)
    return fail("--pipeline-stages=auto lets --auto-shard choose the "
                "stages: add --auto-shard");
  if (autoStages && StringRef(inputFile).ends_with(".mlir"))
    return fail("--pipeline-stages=auto imports the model file once per "
                "stage count; " +
                inputFile + " is tg IR");
  return success();
}

/// --fusion, --remat, --remat-solver and --memory-budget.
LogicalResult parseRematFlags(Request &request) {
  std::optional<FusionRules> fusion = parseFusionRules(fusionRules);
  if (!fusion)
    return fail("unknown --fusion '" + fusionRules +
                "'; expected none, elementwise or all");
  std::optional<RematPolicy> remat = parseRematPolicy(rematPolicy);
  if (!remat)
    return fail("unknown --remat '" + rematPolicy +
                "'; expected none, selective, full or auto");
  std::optional<RematSolver> solver = parseRematSolver(rematSolver);
  if (!solver)
    return fail("unknown --remat-solver '" + rematSolver +
                "'; expected auto, exact or min-cut");
  request.fusion = *fusion;
  request.remat = *remat;
  request.solver = *solver;
  if (failed(parseSizeFlag("--memory-budget", memoryBudget,
                           "12GB, 10GiB or 8000000000", request.budgetFlag)))
    return failure();
  if (request.budgetFlag && rematPolicy.getNumOccurrences() &&
      rematPolicy != "auto")
    return fail("--memory-budget chooses what to recompute: it needs "
                "--remat=auto, not --remat=" +
                rematPolicy);
  return success();
}

/// --target (--emit=cuda implies cuda) and the flags that go with one
/// target or the other: --emit, --simt, --precision, --cuda-arch, and the
/// build's --opt-level and --allreduce-bucket-mb.
LogicalResult parseTargetFlags(Request &request) {
  std::string where = target.empty()
                          ? (emit == EmitKind::Cuda ? "cuda" : "cpu")
                          : target.getValue();
  if (where != "cpu" && where != "cuda")
    return fail("unknown --target '" + where + "'; expected cpu or cuda");
  bool cuda = request.cuda = where == "cuda";
  if (emit == EmitKind::Cuda && !cuda)
    return fail("--emit=cuda writes the CUDA sources: it needs --target=cuda "
                "(or no --target)");
  if (emit == EmitKind::Cpp && cuda)
    return fail("--emit=cpp writes the CPU source; for --target=cuda use "
                "--emit=cuda");
  if (simt && !cuda)
    return fail("--simt builds the CUDA executable for this host: it needs "
                "--target=cuda");
  if (simt && emit == EmitKind::Cuda)
    return fail("--simt builds an executable for this host; --emit=cuda "
                "writes the sources to build on a GPU machine (drop one)");
  if (!precision.empty() && precision != "fp32" && precision != "bf16")
    return fail("unknown --precision '" + precision +
                "'; expected fp32 or bf16");
  if (!cuda && !precision.empty() && precision != "fp32")
    return fail("--target=cpu computes in fp32 only: --precision=" +
                precision + " needs --target=cuda");
  request.arch = archNumber(cudaArch);
  if (request.arch.empty())
    return fail("--cuda-arch takes an architecture like sm_90, got '" +
                cudaArch + "'");
  if (optLevel > 3)
    return fail("--opt-level must be 0 to 3, got " + Twine(optLevel));
  if (!(bucketMiB > 0))
    return fail("--allreduce-bucket-mb must be positive, got " +
                std::to_string(bucketMiB.getValue()));
  return success();
}

/// The flags that need no model, checked in the order their errors are
/// reported (the first wrong flag is the one named).
FailureOr<Request> requestFromFlags() {
  Request request;
  FailureOr<Phase> last = lastPhaseFromFlags();
  if (failed(last) || failed(checkReportFlags()) ||
      failed(loadAutoPartitioner()) || failed(stopForReports(*last)))
    return failure();
  request.last = *last;
  if (failed(parseSizeFlag("--memory-limit", memoryLimitFlag,
                           "12GB, 80GiB or 8000000000", request.memoryLimit)))
    return failure();
  if (failed(parsePipelineStageFlags()))
    return failure();
  if (shardTimeLimit <= 0)
    return fail("--shard-time-limit takes a positive number of seconds");
  if (failed(parseRematFlags(request)) || failed(parseTargetFlags(request)))
    return failure();
  return request;
}

//===----------------------------------------------------------------------===//
// The input
//===----------------------------------------------------------------------===//

/// --mesh (data=2,tp=2; data=auto for elastic data parallel) into the
/// mesh a model file is imported on.
LogicalResult parseMeshFlag(ImportOptions &importOptions) {
  SmallVector<std::pair<std::string, int64_t>> axes;
  SmallVector<StringRef> parts;
  StringRef(meshFlag).split(parts, ',');
  for (StringRef part : parts) {
    auto [name, size] = part.trim().split('=');
    int64_t n;
    if (!name.empty() && size == "auto") {
      // Elastic data parallel: the size comes from the process count at
      // launch; the plan is priced for 2 replicas.
      if (name != "data" && name != "dp")
        return fail("--mesh: only the data axis (data or dp) can be auto, "
                    "since the others split the model; got '" +
                    name.str() + "=auto'");
      if (!importOptions.elasticAxis.empty())
        return fail("--mesh: one axis can be auto, got '" + meshFlag + "'");
      importOptions.elasticAxis = name.str();
      n = 2;
    } else if (name.empty() || size.getAsInteger(10, n) || n < 1) {
      return fail("--mesh takes axes as name=size separated by commas "
                  "(data=2,tp=2; data=auto for elastic data parallel), "
                  "got '" +
                  meshFlag + "'");
    }
    if (llvm::any_of(axes, [&](auto &a) { return a.first == name; }))
      return fail("--mesh names axis '" + name.str() + "' twice");
    axes.emplace_back(name.str(), n);
  }
  if (StringRef(inputFile).ends_with(".mlir"))
    return fail("--mesh sets the mesh of a model file; " + inputFile +
                " is tg IR (add a tg.mesh to it)");
  importOptions.mesh = axes;
  return success();
}

/// The flags of the import: --batch-size (a number now, auto once the
/// pipeline options are known), --device-memory, --mesh and --shard.
LogicalResult parseImportFlags(Request &request) {
  request.autoBatch = batchSizeFlag == "auto";
  if (!batchSizeFlag.empty() && !request.autoBatch) {
    int64_t n;
    if (StringRef(batchSizeFlag).getAsInteger(10, n) || n < 1)
      return fail("--batch-size takes a positive number or auto, got '" +
                  batchSizeFlag + "'");
    request.importOptions.batchSize = n;
  }
  if (failed(parseSizeFlag("--device-memory", deviceMemory, "80GB or 80GiB",
                           request.deviceBytes)))
    return failure();
  if (request.deviceBytes && !request.autoBatch)
    return fail("--device-memory sizes the micro-batch: add "
                "--batch-size=auto");
  if (request.autoBatch && request.last == Phase::Import)
    return fail("--batch-size=auto compiles the step to size it: it needs "
                "--compile-to=precision or later (or an executable)");
  if (!meshFlag.empty() && failed(parseMeshFlag(request.importOptions)))
    return failure();
  if (!shardPreset.empty() &&
      !llvm::is_contained(shardPresetNames(), StringRef(shardPreset)))
    return fail(
        "--shard takes dp, zero1, zero2, zero3, tp, sp or megatron, got '" +
        shardPreset + "'");
  if (!batchSizeFlag.empty() && StringRef(inputFile).ends_with(".mlir"))
    return fail("--batch-size sets the batch of a model file's inputs; " +
                inputFile + " is tg IR");
  return success();
}

/// The stages: --pipeline-stages, or the mesh's axis pp (--mesh=pp=2,
/// data=2, or the training table's), or what tg IR says already; and the
/// flags that need a pipelined step.
LogicalResult applyPipelineStages(ModuleOp module) {
  PipelineStages planned = getPipelineStages(module);
  if (pipelineStagesFlag > 1 && planned.pipelined() &&
      planned.stages != pipelineStagesFlag)
    return fail("--pipeline-stages=" + std::to_string(pipelineStagesFlag) +
                " but " + inputFile + " (or --mesh) has " +
                std::to_string(planned.stages) + " stages on its axis pp");
  if (pipelineStagesFlag > 1 ||
      (planned.pipelined() && virtualStagesFlag.getNumOccurrences()))
    setPipelineStages(module,
                      {std::max<int64_t>(pipelineStagesFlag, planned.stages),
                       virtualStagesFlag});
  int64_t stages = getPipelineStages(module).stages;
  if (report == "pipeline" && stages < 2)
    return fail("--report=pipeline plays a pipelined step: add "
                "--pipeline-stages=P (P >= 2) or a mesh axis pp");
  if (pipelineScheduleFlag.getNumOccurrences() && stages < 2)
    return fail("--pipeline-schedule picks the schedule of a pipelined "
                "step: add --pipeline-stages=P (P >= 2) or a mesh axis pp");
  if (virtualStagesFlag > 1 && stages < 2)
    return fail("--virtual-stages splits each pipeline stage's layers: add "
                "--pipeline-stages or a mesh axis pp");
  return success();
}

/// The input, a model file or tg IR, into `module` with its stages, and
/// `from`, the phase it comes after (checked against --compile-from and
/// the last phase asked for).
LogicalResult loadStagedInput(MLIRContext &context, llvm::SourceMgr &sourceMgr,
                              Request &request, OwningOpRef<ModuleOp> &module,
                              Phase &from) {
  if (!compileFrom.empty() && !StringRef(inputFile).ends_with(".mlir"))
    return fail("--compile-from takes tg IR (.mlir), not a model file");
  module =
      loadInput(inputFile, context, sourceMgr, request.importOptions, from);
  if (!module || failed(applyPipelineStages(*module)))
    return failure();
  if (!compileFrom.empty()) {
    auto given = parsePhase(compileFrom);
    if (!given || *given > kLastIRPhase)
      return fail("unknown phase '" + compileFrom +
                  "' for --compile-from; expected " +
                  phaseNamesUpTo(kLastIRPhase));
    if (*given != from)
      return fail("--compile-from=" + compileFrom + " but " + inputFile +
                  " holds IR after phase '" + phaseName(from) + "'");
  }
  // The training table may ask for --batch-size=auto (auto_batch).
  if (batchSizeFlag.empty() && !StringRef(inputFile).ends_with(".mlir")) {
    auto table =
        (*module)->getAttrOfType<DictionaryAttr>(TgDialect::kTrainingAttr);
    auto flag = table ? table.getAs<BoolAttr>("auto_batch") : BoolAttr();
    request.autoBatch = flag && flag.getValue() && request.last > Phase::Import;
  }
  if (request.last < from)
    return fail(inputFile + " is already past phase '" +
                phaseName(request.last) + "'");
  return success();
}

/// The precision policy: the flag; else for cuda the training table's,
/// else bf16; the CPU computes in fp32 whatever the table says. IR
/// compiled for one precision takes no --precision for another.
FailureOr<std::string> precisionPolicy(ModuleOp module, bool cuda) {
  std::string policy = precision;
  if (policy.empty())
    policy = !cuda ? "fp32"
                   : (tablePrecision(module).empty() ? "bf16"
                                                     : tablePrecision(module));
  if (StringRef applied = appliedPrecision(module); !applied.empty())
    if (!precision.empty() && applied != precision)
      return fail(inputFile + " was compiled for precision '" + applied +
                  "', not --precision=" + precision);
  return policy;
}

//===----------------------------------------------------------------------===//
// The passes
//===----------------------------------------------------------------------===//

/// The step compiled under the remat policies it was not compiled under,
/// by label ("remat none"), for the memory report and its plot.
using RematCurves = SmallVector<std::pair<std::string, OwningOpRef<ModuleOp>>>;

/// The passes from the input's phase to the planned (memory) phase, with
/// --batch-size=auto's micro-batch and --auto-shard's plan, and what the
/// reports and --compare-plans make of the compiled step.
class PassRun {
public:
  /// `module`, after phase `from`, is compiled in place (or replaced: a
  /// new micro-batch or stage count imports it again); the passes are
  /// timed under `timing`.
  PassRun(MLIRContext &context, Request &request, OwningOpRef<ModuleOp> &module,
          Phase from, TimingScope &timing)
      : context(context), request(request), module(module), from(from),
        to(std::min(request.last, kPlannedPhase)),
        configure([&timing](PassManager &pm) {
          if (failed(applyPassManagerCLOptions(pm)))
            return failure();
          pm.enableTiming(timing);
          return success();
        }) {}

  /// The options from the flags, the micro-batch (--batch-size=auto), then
  /// the passes: with --auto-shard, each plan compiled and the fastest that
  /// fits kept.
  LogicalResult compile();
  /// --compare-plans: the step beside plan A (compiled from its file with
  /// the same flags), both priced.
  LogicalResult printComparison();
  /// --report=pipeline.
  LogicalResult reportPipeline() { return writePipelineReport(*module, *cost); }
  /// --report=sharding: the chosen plan beside the others.
  LogicalResult reportShardings();
  /// For the memory report: the step under the other remat policies (with
  /// --report-plot; else remat none alone), into `others`, and the peak
  /// without recomputation recorded on the step.
  LogicalResult compileOtherRematPolicies(RematCurves &others);

private:
  LogicalResult setOptionsFromFlags();
  LogicalResult checkPlanFlags();
  LogicalResult chooseBatchSize();
  void loadCostModel();
  LogicalResult compilePlansToChoose();
  std::string describeChoice(const CompiledPlan &best) const;
  LogicalResult adoptFastestPlan();
  void recordPeakBeforeRemat(const RematCurves &others);

  MLIRContext &context;
  Request &request;
  OwningOpRef<ModuleOp> &module;
  Phase from, to;
  std::function<LogicalResult(PassManager &)> configure;
  PipelineOptions options;
  /// The module's mesh as the flags found it (the cost model's).
  MeshOp mesh;
  /// The module as it came, for the reports' other plans and policies.
  OwningOpRef<ModuleOp> pristine;
  /// The cluster and the per-device limit the plans are priced against.
  std::optional<ClusterSpec> spec;
  std::optional<CostModel> cost;
  int64_t limit = 0;
  /// Whether --auto-shard plans here (the sharding phase is among ours).
  bool planned = false;
  std::vector<CompiledPlan> plans;
  /// The module --pipeline-stages=auto replaced (its mesh, which `cost`
  /// and `mesh` came from, stays alive).
  OwningOpRef<ModuleOp> beforeStages;
};

/// What prices plans (--auto-shard, --report=sharding, --compare-plans)
/// needs a mesh; it and --report=pipeline have their --cluster and
/// --allow-strategies checked before anything runs.
LogicalResult PassRun::checkPlanFlags() {
  bool pricesPlans = autoShard || report == "sharding" || !comparePlans.empty();
  if (pricesPlans && !mesh)
    return fail(std::string(autoShard               ? "--auto-shard"
                            : !comparePlans.empty() ? "--compare-plans"
                                                    : "--report=sharding") +
                " plans the shardings over a mesh: add --mesh (such as "
                "--mesh=data=2,tp=2) or a mesh in the training table");
  if (pricesPlans || report == "pipeline") {
    // The cluster spec and the strategies, checked before anything runs.
    llvm::Expected<ClusterSpec> cluster = loadClusterSpec(options.cluster);
    if (!cluster)
      return fail("--cluster: " + llvm::toString(cluster.takeError()));
    for (StringRef kind : llvm::split(StringRef(allowStrategies), ','))
      if (!llvm::is_contained({"dp", "zero", "tp"}, kind.trim()))
        return fail("unknown strategy '" + kind.trim() +
                    "' in --allow-strategies; expected dp, zero or tp");
  }
  return success();
}

/// The pipeline options the flags and the training table ask for.
LogicalResult PassRun::setOptionsFromFlags() {
  options.optimizer = optimizer;
  options.schedule = schedule;
  options.totalSteps = totalSteps;
  options.warmupSteps = warmupSteps;
  options.weightDecay = weightDecay;
  options.clipGradNorm = clipGradNorm;
  options.freeze.assign(freeze.begin(), freeze.end());
  options.raise = raiseFlag.getNumOccurrences() ? raiseFlag.getValue()
                                                : isOnnxPath(givenInput);
  if (!loraFlag.empty()) {
    if (from > Phase::Import)
      return fail("--lora: the input is IR after import; adapters go on the "
                  "model as imported (a model file or --compile-to=import)");
    FailureOr<PipelineOptions::Lora> lora = parseLoraFlag(loraFlag);
    if (failed(lora))
      return failure();
    options.lora = *lora;
  }
  if (!freeze.empty() && from >= Phase::Autodiff)
    return fail("--freeze: the input is IR after autodiff, whose gradients "
                "are built; freeze a model file or IR before autodiff");
  options.gradAccum = gradAccum;
  // The executable's default accumulation is the table's: the flag's,
  // so that a step runs the micro-batches it was compiled for.
  if (gradAccum > 0)
    setTableGradAccum(*module, gradAccum);
  // Without --shard: a tp axis is there to split the matrices.
  mesh = getModuleMesh(*module);
  options.shardPreset = !shardPreset.empty() ? std::string(shardPreset)
                        : mesh && mesh.axisSize("tp") > 1 ? "tp"
                                                          : "dp";
  options.precision = request.policy;
  options.autoShard = autoShard;
  options.autoPartitioner = autoPartitionerFlag;
  options.cluster = !clusterFlag.empty() ? std::string(clusterFlag)
                    : request.cuda       ? "h100-sxm-8"
                                         : "cpu-local";
  options.partitioning.memoryLimit = request.memoryLimit.value_or(0);
  options.partitioning.allowStrategies = allowStrategies;
  options.partitioning.seed = shardSeed;
  options.partitioning.timeLimit = shardTimeLimit;
  options.partitioning.tieLayers = !shardPerLayer;
  if (failed(checkPlanFlags()))
    return failure();
  options.bucketBytes = (int64_t)(bucketMiB * (1 << 20));
  options.pipelineSchedule =
      *pipeline::parseScheduleChoice(pipelineScheduleFlag);
  options.fusion = request.fusion;
  options.remat = request.remat;
  options.rematSolver = request.solver;
  // The budget: the flag, else the training table's.
  int64_t table = tableInteger(*module, "memory_budget");
  options.memoryBudget = request.budgetFlag ? *request.budgetFlag : table;
  if (options.memoryBudget > 0 && !rematPolicy.getNumOccurrences())
    options.remat = RematPolicy::Auto;
  if (options.remat == RematPolicy::Auto && options.memoryBudget <= 0 &&
      !request.autoBatch)
    return fail("--remat=auto needs --memory-budget (or the training "
                "table's memory_budget)");
  options.target = request.cuda ? cudaTarget() : cpuTarget();
  return success();
}

/// --batch-size=auto: the largest micro-batch that fits, then the model
/// imported with it.
LogicalResult PassRun::chooseBatchSize() {
  if (!request.deviceBytes) {
    int64_t table = tableInteger(*module, "memory_budget");
    if (table <= 0)
      return fail("--batch-size=auto needs --device-memory (or the "
                  "training table's memory_budget)");
    request.deviceBytes = table;
  }
  // The device holds the arguments too: remat auto's budget for the
  // arena is what they leave (unless --memory-budget says otherwise).
  if (!request.budgetFlag)
    options.memoryBudget = 0;
  std::string why;
  int64_t args = 0;
  FailureOr<int64_t> micro =
      chooseMicroBatch(context, inputFile, *module, options,
                       *request.deviceBytes, configure, why, args);
  if (failed(micro))
    return failure();
  llvm::errs() << "tgc: --batch-size=auto: " << why << "\n";
  int64_t global = globalBatchOf(*module, options);
  request.importOptions.batchSize = *micro;
  module = importModelFile(inputFile, &context, request.importOptions);
  if (!module)
    return failure();
  // The old module's mesh went with it: the cost model reads this one's.
  mesh = getModuleMesh(*module);
  options.gradAccum = global / *micro;
  // The executable's default accumulation is the table's: the chosen.
  setTableGradAccum(*module, options.gradAccum);
  if (options.remat == RematPolicy::Auto && options.memoryBudget <= 0)
    options.memoryBudget = std::max<int64_t>(1, *request.deviceBytes - args);
  return success();
}

/// The cost model and the per-device limit, for --auto-shard, the
/// sharding and pipeline reports and --compare-plans.
void PassRun::loadCostModel() {
  if (autoShard || report == "sharding" || report == "pipeline" ||
      !comparePlans.empty()) {
    spec = cantFail(loadClusterSpec(options.cluster));
    cost.emplace(*spec, mesh);
    limit = options.partitioning.memoryLimit > 0
                ? options.partitioning.memoryLimit
                : spec->memoryBytes;
  }
}

/// --auto-shard's candidates, each compiled and priced: the plans of the
/// stage count --pipeline-stages=auto chooses (its module and options
/// replacing ours), else the solver's and the standard plans.
LogicalResult PassRun::compilePlansToChoose() {
  if (!autoStages) {
    plans = compilePlans(*module, options, from, *cost, /*solver=*/true,
                         /*keepSharded=*/to < kPlannedPhase, "", configure);
    return success();
  }
  FailureOr<StageCandidate> chosen =
      choosePipelineStages(context, inputFile, request.importOptions, *module,
                           options, *cost, limit, to,
                           virtualStagesFlag.getNumOccurrences()
                               ? std::optional<int64_t>(virtualStagesFlag)
                               : std::nullopt,
                           configure, llvm::errs());
  if (failed(chosen))
    return failure();
  beforeStages = std::move(module);
  module = std::move(chosen->module);
  options = chosen->options;
  plans = std::move(chosen->plans);
  return success();
}

/// Why --auto-shard builds `best`: the solver's (or the plugged-in
/// partitioner's) plan, or a preset when that plan failed, does not fit
/// or is slower.
std::string PassRun::describeChoice(const CompiledPlan &best) const {
  std::string solverName =
      options.autoPartitioner == "tgc"
          ? std::string("the solver's plan")
          : "partitioner " + options.autoPartitioner + "'s plan";
  if (best.preset.empty())
    return solverName;
  const PlanEstimate &solverPlan = plans.front().estimate;
  return "preset " + best.preset + ", as " + solverName + " " +
         (!solverPlan.error.empty()          ? "failed"
          : solverPlan.memoryBytes() > limit ? "does not fit"
                                             : "is slower");
}

/// --auto-shard's plan: the solver's, unless a standard plan is faster by
/// the cost model of the compiled step (which sees fusion and the
/// partitioner's merged collectives, as the solver's does not) and fits.
/// Its module becomes ours, carried on to the last phase, and it goes
/// first among `plans`.
LogicalResult PassRun::adoptFastestPlan() {
  CompiledPlan *best = fastestFitting(plans, limit, solverOnly);
  if (!best) {
    std::string why;
    for (CompiledPlan &plan : plans)
      why += "\n  " + plan.estimate.label + ": " +
             (plan.estimate.error.empty()
                  ? formatBytes(plan.estimate.memoryBytes())
                  : plan.estimate.error);
    return fail("--auto-shard: no plan fits " + formatBytes(limit) +
                " per device:" + why);
  }
  options.autoShard = best->preset.empty();
  if (!best->preset.empty())
    options.shardPreset = best->preset;
  std::string chosen = describeChoice(*best);
  best->estimate.label = "auto-shard: " + chosen;
  if (to == kPlannedPhase) {
    module = std::move(best->module);
  } else if (best->sharded) {
    // The solver's pins as it found them, carried on from there.
    module = std::move(best->sharded);
    if (failed(runTrainingPipeline(*module, options, Phase::Sharding, to,
                                   configure)))
      return failure();
  } else if (failed(
                 runTrainingPipeline(*module, options, from, to, configure))) {
    return failure();
  }
  if (!best->preset.empty())
    llvm::errs() << "tgc: --auto-shard: " << chosen << " ("
                 << formatBytes(best->estimate.memoryBytes())
                 << " per device, modelled step "
                 << llvm::formatv("{0:f3}", best->estimate.stepSeconds() * 1e3)
                 << " ms)\n";
  std::swap(*best, plans.front());
  return success();
}

LogicalResult PassRun::compile() {
  if (failed(setOptionsFromFlags()))
    return failure();
  if (request.autoBatch && failed(chooseBatchSize()))
    return failure();
  // The report compares with other remat policies: the module as it
  // comes, for them.
  if (report == "sharding" ||
      (!report.empty() &&
       (options.remat != RematPolicy::None || !reportPlot.empty())))
    pristine = module->clone();
  loadCostModel();
  planned = autoShard && from < Phase::Sharding && to >= Phase::Sharding;
  if (!planned)
    return runTrainingPipeline(*module, options, from, to, configure);
  if (failed(compilePlansToChoose()))
    return failure();
  return adoptFastestPlan();
}

LogicalResult PassRun::printComparison() {
  // Plan A: tg IR from its phase (or a model file) with the same flags.
  // Its own source manager: a parse reads the manager's first buffer.
  llvm::SourceMgr otherSource;
  Phase otherFrom;
  OwningOpRef<ModuleOp> other = loadInput(comparePlans, context, otherSource,
                                          request.importOptions, otherFrom);
  if (!other)
    return failure();
  if (otherFrom > kPlannedPhase)
    return fail(comparePlans + " is past the memory phase");
  if (pipelineStagesFlag > 1)
    setPipelineStages(*other, {pipelineStagesFlag, virtualStagesFlag});
  if (otherFrom < kPlannedPhase &&
      failed(runTrainingPipeline(*other, options, otherFrom, kPlannedPhase,
                                 configure)))
    return failure();
  PlanEstimate a =
      estimatePlan(*other, *cost, comparePlans, options.pipelineSchedule);
  PlanEstimate b =
      estimatePlan(*module, *cost, inputFile, options.pipelineSchedule);
  for (const PlanEstimate *plan : {&a, &b})
    if (!plan->error.empty())
      return fail("cannot price " + plan->label + ": " + plan->error);
  printPlanComparison(*other, a, *module, b, *cost, limit, llvm::outs());
  return success();
}

LogicalResult PassRun::reportShardings() {
  if (!planned) {
    // IR sharded already is priced as it is: its plan was made before.
    bool given = from >= Phase::Sharding;
    if (!given)
      plans = compilePlans(*pristine, options, from, *cost,
                           /*solver=*/false, /*keepSharded=*/false,
                           options.shardPreset, configure);
    CompiledPlan self;
    self.estimate = estimatePlan(*module, *cost,
                                 given ? "as sharded in " + inputFile
                                       : "preset " + options.shardPreset,
                                 options.pipelineSchedule);
    plans.insert(plans.begin(), std::move(self));
  }
  std::vector<PlanEstimate> others;
  for (CompiledPlan &plan : llvm::drop_begin(plans))
    others.push_back(plan.estimate);
  return writeShardingReport(*module, plans.front().estimate, others, *cost,
                             limit);
}

/// The peak without recomputation (remat none's arena, the first of
/// `others`), for the memory report's remat view: the step's tg.remat
/// peak_before, unless it has one.
void PassRun::recordPeakBeforeRemat(const RematCurves &others) {
  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  auto remat = step ? step->getAttrOfType<DictionaryAttr>(TgDialect::kRematAttr)
                    : DictionaryAttr();
  auto none = others.empty()
                  ? nullptr
                  : others.front().second.get().lookupSymbol<func::FuncOp>(
                        "train_step");
  if (remat && none && !remat.get("peak_before"))
    if (auto peak = none->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr)) {
      NamedAttrList info(remat);
      info.set("peak_before", IntegerAttr::get(IntegerType::get(&context, 64),
                                               peak.getBytes()));
      step->setAttr(TgDialect::kRematAttr, info.getDictionary(&context));
    }
}

LogicalResult PassRun::compileOtherRematPolicies(RematCurves &others) {
  if (!pristine)
    return success();
  for (RematPolicy policy :
       {RematPolicy::None, RematPolicy::Selective, RematPolicy::Full}) {
    if (policy == options.remat ||
        (policy != RematPolicy::None && reportPlot.empty()))
      continue;
    OwningOpRef<ModuleOp> other = pristine->clone();
    PipelineOptions o = options;
    o.remat = policy;
    o.memoryBudget = 0;
    if (failed(runTrainingPipeline(*other, o, from, to, configure)))
      return failure();
    others.push_back(
        {("remat " + rematPolicyName(policy)).str(), std::move(other)});
  }
  recordPeakBeforeRemat(others);
  return success();
}

//===----------------------------------------------------------------------===//
// The outputs
//===----------------------------------------------------------------------===//

/// --report=memory: the memory report, and with --report-plot its curves
/// beside those of the other remat policies (`others`).
LogicalResult writeMemoryReport(ModuleOp module, const RematCurves &others) {
  if (failed(printMemoryReport(module, llvm::outs())))
    return failure();
  if (reportPlot.empty())
    return success();
  SmallVector<std::pair<std::string, ModuleOp>> curves;
  for (auto &[label, other] : others)
    curves.push_back({label, *other});
  return writeText(reportPlot, [&](llvm::raw_ostream &os) {
    return writeMemoryPlot(module, curves, os);
  });
}

/// The layers phase (tg-outline-layers unless `outline` is off, and on
/// CUDA tg-place-constants), timed under `rootTiming`.
LogicalResult runLayersPhase(ModuleOp module, bool cuda, bool outline,
                             TimingScope &rootTiming) {
  TimingScope layerTiming = rootTiming.nest("layers phase");
  PipelineOptions layers;
  layers.target = cuda ? cudaTarget() : cpuTarget();
  layers.target.outlinesLayers = outline;
  return runTrainingPipeline(
      module, layers, Phase::Memory, Phase::Layers,
      [&](PassManager &pm) { return applyPassManagerCLOptions(pm); });
}

/// The C++ executable: each layer body a unit of its own, compiled once
/// into the build cache, and the steps; compiled side by side, then
/// linked. The emission is timed under `emitTiming`, the host compiler
/// under `rootTiming`.
LogicalResult buildCppExecutable(ModuleOp module,
                                 const CppEmitOptions &emitOptions,
                                 TimingScope &emitTiming,
                                 TimingScope &rootTiming) {
  std::string executable =
      outputFile.empty() ? stemOf(givenInput) : outputFile.getValue();
  if (llvm::sys::fs::is_directory(executable))
    return fail("output '" + executable + "' is a directory");
  std::vector<CppUnit> cppUnits;
  if (failed(emitCppUnits(module, emitOptions, cppUnits)))
    return failure();
  emitTiming.stop();
  UnitDirectory work;
  if (failed(work.create(executable)))
    return failure();
  FailureOr<BuildCache> cache = buildCacheFromFlags();
  if (failed(cache))
    return failure();
  TimingScope compileTiming = rootTiming.nest("host compiler");
  HostCompileOptions compileOptions;
  compileOptions.optimization = "-O" + std::to_string(optLevel);
  compileOptions.nativeArch = optLevel >= 2;
  compileOptions.verbose = verbose;
  std::vector<SourceUnit> units;
  for (CppUnit &u : cppUnits)
    units.push_back({u.name, std::move(u.text)});
  UnitBuildStats stats;
  if (llvm::Error error = compileUnits(units, work.path, executable,
                                       compileOptions, *cache, &stats))
    return fail(llvm::toString(std::move(error)));
  printBuildStats(units.size(), stats, *cache);
  return success();
}

/// After the IR phases: the step's source for the target (--emit=cpp,
/// --emit=cuda), or the executable built from it.
LogicalResult emitStep(ModuleOp module, const Request &request,
                       TimingScope &rootTiming) {
  if (getPipelineStages(module).stages > 1 &&
      !module->hasAttr(TgDialect::kPipelineActionsAttr))
    return fail(inputFile +
                " is planned with pipeline stages that its optimizer phase "
                "did not see (no @apply_gradients): tgc prices it "
                "(--report=sharding) but builds pipelines compiled with "
                "their stages from the model file (--pipeline-stages or a "
                "mesh axis pp)");
  std::string sourceName = llvm::sys::path::filename(inputFile).str();
  if (request.cuda) {
    TimingScope emitTiming = rootTiming.nest(
        simt ? "emit CUDA (and the host compiler)" : "emit CUDA (and nvcc)");
    return emitForCuda(module, sourceName, request.policy, request.arch,
                       request.last);
  }
  TimingScope emitTiming = rootTiming.nest("emit C++");
  CppEmitOptions emitOptions;
  emitOptions.sourceName = sourceName;
  if (opsPerFunction.getNumOccurrences())
    emitOptions.opsPerFunction = std::max(1u, opsPerFunction.getValue());
  if (request.last == Phase::Source)
    return writeText(outputFile, [&](llvm::raw_ostream &os) {
      return emitCpp(module, os, emitOptions);
    });
  return buildCppExecutable(module, emitOptions, emitTiming, rootTiming);
}

//===----------------------------------------------------------------------===//
// A run
//===----------------------------------------------------------------------===//

/// What the flags ask: the flags checked, the input imported (or parsed),
/// the passes to the planned phase with what the reports make of them,
/// the layers outlined, and the IR, the source or the executable written.
/// The training table of an ONNX model: --training's file, with --optimizer
/// and --lr.
FailureOr<std::string> onnxTrainingTable() {
  llvm::json::Object table;
  if (!onnxTraining.empty()) {
    std::string error;
    auto file = openInputFile(onnxTraining, &error);
    if (!file)
      return LogicalResult(fail(error));
    llvm::Expected<llvm::json::Value> parsed =
        llvm::json::parse(file->getBuffer());
    if (!parsed)
      return LogicalResult(fail(
          onnxTraining + ": not JSON: " + llvm::toString(parsed.takeError())));
    if (!parsed->getAsObject())
      return LogicalResult(
          fail(onnxTraining + ": the training table must be a JSON object"));
    table = std::move(*parsed->getAsObject());
  }
  if (!optimizer.empty() || onnxLr >= 0) {
    llvm::json::Object opt;
    if (llvm::json::Object *given = table.getObject("optimizer"))
      opt = std::move(*given);
    if (!optimizer.empty())
      opt["kind"] = optimizer.getValue();
    if (onnxLr >= 0)
      opt["lr"] = onnxLr.getValue();
    table["optimizer"] = std::move(opt);
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(table));
  return text;
}

/// An ONNX model is translated into a model file (and its weights), which
/// is the input from here on.
LogicalResult translateOnnxInput(MLIRContext &context, Request &request) {
  bool onnx = isOnnxPath(inputFile);
  for (auto [flag, given] :
       {std::pair<StringRef, bool>{"--loss", !onnxLoss.empty()},
        {"--label-input", !onnxLabelInput.empty()},
        {"--training", !onnxTraining.empty()},
        {"--lr", onnxLr.getNumOccurrences() > 0},
        {"--onnx-prefix", !onnxPrefix.empty()}})
    if (given && !onnx)
      return fail(flag + " is for ONNX models; " + inputFile +
                  " is not one (a model file's training table says it; "
                  "the executable's --lr overrides the rate)");
  if (!onnx)
    return success();
  if (onnxLr.getNumOccurrences() && !(onnxLr > 0))
    return fail("--lr must be > 0");
  if (request.autoBatch)
    return fail("--batch-size=auto re-imports the model at each size it "
                "tries: translate the ONNX model first (tgc " +
                inputFile + " --compile-to=import) and size " + inputFile +
                ".json");
  FailureOr<std::string> training = onnxTrainingTable();
  if (failed(training))
    return failure();
  OnnxImportOptions options;
  std::string prefix =
      onnxPrefix.empty() ? inputFile.getValue() : onnxPrefix.getValue();
  options.weightsPath = prefix + ".safetensors";
  options.modelOut = prefix + ".json";
  options.loss = onnxLoss;
  options.labelInput = onnxLabelInput;
  options.trainingJson = *training;
  // The exported batch is the global one: the data replicas split it.
  if (request.importOptions.mesh)
    for (auto &[axis, size] : *request.importOptions.mesh)
      if (axis == "data" || axis == "dp")
        options.dataReplicas *= size;
  std::string summary;
  if (failed(translateOnnxFile(inputFile, &context, options,
                               request.importOptions.batchSize, &summary)))
    return failure();
  llvm::errs() << "tgc: " << inputFile << ": translated into "
               << options.modelOut << ": " << summary << "\n";
  inputFile = options.modelOut;
  return success();
}

LogicalResult run(MLIRContext &context, llvm::SourceMgr &sourceMgr) {
  FailureOr<Request> request = requestFromFlags();
  if (failed(request))
    return failure();

  // --mlir-timing: the whole run, from the import to the host compiler, with
  // each pass nested under "passes" (as mlir-opt reports them).
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope rootTiming = timing.getRootScope();
  TimingScope importTiming = rootTiming.nest("import");
  OwningOpRef<ModuleOp> module;
  Phase from;
  givenInput = inputFile;
  if (failed(parseImportFlags(*request)) ||
      failed(translateOnnxInput(context, *request)) ||
      failed(loadStagedInput(context, sourceMgr, *request, module, from)))
    return failure();
  if (isOnnxPath(givenInput)) {
    std::string table;
    llvm::raw_string_ostream os(table);
    module->getOperation()->getAttr(TgDialect::kTrainingAttr).print(os);
    llvm::errs() << "tgc: " << givenInput << ": training table " << table
                 << "\n";
  }
  importTiming.stop();
  FailureOr<std::string> policy = precisionPolicy(*module, request->cuda);
  if (failed(policy))
    return failure();
  request->policy = *policy;

  // The passes; for the report, the step under other remat policies. The
  // priced reports read the cost model even where no pass is left to run
  // (IR at the planned phase).
  RematCurves others;
  bool priced =
      report == "pipeline" || report == "sharding" || !comparePlans.empty();
  if (std::min(request->last, kPlannedPhase) > from ||
      (priced && from == kPlannedPhase)) {
    TimingScope passTiming = rootTiming.nest("passes");
    PassRun passes(context, *request, module, from, passTiming);
    if (failed(passes.compile()))
      return failure();
    if (!comparePlans.empty())
      return passes.printComparison();
    if (report == "pipeline")
      return passes.reportPipeline();
    if (report == "sharding")
      return passes.reportShardings();
    if (failed(passes.compileOtherRematPolicies(others)))
      return failure();
  }
  if (!report.empty())
    return writeMemoryReport(*module, others);
  // The layers phase: after every report, which reads each op in place.
  if (request->last >= Phase::Layers && from < Phase::Layers &&
      failed(runLayersPhase(*module, request->cuda, outlineLayers, rootTiming)))
    return failure();
  setRecordedPhase(*module, *symbolizeIrPhase(phaseName(
                                std::min(request->last, kLastIRPhase))));
  if (request->last <= kLastIRPhase)
    return writeText(outputFile, [&](llvm::raw_ostream &os) {
      module->print(os);
      os << "\n";
      return success();
    });
  return emitStep(*module, *request, rootTiming);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  // --help shows ours and mlir-opt's IR printing and timing flags, not the
  // hundreds of options libLLVM registers (they still parse). Not
  // --mlir-pass-statistics: Debian's LLVM is built without statistics, so
  // its report would always be empty.
  cl::OptionCategory irCategory("IR printing and timing (as in mlir-opt)");
  for (StringRef name :
       {"mlir-print-ir-after-all", "mlir-print-ir-before-all",
        "mlir-print-ir-after", "mlir-print-ir-before",
        "mlir-print-ir-after-change", "mlir-print-ir-after-failure",
        "mlir-print-ir-module-scope", "mlir-print-ir-tree-dir", "mlir-timing",
        "mlir-timing-display", "mlir-print-debuginfo",
        "mlir-print-local-scope", "mlir-print-op-generic",
        "mlir-elide-elementsattrs-if-larger"}) {
    auto it = cl::getRegisteredOptions().find(name);
    if (it != cl::getRegisteredOptions().end())
      it->second->addCategory(irCategory);
  }
  cl::HideUnrelatedOptions({&tgcCategory, &trainingCategory, &onnxCategory,
                            &planCategory, &irCategory});
  cl::ParseCommandLineOptions(
      argc, argv,
      "tgc: compiles a model file into a training executable\n\n"
      "  tgc model.json -o model            the training executable (CPU)\n"
      "  tgc model.json --target=cuda -o model   the training executable "
      "(GPU, nvcc)\n"
      "  tgc model.json --target=cuda --simt -o model   the same for this "
      "host:\n"
      "                                     CUDA threads as fibers, to test "
      "without a GPU\n"
      "  tgc model.json --emit=cuda -o dir  the CUDA sources, CMakeLists.txt "
      "and\n"
      "                                     manifest, to build on a GPU "
      "machine\n"
      "  tgc model.json --emit=mlir         the tg IR after import\n"
      "  tgc model.json --compile-to=optimizer   the IR of @train_step\n"
      "  tgc model.json --emit=cpp -o step.cpp   the generated C++\n"
      "  tgc step.mlir -o model             from tg IR at any phase\n"
      "  tgc model.onnx --optimizer adamw --lr 3e-4 -o train   from "
      "torch.onnx.export\n");

  DialectRegistry registry;
  registry.insert<TgDialect, func::FuncDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // An error names its place in the model file or IR; the whole module
  // printed after one on the module says nothing more.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  return failed(run(context, sourceMgr)) ? 1 : 0;
}
