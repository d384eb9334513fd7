//===- CheckpointViewTest.cpp - File shapes that are views ------*- C++ -*-===//
//
// A parameter the compiler holds in another row-major view than the one
// files show (TensorDesc::fileShape: GPT-2's c_attn.weight is [768, 2304]
// in files but [768, 3, 768] split by heads) is saved in its file shape and
// loads from either shape, whole or as a process's box of the view, from a
// consolidated checkpoint or from a sharded one written under either view.
// Fans come from the file shape; random values are the same for either
// view. Here at [4, 12] = [4, 3, 4], with a moment of the same shape.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/Safetensors.h"
#include "runtime/checkpoint/ShardedCheckpoint.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"
#include "runtime/train/Init.h"
#include "runtime/train/MeshLayout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using Dims = std::vector<int64_t>;
using Values = std::vector<float>;
using namespace tgc;

/// A TensorDesc of F32 `shape`, shown in files as `fileShape` (empty:
/// none), split along `splitDim` (-1: nowhere) by mesh axis 0.
TensorDesc describe(const char *name, const Dims &shape, const Dims &fileShape,
                    int splitDim) {
  TensorDesc tensor{};
  tensor.name = name;
  tensor.dtype = DType::F32;
  tensor.rank = static_cast<int32_t>(shape.size());
  for (size_t d = 0; d < shape.size(); ++d)
    tensor.shape[d] = shape[d];
  if (splitDim >= 0)
    tensor.splitAxes[splitDim] = 1;
  tensor.fileRank = static_cast<int32_t>(fileShape.size());
  for (size_t d = 0; d < fileShape.size(); ++d)
    tensor.fileShape[d] = fileShape[d];
  return tensor;
}

/// A model of one parameter "w" and its moment "w.exp_avg", both held as
/// `shape`, on a mesh of one axis "tp" of `tp` processes that splits dim
/// `splitDim` (no mesh when tp is 1). Points into itself: not copyable.
struct TinyModel {
  TinyModel(const Dims &shape, const Dims &fileShape, int64_t tp = 1,
            int splitDim = -1) {
    param.tensor = describe("w", shape, fileShape, splitDim);
    param.init = {InitKind::Zeros, 0, 1, -1, 1, 1, 0, "", ""};
    param.trainable = true;
    state.tensor = describe("w.exp_avg", shape, fileShape, splitDim);
    state.param = "w";
    state.slot = "exp_avg";
    axis = {"tp", tp, 0};
    model.name = "tiny";
    model.numParams = 1;
    model.params = &param;
    model.numState = 1;
    model.state = &state;
    model.numMeshAxes = tp > 1 ? 1 : 0;
    model.mesh = tp > 1 ? &axis : nullptr;
  }
  TinyModel(const TinyModel &) = delete;
  TinyModel &operator=(const TinyModel &) = delete;

  ParamDesc param{};
  StateDesc state{};
  MeshAxisDesc axis{};
  ModelDesc model{};
};

/// 0.5, 1.5, ... (w) and 100.25, 101.25, ... (w.exp_avg): every element
/// different, so a misplaced one shows.
Values wholeValues(int tensor) {
  Values values(48);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i) + (tensor == 0 ? 0.5f : 100.25f);
  return values;
}

/// The box [offset, offset + shape) of the row-major tensor `whole` of
/// `wholeShape`, element by element.
Values referenceBox(const Values &whole, const Dims &wholeShape,
                    const Dims &offset, const Dims &shape) {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  Values box;
  Dims at(shape.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t rest = e, index = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      at[d] = rest % shape[d];
      rest /= shape[d];
    }
    for (size_t d = 0; d < shape.size(); ++d)
      index = index * wholeShape[d] + offset[d] + at[d];
    box.push_back(whole[index]);
  }
  return box;
}

