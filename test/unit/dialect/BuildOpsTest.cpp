//===- BuildOpsTest.cpp - Building tg ops from C++ ----------------*- C++ -*-===//
//
// The importer and the passes build tg ops with OpTy::create and let the
// ops infer their result types. These tests build ops that way, check the
// inferred types and the accessors passes rely on, and check that the shape
// rules reject, with a diagnostic, inputs a builder can produce but the
// parser cannot (non-tensor operands, missing operands or attributes).
//
//===----------------------------------------------------------------------===//

#include "dialects/tg/IR/TgDialect.h"
#include "dialects/tg/IR/TgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace mlir::tg;

namespace {

/// A module with one function whose arguments have the given types, and a
/// builder positioned in its body. Diagnostics are collected, not printed.
class BuildOpsTest : public ::testing::Test {
protected:
  BuildOpsTest()
      : builder(&context),
        handler(&context, [this](Diagnostic &diag) {
          diagnostics.push_back(diag.str());
          return success();
        }) {
    context.loadDialect<TgDialect, func::FuncDialect>();
    module = ModuleOp::create(builder, loc);
  }

  /// Starts a function with arguments of `types`; ops are built into it.
  func::FuncOp startFunction(TypeRange types) {
    builder.setInsertionPointToEnd(module->getBody());
    auto func = func::FuncOp::create(builder, loc, "f",
                                     builder.getFunctionType(types, {}));
    Block *body = func.addEntryBlock();
    builder.setInsertionPointToEnd(body);
    return func;
  }

  /// Ends the function with a return and verifies the module.
  LogicalResult finish() {
    func::ReturnOp::create(builder, loc);
    return verify(*module);
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type element = {}) {
    return RankedTensorType::get(shape, element ? element : builder.getF32Type());
  }

  Value splat(RankedTensorType type, double value) {
    auto attr = DenseElementsAttr::get(
        type, builder.getFloatAttr(type.getElementType(), value));
    return ConstantOp::create(builder, loc, attr);
  }

