//===- EmitTest.cpp - The emitters only read the module -----------*- C++
//-*-===//
//
// An emitter is a translation: it prints the planned IR and decides and
// changes nothing. These tests compile an example model to its last IR
// phase for each target, emit it, and check that the module prints the
// same before and after.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/EmitCpp.h"
#include "compiler/codegen/EmitCuda.h"
#include "compiler/pipeline/Pipeline.h"
#include "frontend/ModelFile.h"

#include "dialects/tg/IR/TgDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::tg;

namespace {

const char *kGpt2 = TGC_EXAMPLES_DIR "/gpt2-tiny.json";

struct EmitTest : ::testing::Test {
  EmitTest() {
    DialectRegistry registry;
    registry.insert<TgDialect, func::FuncDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// gpt2-tiny compiled for `target` through the layers phase.
  OwningOpRef<ModuleOp> planned(TargetOptions target) {
    OwningOpRef<ModuleOp> m = importModelFile(kGpt2, &context);
    EXPECT_TRUE(m);
    if (!m)
      return m;
    PipelineOptions options;
    options.target = std::move(target);
    EXPECT_TRUE(succeeded(
        runTrainingPipeline(*m, options, Phase::Import, kLastIRPhase,
                            [](PassManager &) { return success(); })));
    return m;
  }

  static std::string text(ModuleOp m) {
    std::string s;
    llvm::raw_string_ostream os(s);
    m.print(os, OpPrintingFlags().enableDebugInfo());
    return s;
  }

  MLIRContext context;
};

/// Emits `m` with `emit`: the source holds `expected`, and the module
/// prints as it did before.
void expectReadOnly(ModuleOp m,
                    llvm::function_ref<LogicalResult(llvm::raw_ostream &)> emit,
                    llvm::StringRef expected) {
  std::string before = EmitTest::text(m);
  std::string source;
  llvm::raw_string_ostream os(source);
  ASSERT_TRUE(succeeded(emit(os)));
  EXPECT_NE(source.find(expected.str()), std::string::npos);
  EXPECT_EQ(EmitTest::text(m), before);
}

// The CUDA emitter reads tg-fuse's kernels where they stand (a GEMM with
// its epilogue, generated elementwise kernels, multi-tensor updates) and
// tg-outline-layers' bodies, and leaves every op and attribute as it was.
TEST_F(EmitTest, CudaEmitterLeavesTheModuleAsItWas) {
  OwningOpRef<ModuleOp> m = planned(cudaTarget());
  ASSERT_TRUE(m);
  ASSERT_NE(text(*m).find("gemm("), std::string::npos); // a tg.kernel gemm
  CudaEmitOptions options;
  expectReadOnly(
      *m, [&](llvm::raw_ostream &os) { return emitCuda(*m, os, options); },
      "tgc::cuda::Epilogue::");
}

TEST_F(EmitTest, CppEmitterLeavesTheModuleAsItWas) {
  OwningOpRef<ModuleOp> m = planned(cpuTarget());
  ASSERT_TRUE(m);
  ASSERT_NE(text(*m).find("tg.kernel"), std::string::npos);
  CppEmitOptions options;
  expectReadOnly(
      *m, [&](llvm::raw_ostream &os) { return emitCpp(*m, os, options); },
      "tgc_arena()");
}

} // namespace
