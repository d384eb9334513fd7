//===- tg-opt.cpp - Run tg passes on an MLIR file -----------------*- C++ -*-===//
//
// mlir-opt for tgc: parses tg IR, runs any registered pass or pipeline (ours
// and upstream's canonicalize, cse, ...), prints the result.
//
//===----------------------------------------------------------------------===//

#include "compiler/pipeline/Pipeline.h"
#include "dialects/tg/IR/TgDialect.h"
#include "passes/autodiff/Passes.h"
#include "passes/fusion/Passes.h"
#include "passes/layers/Passes.h"
#include "passes/memory/Passes.h"
#include "passes/optimizer/Passes.h"
#include "passes/pipeline/Passes.h"
#include "passes/precision/Passes.h"
#include "passes/raise/Passes.h"
#include "passes/remat/Passes.h"
#include "passes/schedule/Passes.h"
#include "passes/sharding/Passes.h"
#include "test/lib/TestPasses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerTransformsPasses();
  mlir::tg::registerAutodiffPasses();
  mlir::tg::registerFusionPasses();
  mlir::tg::registerLayersPasses();
  mlir::tg::registerMemoryPasses();
  mlir::tg::registerOptimizerPasses();
  mlir::tg::registerPipelinePasses();
  mlir::tg::registerPrecisionPasses();
  mlir::tg::registerRaisePasses();
  mlir::tg::registerRematPasses();
  mlir::tg::registerSchedulePasses();
  mlir::tg::registerShardingPasses();
  mlir::tg::registerTrainingPipeline();
  mlir::tg::registerTestCostModelPass();
  mlir::DialectRegistry registry;
  registry.insert<mlir::tg::TgDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tg-opt: runs tgc passes on tg IR\n", registry));
}