class CheckpointView : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/tgc-checkpoint-view-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// saveCheckpoint of `model` holding wholeValues.
  std::string save(const TinyModel &model, const std::string &name) {
    Values w = wholeValues(0), m = wholeValues(1);
    void *params[] = {w.data()}, *state[] = {m.data()};
    std::string path = dir_ + "/" + name + ".safetensors";
    saveCheckpoint(path, model.model, params, state, {{"step", "1"}});
    return path;
  }

  /// A sharded checkpoint of `model` holding wholeValues, as its `world`
  /// processes write it: each its pieces, cut from the whole tensors.
  std::string saveSharded(const TinyModel &model, int world,
                          const std::string &name) {
    std::string partial = dir_ + "/." + name + ".partial";
    std::string target = dir_ + "/" + name;
    preparePartialCheckpoint(partial);
    ShardedLayout layout =
        MeshLayout(model.model, 0, world).checkpointLayout(model.model);
    const TensorDesc *tensors[] = {&model.param.tensor, &model.state.tensor};
    for (int rank = 0; rank < world; ++rank) {
      MeshLayout mesh(model.model, rank, world);
      std::vector<Values> pieces;
      std::vector<const void *> local;
      for (int i = 0; i < 2; ++i) {
        Values whole = wholeValues(i);
        pieces.emplace_back(numElements(mesh.local(*tensors[i])));
        mesh.cut(*tensors[i], whole.data(), pieces.back().data(), rank);
      }
      for (const Values &piece : pieces)
        local.push_back(piece.data());
      writeCheckpointShard(partial, layout, rank, local, "tiny");
    }
    commitShardedCheckpoint(partial, target, layout, "tiny", {{"step", "1"}});
    return target;
  }

  /// loadCheckpoint of `path` into `model`'s whole tensors.
  std::vector<Values> loadWhole(const std::string &path,
                                const TinyModel &model) {
    std::vector<Values> out(2, Values(48, -1.0f));
    void *params[] = {out[0].data()}, *state[] = {out[1].data()};
    loadCheckpoint(path, model.model, params, state);
    return out;
  }

  /// loadCheckpoint of `path` into the box [offset, offset + shape) of
  /// each of `model`'s tensors.
  std::vector<Values> loadBox(const std::string &path, const TinyModel &model,
                              const Dims &offset, const Dims &shape) {
    int64_t count = 1;
    for (int64_t dim : shape)
      count *= dim;
    std::vector<Values> out(2, Values(count, -1.0f));
    std::vector<LoadTarget> params(1), state(1);
    params[0] = {out[0].data(), offset, shape};
    state[0] = {out[1].data(), offset, shape};
    loadCheckpoint(path, model.model, params, state);
    return out;
  }

  std::string dir_;
};

TEST(TensorDescFileShape, PositionalInitialisers) {
  // What generated code prints: without the new members (zero: no file
  // shape), with split masks only, and with both.
  TensorDesc plain = {"w", DType::F32, 2, {4, 12}};
  TensorDesc split = {"w", DType::F32, 2, {4, 12}, {0, 1}};
  TensorDesc view = {"w", DType::F32, 3, {4, 3, 4}, {0, 1, 0}, 2, {4, 12}};
  EXPECT_EQ(plain.fileRank, 0);
  EXPECT_EQ(fileShapeOf(plain), (Dims{4, 12}));
  EXPECT_EQ(fileShapeOf(split), (Dims{4, 12}));
  EXPECT_EQ(fileShapeOf(view), (Dims{4, 12}));
  EXPECT_EQ(shapeOf(view), (Dims{4, 3, 4}));
  EXPECT_EQ(fileShapeString(plain), "4x12");
  EXPECT_EQ(fileShapeString(view), "4x12 (held as 4x3x4)");
  TensorDesc notView = {"w", DType::F32, 3, {4, 3, 4}, {0, 0, 0}, 2, {4, 13}};
  try {
    fileShapeOf(notView);
    FAIL() << "a file shape of another element count was accepted";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(),
                 "tensor w has file shape 4x13 (52 elements) but shape 4x3x4 "
                 "(48 elements): not a view of it");
  }
}