  MLIRContext context;
  OpBuilder builder;
  Location loc = UnknownLoc::get(&context);
  OwningOpRef<ModuleOp> module;
  std::vector<std::string> diagnostics;
  ScopedDiagnosticHandler handler;
};

//===----------------------------------------------------------------------===//
// Inferred result types
//===----------------------------------------------------------------------===//

TEST_F(BuildOpsTest, AddInfersTheBroadcastShape) {
  func::FuncOp f = startFunction({tensor({4, 1}), tensor({3})});
  auto add = AddOp::create(builder, loc, f.getArgument(0), f.getArgument(1));
  EXPECT_EQ(add.getType(), tensor({4, 3}));
  EXPECT_TRUE(succeeded(finish()));
}

TEST_F(BuildOpsTest, CompareInfersABooleanTensor) {
  func::FuncOp f = startFunction({tensor({4}), tensor({})});
  auto cmp = CompareOp::create(builder, loc, ComparePredicate::lt,
                               f.getArgument(0), f.getArgument(1));
  EXPECT_EQ(cmp.getType(), tensor({4}, builder.getI1Type()));
  EXPECT_TRUE(succeeded(finish()));
}

TEST_F(BuildOpsTest, MatmulInfersBatchAndTransposedDims) {
  func::FuncOp f = startFunction({tensor({8, 64, 768}), tensor({50257, 768})});
  auto mm = MatmulOp::create(builder, loc, f.getArgument(0), f.getArgument(1),
                             /*transpose_lhs=*/false, /*transpose_rhs=*/true);
  EXPECT_EQ(mm.getType(), tensor({8, 64, 50257}));
  EXPECT_TRUE(succeeded(finish()));
}

TEST_F(BuildOpsTest, ReduceKeepsOrDropsDimsAndNormalizesThem) {
  func::FuncOp f = startFunction({tensor({2, 3, 4})});
  auto dropped = ReduceSumOp::create(builder, loc, f.getArgument(0),
                                     ArrayRef<int64_t>{-1, 0});
  auto kept = ReduceMaxOp::create(builder, loc, f.getArgument(0),
                                  ArrayRef<int64_t>{1}, /*keepdim=*/true);
  auto all = ReduceMeanOp::create(builder, loc, f.getArgument(0));
  EXPECT_EQ(dropped.getType(), tensor({3}));
  EXPECT_EQ(dropped.getReducedDims(), SmallVector<int64_t>({0, 2}));
  EXPECT_EQ(kept.getType(), tensor({2, 1, 4}));
  EXPECT_EQ(all.getType(), tensor({}));
  EXPECT_EQ(all.getReducedDims(), SmallVector<int64_t>({0, 1, 2}));
  EXPECT_TRUE(succeeded(finish()));
}

TEST_F(BuildOpsTest, ConcatAndTransposeInferTheirShapes) {
  func::FuncOp f = startFunction({tensor({4, 2}), tensor({4, 3})});
  auto cat = ConcatOp::create(builder, loc,
                              ValueRange{f.getArgument(0), f.getArgument(1)},
                              /*axis=*/uint64_t(-1));
  auto t = TransposeOp::create(builder, loc, cat,
                               builder.getDenseI64ArrayAttr({1, 0}));
  EXPECT_EQ(cat.getType(), tensor({4, 5}));
  EXPECT_EQ(t.getType(), tensor({5, 4}));
  EXPECT_TRUE(succeeded(finish()));
}

TEST_F(BuildOpsTest, EmbeddingAndCrossEntropyInferTheirTypes) {
  func::FuncOp f = startFunction({tensor({256, 16}),
                                  tensor({8, 4}, builder.getI32Type()),
                                  tensor({8, 4, 256}),
                                  tensor({8, 4}, builder.getI64Type())});
  auto emb = EmbeddingOp::create(builder, loc, f.getArgument(0),
                                 f.getArgument(1));
  auto loss = CrossEntropyOp::create(builder, loc, f.getArgument(2),
                                     f.getArgument(3));
  auto perLabel = CrossEntropyOp::create(
      builder, loc, f.getArgument(2), f.getArgument(3),
      builder.getI64IntegerAttr(-100),
      LossReductionAttr::get(builder.getContext(), LossReduction::none));
  EXPECT_EQ(emb.getType(), tensor({8, 4, 16}));
  EXPECT_EQ(loss.getType(), tensor({}));
  EXPECT_EQ(loss.getReduction(), LossReduction::mean);
  EXPECT_EQ(perLabel.getType(), tensor({8, 4}));
  EXPECT_TRUE(succeeded(finish()));
}

//===----------------------------------------------------------------------===//
// Accessors the passes use
//===----------------------------------------------------------------------===//

TEST_F(BuildOpsTest, AttentionScaleDefaultsToInverseSqrtOfHeadDim) {
  func::FuncOp f = startFunction({tensor({1, 2, 4, 16})});
  Value q = f.getArgument(0);
  auto plain = AttentionOp::create(builder, loc, q, q, q, /*mask=*/Value(),
                                   /*causal=*/false, FloatAttr());
  auto scaled = AttentionOp::create(builder, loc, q, q, q, /*mask=*/Value(),
                                    /*causal=*/true,
                                    builder.getF64FloatAttr(0.5));
  EXPECT_DOUBLE_EQ(plain.getEffectiveScale(), 0.25);
  EXPECT_DOUBLE_EQ(scaled.getEffectiveScale(), 0.5);
  EXPECT_TRUE(succeeded(finish()));
}

TEST_F(BuildOpsTest, PoolStrideDefaultsToTheKernelSize) {
  func::FuncOp f = startFunction({tensor({1, 1, 8, 8})});
  auto pool = MaxPool2dOp::create(builder, loc, f.getArgument(0),
                                  builder.getDenseI64ArrayAttr({2, 4}),
                                  /*stride=*/nullptr,
                                  builder.getDenseI64ArrayAttr({0, 0}));
  EXPECT_EQ(pool.getEffectiveStride(), SmallVector<int64_t>({2, 4}));
  EXPECT_EQ(pool.getType(), tensor({1, 1, 4, 2}));
  EXPECT_TRUE(succeeded(finish()));
}

TEST_F(BuildOpsTest, SliceStrideDefaultsToOnes) {
  func::FuncOp f = startFunction({tensor({4, 8})});
  auto slice = SliceOp::create(builder, loc, f.getArgument(0),
                               builder.getDenseI64ArrayAttr({1, 2}),
                               builder.getDenseI64ArrayAttr({4, 8}),
                               /*stride=*/nullptr);
  EXPECT_EQ(slice.getEffectiveStride(), SmallVector<int64_t>({1, 1}));
  EXPECT_EQ(slice.getType(), tensor({3, 6}));
  EXPECT_TRUE(succeeded(finish()));
}

TEST(OptimizerStateSlots, EachKindNamesItsState) {
  using Slots = SmallVector<StringRef>;
  EXPECT_EQ(OptimizerUpdateOp::stateSlots(OptimizerKind::sgd, 0.0), Slots({}));
  EXPECT_EQ(OptimizerUpdateOp::stateSlots(OptimizerKind::sgd, 0.9),
            Slots({"momentum_buffer"}));
  EXPECT_EQ(OptimizerUpdateOp::stateSlots(OptimizerKind::adamw, 0.0),
            Slots({"exp_avg", "exp_avg_sq"}));
  EXPECT_EQ(OptimizerUpdateOp::stateSlots(OptimizerKind::rmsprop, 0.5),
            Slots({"square_avg", "momentum_buffer"}));
  EXPECT_EQ(OptimizerUpdateOp::stateSlots(OptimizerKind::adagrad, 0.0),
            Slots({"sum"}));
  EXPECT_EQ(OptimizerUpdateOp::stateSlots(OptimizerKind::lion, 0.0),
            Slots({"exp_avg"}));
}

TEST(KindEnums, SpellingsListEveryCaseInOrder) {
  using Names = SmallVector<StringRef>;
  EXPECT_EQ(
      getEnumSpellings<OptimizerKind>(),
      Names({"sgd", "adam", "adamw", "rmsprop", "adagrad", "lamb", "lion"}));
  EXPECT_EQ(getEnumSpellings<ScheduleKind>(),
            Names({"constant", "cosine", "linear", "step", "cyclic", "wsd"}));
  EXPECT_EQ(getEnumSpellings<LossReduction>(), Names({"mean", "sum", "none"}));
  EXPECT_FALSE(symbolizeEnum<OptimizerKind>("adamax"));
}

//===----------------------------------------------------------------------===//
// Folding while building
//===----------------------------------------------------------------------===//

TEST_F(BuildOpsTest, CreateOrFoldDropsMulByOne) {
  func::FuncOp f = startFunction({tensor({4})});
  Value x = f.getArgument(0);
  Value one = splat(tensor({}), 1.0);
  EXPECT_EQ(builder.createOrFold<MulOp>(loc, one, x), x);
  EXPECT_EQ(builder.createOrFold<MulOp>(loc, x, one), x);
  EXPECT_TRUE(succeeded(finish()));
}

TEST_F(BuildOpsTest, CreateOrFoldKeepsAddOfPositiveZero) {
  func::FuncOp f = startFunction({tensor({4})});
  Value x = f.getArgument(0);
  Value sum = builder.createOrFold<AddOp>(loc, x, splat(tensor({}), 0.0));
  Value same = builder.createOrFold<AddOp>(loc, x, splat(tensor({}), -0.0));
  EXPECT_NE(sum, x);
  EXPECT_TRUE(sum.getDefiningOp<AddOp>());
  EXPECT_EQ(same, x);
  EXPECT_TRUE(succeeded(finish()));
}

TEST_F(BuildOpsTest, MaterializeConstantNeedsTheValueType) {
  auto *dialect = context.getLoadedDialect<TgDialect>();
  startFunction({});
  auto value = DenseElementsAttr::get(tensor({2}), 1.0f);
  EXPECT_TRUE(dialect->materializeConstant(builder, value, tensor({2}), loc));
  EXPECT_FALSE(dialect->materializeConstant(builder, value, tensor({3}), loc));
  EXPECT_FALSE(dialect->materializeConstant(builder, builder.getF32FloatAttr(1),
                                            builder.getF32Type(), loc));
  EXPECT_TRUE(succeeded(finish()));
}

//===----------------------------------------------------------------------===//
// Shape rules reject what a builder can produce
//===----------------------------------------------------------------------===//

TEST_F(BuildOpsTest, InferenceRejectsNonTensorOperands) {
  func::FuncOp f = startFunction({builder.getF32Type(), tensor({4})});
  SmallVector<Type> inferred;
  // The adaptor keeps a reference to its operands: they must outlive it.
  SmallVector<Value> adaptorOperands{f.getArgument(0), f.getArgument(1)};
  AddOp::Adaptor adaptor(adaptorOperands);
  EXPECT_TRUE(failed(AddOp::inferReturnTypes(&context, loc, adaptor, inferred)));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0],
            "'tg.add' op operand 'lhs' must be a statically shaped tensor");
}

