//===- TokenData.h - Token shards in llm.c's .bin layout ----------*- C++ -*-===//
//
// A shard is 256 little-endian int32 (header[0] = 20240520, header[1] = 1,
// header[2] = number of tokens, the rest 0) followed by that many uint16
// tokens, the layout llm.c's data scripts write. Shards are mmapped.
//
// TokenLoader serves micro-batches of B rows of T+1 consecutive tokens:
// tokens = row[0..T), targets = row[1..T]. For training every row is a window
// drawn uniformly from all windows of all shards with a seeded Rng (one draw
// per row), and a prefetch thread assembles the next batches while the step
// runs; in order (validation, and --no-shuffle training) rows are read with
// stride T, so every token is predicted once, and the stream of rows goes on
// across the end of the data (row r is row r mod rows). Either way the
// stream is one of rows, not of batches: the rows after the first S are the
// same whatever the batch size, which is what lets a run resume on another
// mesh (DataPosition).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_DATA_TOKENDATA_H
#define TGC_RUNTIME_DATA_TOKENDATA_H

#include "runtime/core/MappedFile.h"
#include "runtime/core/Rng.h"
#include "runtime/data/DataPosition.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tgc {

constexpr int32_t kTokenShardMagic = 20240520;
constexpr int32_t kTokenShardVersion = 1;
constexpr int kTokenShardHeaderInts = 256;

/// One mapped shard, its header and size checked.
class TokenShard {
public:
  /// Throws tgc::Error naming the file when it is missing, too short for the
  /// header, has another magic or version, or holds fewer or more token
  /// bytes than the header says.
  explicit TokenShard(const std::string &path);

  const std::string &path() const { return file_.path(); }
  int64_t numTokens() const { return numTokens_; }
  const uint16_t *tokens() const { return tokens_; }

  /// Throws when a token is >= vocabSize, naming the file, the token and
  /// its index.
  void checkVocab(int64_t vocabSize) const;

private:
  MappedFile file_;
  int64_t numTokens_ = 0;
  const uint16_t *tokens_ = nullptr;
};

/// Writes a shard atomically (tokens must be < 65536).
void writeTokenShard(const std::string &path,
                     const std::vector<uint16_t> &tokens);

/// The shard paths `spec` names: a file, a glob pattern ("train_*.bin",
/// sorted) or a comma-separated list of either. Throws when nothing matches.
std::vector<std::string> expandDataPaths(const std::string &spec);

struct TokenBatch {
  std::vector<int32_t> tokens;  ///< [B, T]
  std::vector<int32_t> targets; ///< [B, T]
  int64_t validRows = 0; ///< rows that are not wrap-around padding (eval)
};

class TokenLoader {
public:
  struct Options {
    std::string paths; ///< see expandDataPaths
    int64_t batch = 1;
    int64_t seqLen = 1;
    int64_t vocabSize = 0; ///< 0: not checked
    uint64_t seed = 0;
    bool random = true;   ///< random windows (training) or in order (eval)
    bool prefetch = true; ///< a thread prepares the next batches (random)
  };

  explicit TokenLoader(const Options &options);
  ~TokenLoader();
  TokenLoader(const TokenLoader &) = delete;
  TokenLoader &operator=(const TokenLoader &) = delete;

  /// The next micro-batch; valid until the following call.
  const TokenBatch &next();

  /// Rows taken so far and the Rng state after the last of them.
  DataPosition position() const;
  /// Continues as if the rows up to `position` had been taken (any number,
  /// not only whole batches of this loader). Throws tgc::Error naming the
  /// data when the position cannot be this data's.
  void setPosition(const DataPosition &position);

  /// The position a checkpoint from before DataPosition::samples means
  /// (its `cursor` counted the writer's units), given the step it was
  /// written at and its global batch size in samples. Throws tgc::Error
  /// saying why when that cannot be known exactly.
  DataPosition translateLegacy(const DataPosition &legacy, int64_t step,
                               int64_t batchSize) const;

  /// In-order mode: batches in one pass from the start (the last one
  /// completed by wrapping around to the start), and back to the start.
  int64_t batchesPerPass() const;
  void rewind();

  int64_t numTokens() const { return totalTokens_; }
  const std::vector<std::string> &paths() const { return paths_; }

private:
  struct Slot {
    TokenBatch batch;
    std::string rngAfter;
  };

  void fillRandom(Slot &slot, Rng &rng) const;
  void fillInOrder(TokenBatch &batch, int64_t firstRow) const;
  void copyRow(int64_t shard, int64_t offset, int64_t row,
               TokenBatch &batch) const;
  void startWorker();
  void stopWorker();
  void workerLoop();

  Options options_;
  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<TokenShard>> shards_;
  std::vector<int64_t> windowStarts_; ///< prefix sums of windows per shard
  std::vector<int64_t> rowStarts_;    ///< prefix sums of in-order rows
  int64_t totalTokens_ = 0;

  // Consumer state.
  int64_t samples_ = 0; ///< rows taken
  std::string rngAfterTaken_;
  std::unique_ptr<Slot> current_;

  // Producer state (owned by the worker while it runs).
  Rng rng_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<Slot>> ready_;
  std::vector<std::unique_ptr<Slot>> free_;
  bool stopping_ = false;
  bool running_ = false;
};

} // namespace tgc

#endif // TGC_RUNTIME_DATA_TOKENDATA_H