TEST_F(CheckpointView, ConsolidatedSaveShowsFileShape) {
  TinyModel view({4, 3, 4}, {4, 12});
  SafetensorsFile file(save(view, "view"));
  for (const char *name : {"w", "w.exp_avg"}) {
    const SafetensorsTensor *tensor = file.find(name);
    ASSERT_NE(tensor, nullptr) << name;
    EXPECT_EQ(tensor->shape, (Dims{4, 12})) << name;
  }
  Values stored(48);
  std::memcpy(stored.data(), file.find("w")->data, 48 * sizeof(float));
  EXPECT_EQ(stored, wholeValues(0));
}

TEST_F(CheckpointView, ConsolidatedLoadsWholeAndAsBoxOfView) {
  TinyModel view({4, 3, 4}, {4, 12}), flat({4, 12}, {});
  std::string path = save(view, "view");
  std::vector<Values> expected = {wholeValues(0), wholeValues(1)};
  EXPECT_EQ(loadWhole(path, view), expected);
  // The file shape is the single-process model's shape: either loads the
  // other's checkpoint.
  EXPECT_EQ(loadWhole(path, flat), expected);
  EXPECT_EQ(loadWhole(save(flat, "flat"), view), expected);
  // Head 1 of 3: a box of the view, not of the [4, 12] the file shows.
  Dims offset = {0, 1, 0}, shape = {4, 1, 4};
  std::vector<Values> box = loadBox(path, view, offset, shape);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(box[i], referenceBox(expected[i], {4, 3, 4}, offset, shape))
        << "tensor " << i;
  // A file that stores the internal shape loads too.
  TinyModel internal({4, 3, 4}, {});
  EXPECT_EQ(loadWhole(save(internal, "internal"), view), expected);
}

TEST_F(CheckpointView, ShardedUnderViewLoadsWholeWithoutView) {
  // Three processes, one head each.
  TinyModel view({4, 3, 4}, {4, 12}, /*tp=*/3, /*splitDim=*/1);
  std::string path = saveSharded(view, 3, "sharded-view");
  ShardedCheckpoint checkpoint(path);
  for (const char *name : {"w", "w.exp_avg"}) {
    const ShardedTensor *tensor = checkpoint.find(name);
    ASSERT_NE(tensor, nullptr) << name;
    EXPECT_EQ(tensor->shape, (Dims{4, 3, 4})) << name;
    EXPECT_EQ(tensor->fileShape, (Dims{4, 12})) << name;
    EXPECT_EQ(tensor->pieces.size(), 3u) << name;
  }
  TinyModel flat({4, 12}, {});
  std::vector<Values> expected = {wholeValues(0), wholeValues(1)};
  EXPECT_EQ(loadWhole(path, flat), expected);
  EXPECT_EQ(loadWhole(path, view), expected);
}

TEST_F(CheckpointView, ShardedWithoutViewLoadsAsBoxOfView) {
  // Written by two processes that split the columns of [4, 12]: their
  // pieces ([4, 6]) are no boxes of the view [4, 3, 4].
  TinyModel flat({4, 12}, {}, /*tp=*/2, /*splitDim=*/1);
  std::string path = saveSharded(flat, 2, "sharded-flat");
  EXPECT_TRUE(ShardedCheckpoint(path).find("w")->fileShape.empty());
  // Loaded by process 1 of three that split the view by heads.
  TinyModel view({4, 3, 4}, {4, 12}, /*tp=*/3, /*splitDim=*/1);
  Dims offset, shape;
  MeshLayout(view.model, 1, 3).region(view.param.tensor, 1, offset, shape);
  ASSERT_EQ(offset, (Dims{0, 1, 0}));
  ASSERT_EQ(shape, (Dims{4, 1, 4}));
  std::vector<Values> box = loadBox(path, view, offset, shape);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(box[i], referenceBox(wholeValues(i), {4, 3, 4}, offset, shape))
        << "tensor " << i;
  EXPECT_EQ(loadWhole(path, view),
            (std::vector<Values>{wholeValues(0), wholeValues(1)}));
}