TEST_F(BuildOpsTest, InferenceRejectsDynamicShapes) {
  func::FuncOp f = startFunction({tensor({ShapedType::kDynamic, 4})});
  SmallVector<Type> inferred;
  // The adaptor keeps a reference to its operands: they must outlive it.
  SmallVector<Value> adaptorOperands{f.getArgument(0)};
  FlattenOp::Adaptor adaptor(adaptorOperands);
  EXPECT_TRUE(
      failed(FlattenOp::inferReturnTypes(&context, loc, adaptor, inferred)));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0],
            "'tg.flatten' op operand 'x' must be a statically shaped tensor");
}

TEST_F(BuildOpsTest, InferenceRejectsMissingOperands) {
  func::FuncOp f = startFunction({tensor({4, 4})});
  SmallVector<Type> inferred;
  // The adaptor keeps a reference to its operands: they must outlive it.
  SmallVector<Value> adaptorOperands{f.getArgument(0)};
  MatmulOp::Adaptor adaptor(adaptorOperands);
  EXPECT_TRUE(
      failed(MatmulOp::inferReturnTypes(&context, loc, adaptor, inferred)));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0], "'tg.matmul' op expects 2 operands, got 1");
}

TEST_F(BuildOpsTest, InferenceRejectsMissingRequiredAttributes) {
  func::FuncOp f = startFunction({tensor({4, 4}), tensor({1, 1, 4, 4})});
  SmallVector<Type> inferred;
  // The adaptor keeps a reference to its operands: they must outlive it.
  SmallVector<Value> transposeOperands{f.getArgument(0)};
  TransposeOp::Adaptor transpose(transposeOperands);
  // The adaptor keeps a reference to its operands: they must outlive it.
  SmallVector<Value> sliceOperands{f.getArgument(0)};
  SliceOp::Adaptor slice(sliceOperands);
  // The adaptor keeps a reference to its operands: they must outlive it.
  SmallVector<Value> poolOperands{f.getArgument(1)};
  AvgPool2dOp::Adaptor pool(poolOperands);
  EXPECT_TRUE(
      failed(TransposeOp::inferReturnTypes(&context, loc, transpose, inferred)));
  EXPECT_TRUE(failed(SliceOp::inferReturnTypes(&context, loc, slice, inferred)));
  EXPECT_TRUE(
      failed(AvgPool2dOp::inferReturnTypes(&context, loc, pool, inferred)));
  EXPECT_EQ(diagnostics,
            std::vector<std::string>(
                {"'tg.transpose' op requires attribute 'perm'",
                 "'tg.slice' op requires attributes 'start' and 'limit'",
                 "'tg.avg_pool2d' op requires attribute 'kernel_size'"}));
}

