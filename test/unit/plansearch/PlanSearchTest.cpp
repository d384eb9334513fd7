//===- PlanSearchTest.cpp - tgc's searches over compiled plans --*- C++ -*-===//
//
// The searches compile real candidates (the example model files through
// the passes) and measure the planned IR; these tests check what each
// promises of its answer, never which plan a search reaches in a time.
//
//===----------------------------------------------------------------------===//

#include "compiler/pipeline/PlanSearch.h"

#include "dialects/tg/IR/TgDialect.h"
#include "dialects/tg/IR/TgOps.h"
#include "dialects/tg/IR/TgSharding.h"
#include "planning/cost/ClusterSpec.h"
#include "planning/cost/CostModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::tg;

namespace {

const char *kMlp = TGC_EXAMPLES_DIR "/mlp.json";
const char *kGpt2 = TGC_EXAMPLES_DIR "/gpt2-tiny.json";

LogicalResult noConfiguration(PassManager &) { return success(); }

struct PlanSearchTest : ::testing::Test {
  PlanSearchTest() {
    DialectRegistry registry;
    registry.insert<TgDialect, func::FuncDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// The step's need at micro-batch `micro` as --batch-size=auto counts it:
  /// its planned arena plus its arguments.
  int64_t needAt(const char *path, int64_t micro,
                 const PipelineOptions &options) {
    ImportOptions at;
    at.batchSize = micro;
    OwningOpRef<ModuleOp> m = importModelFile(path, &context, at);
    EXPECT_TRUE(m);
    PipelineOptions o = options;
    o.gradAccum = globalBatchOf(*m, options) / micro;
    EXPECT_TRUE(succeeded(runTrainingPipeline(*m, o, Phase::Import,
                                              Phase::Memory, noConfiguration)));
    int64_t arena = 0;
    for (auto fn : m->getOps<func::FuncOp>())
      if (auto bytes = fn->getAttrOfType<ArenaAttr>(TgDialect::kArenaAttr))
        arena = std::max(arena, bytes.getBytes());
    return arena + argumentBytes(*m);
  }

  MLIRContext context;
};

// --batch-size=auto: the whole global batch where it fits; where it does
// not, a divisor of the global batch that fits, and an error naming the
// device memory when not even micro-batch 1 does.
TEST_F(PlanSearchTest, MicroBatchFitsTheDevice) {
  OwningOpRef<ModuleOp> first = importModelFile(kMlp, &context);
  ASSERT_TRUE(first);
  PipelineOptions options;
  int64_t global = globalBatchOf(*first, options);
  ASSERT_GT(global, 1);

  std::string why;
  int64_t args = 0;
  FailureOr<int64_t> roomy =
      chooseMicroBatch(context, kMlp, *first, options, int64_t(1) << 40,
                       noConfiguration, why, args);
  ASSERT_TRUE(succeeded(roomy));
  EXPECT_EQ(*roomy, global);
  EXPECT_NE(why.find("micro-batch " + std::to_string(global)),
            std::string::npos)
      << why;
  EXPECT_GT(args, 0);

  // GPT-2 tiny, whose activations outgrow its accumulators: a byte less
  // than the whole batch needs takes a smaller micro-batch that fits.
  OwningOpRef<ModuleOp> gpt2 = importModelFile(kGpt2, &context);
  ASSERT_TRUE(gpt2);
  int64_t gpt2Global = globalBatchOf(*gpt2, options);
  int64_t tight = needAt(kGpt2, gpt2Global, options) - 1;
  FailureOr<int64_t> smaller = chooseMicroBatch(
      context, kGpt2, *gpt2, options, tight, noConfiguration, why, args);
  ASSERT_TRUE(succeeded(smaller)) << why;
  EXPECT_LT(*smaller, gpt2Global);
  EXPECT_EQ(gpt2Global % *smaller, 0);
  EXPECT_LE(needAt(kGpt2, *smaller, options), tight);

  std::string error;
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &d) {
    error = d.str();
    return success();
  });
  EXPECT_TRUE(failed(chooseMicroBatch(context, kMlp, *first, options, 1,
                                      noConfiguration, why, args)));
  EXPECT_NE(error.find("not even micro-batch 1 fits"), std::string::npos)
      << error;
}

// --auto-shard's comparison: each standard plan the mesh allows is compiled
// and priced (one needing a tp axis says why not), the partitioner's too,
// and the plan built is the fastest that fits.
TEST_F(PlanSearchTest, TheFastestFittingPlanIsChosen) {
  ImportOptions on;
  on.mesh = SmallVector<std::pair<std::string, int64_t>>{{"data", 2}};
  OwningOpRef<ModuleOp> module = importModelFile(kMlp, &context, on);
  ASSERT_TRUE(module);
  ClusterSpec spec = llvm::cantFail(loadClusterSpec("cpu-local"));
  CostModel cost(spec, getModuleMesh(*module));
  PipelineOptions options;
  options.partitioning.timeLimit = 30;
  std::vector<CompiledPlan> plans =
      compilePlans(*module, options, Phase::Import, cost, /*solver=*/true,
                   /*keepSharded=*/false, "", noConfiguration);
  ASSERT_FALSE(plans.empty());
  EXPECT_EQ(plans.front().preset, "");
  int compiled = 0;
  const CompiledPlan *fastest = nullptr;
  for (const CompiledPlan &plan : plans) {
    if (plan.preset == "tp" || plan.preset == "sp" ||
        plan.preset == "megatron") {
      EXPECT_EQ(plan.estimate.error, "the mesh has no tp axis");
      continue;
    }
    EXPECT_EQ(plan.estimate.error, "") << plan.estimate.label;
    EXPECT_GT(plan.estimate.stepSeconds(), 0) << plan.estimate.label;
    ++compiled;
    if (!fastest ||
        plan.estimate.stepSeconds() < fastest->estimate.stepSeconds())
      fastest = &plan;
  }
  EXPECT_EQ(compiled, 3); // the solver's, dp, zero3
  EXPECT_EQ(fastestFitting(plans, int64_t(1) << 40, false), fastest);
  EXPECT_EQ(fastestFitting(plans, int64_t(1) << 40, true), &plans.front());
  EXPECT_EQ(fastestFitting(plans, 1, false), nullptr);

  // A plan already compiled is left out; without the solver only presets.
  std::vector<CompiledPlan> presets =
      compilePlans(*module, options, Phase::Import, cost, /*solver=*/false,
                   /*keepSharded=*/false, "dp", noConfiguration);
  for (const CompiledPlan &plan : presets) {
    EXPECT_NE(plan.preset, "");
    EXPECT_NE(plan.preset, "dp");
  }
}

// A partitioner name no one registered is an error the pipeline names, not
// an abort (tgc checks --auto-partitioner first; a library caller may not).
TEST_F(PlanSearchTest, AnUnregisteredPartitionerIsAnError) {
  OwningOpRef<ModuleOp> module = importModelFile(kMlp, &context);
  ASSERT_TRUE(module);
  PipelineOptions options;
  options.autoShard = true;
  options.autoPartitioner = "nobody";
  std::string error;
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &d) {
    error = d.str();
    return success();
  });
  EXPECT_TRUE(failed(runTrainingPipeline(*module, options, Phase::Import,
                                         Phase::Sharding, noConfiguration)));
  EXPECT_EQ(error, "tgc: no automatic partitioner is registered as 'nobody'");
}

} // namespace