TEST_F(CheckpointView, RealMismatchNamesTensorAndShapes) {
  TinyModel flat({4, 12}, {});
  std::string path = save(flat, "flat");
  auto loadError = [&](const std::string &from, const TinyModel &model) {
    try {
      loadWhole(from, model);
    } catch (const Error &error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  // Another element count.
  TinyModel bigger({4, 3, 5}, {4, 15});
  EXPECT_EQ(loadError(path, bigger),
            "checkpoint " + path +
                " has tensor w of shape 4x12, the model wants 4x15 (held as "
                "4x3x5)");
  // The same count in another order (a transposed file shape) is no view of
  // what was written either.
  TinyModel transposed({4, 3, 4}, {12, 4});
  EXPECT_EQ(loadError(path, transposed),
            "checkpoint " + path +
                " has tensor w of shape 4x12, the model wants 12x4 (held as "
                "4x3x4)");
  // From a sharded checkpoint written under the view.
  TinyModel view({4, 3, 4}, {4, 12}, /*tp=*/3, /*splitDim=*/1);
  std::string sharded = saveSharded(view, 3, "sharded-view");
  TinyModel other({4, 13}, {});
  EXPECT_EQ(loadError(sharded, other),
            "checkpoint " + sharded +
                " has tensor w of shape 4x12 (held as 4x3x4), the model "
                "wants 4x13");
}

TEST(InitView, XavierFansFromFileShape) {
  TensorDesc view = {"w", DType::F32, 3, {4, 3, 4}, {0, 1, 0}, 2, {4, 12}};
  Fans fans = computeFans(view);
  EXPECT_EQ(fans.fanIn, 4);
  EXPECT_EQ(fans.fanOut, 12);
  // Without the file shape, [4, 3, 4] would read as a convolution.
  TensorDesc internal = {"w", DType::F32, 3, {4, 3, 4}};
  EXPECT_EQ(computeFans(internal).fanIn, 12);
}

TEST(InitView, RandomValuesAreTheSameForEitherView) {
  // 3 x 65536 x 4 elements: several of the Rng's chunks.
  const int64_t rows = 4, heads = 3, width = 65536;
  TinyModel view({rows, heads, width}, {rows, heads * width}, /*tp=*/3,
                 /*splitDim=*/1);
  TinyModel flat({rows, heads * width}, {});
  for (InitKind kind :
       {InitKind::XavierUniform, InitKind::Normal, InitKind::KaimingNormal}) {
    view.param.init = flat.param.init = {kind, 0, 0.02, -1, 1, 1, 0, "", ""};
    Values a(rows * heads * width), b(a.size());
    initParam(view.param, a.data(), 42);
    initParam(flat.param, b.data(), 42);
    ASSERT_EQ(a, b) << "init kind " << static_cast<int>(kind);
    // A process's piece (head 2) is the box of those values.
    MeshLayout mesh(view.model, 2, 3);
    Values piece(numElements(mesh.local(view.param.tensor)));
    mesh.cut(view.param.tensor, a.data(), piece.data(), 2);
    EXPECT_EQ(piece, referenceBox(b, {rows, heads, width}, {0, 2, 0},
                                  {rows, 1, width}));
  }
}

TEST_F(CheckpointView, InitFromFileInEitherShape) {
  Values w = wholeValues(0);
  std::string path = dir_ + "/init.safetensors";
  writeSafetensors(path, {{"w", DType::F32, {4, 12}, w.data()}}, {});
  TinyModel view({4, 3, 4}, {4, 12});
  view.param.init = {InitKind::File, 0, 1, -1, 1, 1, 0, path.c_str(), "w"};
  Values out(48, -1.0f);
  initParam(view.param, out.data(), 0);
  EXPECT_EQ(out, w);
  std::string internal = dir_ + "/init-internal.safetensors";
  writeSafetensors(internal, {{"w", DType::F32, {4, 3, 4}, w.data()}}, {});
  view.param.init.file = internal.c_str();
  std::fill(out.begin(), out.end(), -1.0f);
  initParam(view.param, out.data(), 0);
  EXPECT_EQ(out, w);
}

} // namespace