TEST_F(BuildOpsTest, InferenceRejectsConcatOfNonTensors) {
  func::FuncOp f = startFunction({builder.getI64Type()});
  SmallVector<Type> inferred;
  // The adaptor keeps a reference to its operands: they must outlive it.
  SmallVector<Value> adaptorOperands{f.getArgument(0)};
  ConcatOp::Adaptor adaptor(adaptorOperands);
  EXPECT_TRUE(
      failed(ConcatOp::inferReturnTypes(&context, loc, adaptor, inferred)));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0], "'tg.concat' op inputs must be ranked tensors");
}

TEST_F(BuildOpsTest, InferenceWithoutALocationIsSilent) {
  func::FuncOp f = startFunction({tensor({4, 3}), tensor({5})});
  SmallVector<Type> inferred;
  // The adaptor keeps a reference to its operands: they must outlive it.
  SmallVector<Value> adaptorOperands{f.getArgument(0), f.getArgument(1)};
  AddOp::Adaptor adaptor(adaptorOperands);
  EXPECT_TRUE(failed(
      AddOp::inferReturnTypes(&context, std::nullopt, adaptor, inferred)));
  EXPECT_TRUE(diagnostics.empty());
}

TEST_F(BuildOpsTest, ConvBiasMustBeATensor) {
  func::FuncOp f = startFunction(
      {tensor({1, 1, 4, 4}), tensor({2, 1, 3, 3}), builder.getF32Type()});
  SmallVector<Type> inferred;
  Conv2dOp::Properties props;
  props.stride = builder.getDenseI64ArrayAttr({1, 1});
  props.padding = builder.getDenseI64ArrayAttr({0, 0});
  props.dilation = builder.getDenseI64ArrayAttr({1, 1});
  props.groups = builder.getI64IntegerAttr(1);
  SmallVector<Value> operands{f.getArgument(0), f.getArgument(1),
                              f.getArgument(2)};
  Conv2dOp::Adaptor adaptor(operands, nullptr, props, {});
  EXPECT_TRUE(
      failed(Conv2dOp::inferReturnTypes(&context, loc, adaptor, inferred)));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0],
            "'tg.conv2d' op operand 'bias' must be a statically shaped tensor");
}

TEST_F(BuildOpsTest, AttentionMaskMustBeAStaticTensor) {
  func::FuncOp f = startFunction(
      {tensor({1, 2, 4, 8}), tensor({ShapedType::kDynamic, 4})});
  SmallVector<Type> inferred;
  Value q = f.getArgument(0);
  SmallVector<Value> operands{q, q, q, f.getArgument(1)};
  AttentionOp::Adaptor adaptor(operands, nullptr, AttentionOp::Properties{},
                               {});
  EXPECT_TRUE(
      failed(AttentionOp::inferReturnTypes(&context, loc, adaptor, inferred)));
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0],
            "'tg.attention' op operand 'mask' must be a statically shaped "
            "tensor");
}

} // namespace
