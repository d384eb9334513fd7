//===- ClassData.h - Classification data: features and labels -----*- C++ -*-===//
//
// The classification file layout (".tgcls", written by `tg-data csv`), all
// little-endian:
//
//   32 x int64 header
//     [0] magic 20240521      [1] version 1
//     [2] rows N              [3] features per row F
//     [4] classes C           [5] bytes per label: 4 (int32) or 8 (int64)
//     [6..31] 0
//   N x F float32 features, row-major
//   N labels (int32 or int64), each in [0, C)
//
// numpy reads it as: h = np.fromfile(f, np.int64, 32); x = np.fromfile(f,
// np.float32, N*F, offset=256); y = np.fromfile(f, np.int32 or np.int64, N,
// offset=256+4*N*F).
//
// ClassLoader serves micro-batches of B rows from a stream of rows. For
// training each epoch is a seeded random permutation of the N rows, and the
// stream is the permutations one after another: a batch that reaches the
// end of an epoch takes its last rows from the next one, so every row is
// used once per epoch and the rows after the first S are the same whatever
// the batch size (a run resumes on another mesh; DataPosition). In order
// (evaluation, --no-shuffle) row s of the stream is row s mod N; a pass from
// the start completes its last batch by wrapping around to the first rows
// (validRows says how many rows of it are new).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_DATA_CLASSDATA_H
#define TGC_RUNTIME_DATA_CLASSDATA_H

#include "runtime/core/MappedFile.h"
#include "runtime/core/Rng.h"
#include "runtime/data/DataPosition.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

constexpr int64_t kClassDataMagic = 20240521;
constexpr int64_t kClassDataVersion = 1;
constexpr int kClassDataHeaderInts = 32;

/// A mapped classification file, header, size and labels checked.
class ClassDataset {
public:
  /// Throws tgc::Error naming the file when it is missing, truncated, of
  /// another magic or version, or holds a label outside [0, C).
  explicit ClassDataset(const std::string &path);

  const std::string &path() const { return file_.path(); }
  int64_t numRows() const { return rows_; }
  int64_t numFeatures() const { return features_; }
  int64_t numClasses() const { return classes_; }
  const float *features(int64_t row) const { return featureData_ + row * features_; }
  int64_t label(int64_t row) const;

private:
  MappedFile file_;
  int64_t rows_ = 0, features_ = 0, classes_ = 0, labelBytes_ = 4;
  const float *featureData_ = nullptr;
  const uint8_t *labelData_ = nullptr;
};

/// Writes a classification file atomically; labelBytes is 4 or 8.
void writeClassData(const std::string &path, int64_t rows, int64_t features,
                    int64_t classes, const std::vector<float> &x,
                    const std::vector<int64_t> &labels, int labelBytes = 4);

struct ClassBatch {
  std::vector<float> features; ///< [B, F]
  std::vector<int64_t> labels; ///< [B]
  int64_t validRows = 0;       ///< rows that are not wrap-around padding
};

class ClassLoader {
public:
  struct Options {
    std::string path;
    int64_t batch = 1;
    uint64_t seed = 0;
    bool random = true; ///< shuffled epochs (training) or in order (eval)
  };

  explicit ClassLoader(const Options &options);

  /// The next micro-batch; valid until the following call.
  const ClassBatch &next();

  /// Rows taken, the epoch and the Rng state that shuffled it.
  DataPosition position() const;
  /// Continues as if the rows up to `position` had been taken. Throws
  /// tgc::Error naming the file when the position cannot be this file's.
  void setPosition(const DataPosition &position);

  /// The position a checkpoint from before DataPosition::samples means
  /// (its `cursor` counted the writer's units), given the step it was
  /// written at and its global batch size in samples. Throws tgc::Error
  /// saying why when that cannot be known exactly.
  DataPosition translateLegacy(const DataPosition &legacy, int64_t step,
                               int64_t batchSize) const;

  /// In-order mode: batches in one pass, and back to the start.
  int64_t batchesPerPass() const;
  void rewind() { samples_ = 0; }

  const ClassDataset &dataset() const { return data_; }

private:
  void shuffle();

  Options options_;
  ClassDataset data_;
  std::vector<int64_t> order_;
  int64_t samples_ = 0; ///< rows taken
  int64_t epoch_ = 0;   ///< the permutation in order_ (shuffled mode)
  Rng rng_;
  std::string epochRng_; ///< rng_ state before this epoch's shuffle
  ClassBatch batch_;
};

} // namespace tgc

#endif // TGC_RUNTIME_DATA_CLASSDATA_H
