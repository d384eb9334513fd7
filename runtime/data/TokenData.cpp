//===- TokenData.cpp - Token shards in llm.c's .bin layout --------*- C++ -*-===//

#include "runtime/data/TokenData.h"

#include "runtime/core/AtomicFile.h"
#include "runtime/core/Error.h"

#include <algorithm>
#include <cstring>
#include <glob.h>

namespace tgc {

//===----------------------------------------------------------------------===//
// TokenShard
//===----------------------------------------------------------------------===//

TokenShard::TokenShard(const std::string &path) : file_(path) {
  const uint64_t headerBytes = kTokenShardHeaderInts * sizeof(int32_t);
  if (file_.size() < headerBytes)
    throw Error(path + ": truncated token shard: " +
                std::to_string(file_.size()) + " bytes, the header alone is " +
                std::to_string(headerBytes));
  int32_t header[kTokenShardHeaderInts];
  std::memcpy(header, file_.data(), headerBytes);
  if (header[0] != kTokenShardMagic) {
    std::string hint;
    if (header[0] == 20240521)
      hint = " (this is a classification data file)";
    throw Error(path + ": bad magic " + std::to_string(header[0]) +
                ", expected " + std::to_string(kTokenShardMagic) +
                " (an llm.c token shard)" + hint);
  }
  if (header[1] != kTokenShardVersion)
    throw Error(path + ": unsupported token shard version " +
                std::to_string(header[1]) + ", expected " +
                std::to_string(kTokenShardVersion) + " (uint16 tokens)");
  if (header[2] < 0)
    throw Error(path + ": negative token count " + std::to_string(header[2]));
  numTokens_ = header[2];
  uint64_t have = file_.size() - headerBytes;
  uint64_t want = static_cast<uint64_t>(numTokens_) * sizeof(uint16_t);
  if (have < want)
    throw Error(path + ": truncated token shard: the header says " +
                std::to_string(numTokens_) + " tokens (" +
                std::to_string(want) + " bytes) but the file has " +
                std::to_string(have) + " bytes after the header");
  if (have > want)
    throw Error(path + ": token shard has " + std::to_string(have - want) +
                " bytes after the " + std::to_string(numTokens_) +
                " tokens its header announces");
  tokens_ = reinterpret_cast<const uint16_t *>(file_.data() + headerBytes);
}

void TokenShard::checkVocab(int64_t vocabSize) const {
  if (vocabSize <= 0 || vocabSize >= 65536)
    return;
  int maxToken = 0;
  const uint16_t *tokens = tokens_;
  int64_t count = numTokens_;
#pragma omp parallel for reduction(max : maxToken) schedule(static)
  for (int64_t i = 0; i < count; ++i)
    maxToken = std::max(maxToken, static_cast<int>(tokens[i]));
  if (maxToken < vocabSize)
    return;
  int64_t index = 0;
  while (tokens_[index] < vocabSize)
    ++index;
  throw Error(path() + ": token " + std::to_string(tokens_[index]) +
              " at index " + std::to_string(index) +
              " is outside the model's vocabulary of " +
              std::to_string(vocabSize) + " (largest token in the file: " +
              std::to_string(maxToken) + ")");
}

void writeTokenShard(const std::string &path,
                     const std::vector<uint16_t> &tokens) {
  if (tokens.size() > static_cast<size_t>(INT32_MAX))
    throw Error(path + ": " + std::to_string(tokens.size()) +
                " tokens do not fit one shard (at most 2^31-1)");
  int32_t header[kTokenShardHeaderInts] = {};
  header[0] = kTokenShardMagic;
  header[1] = kTokenShardVersion;
  header[2] = static_cast<int32_t>(tokens.size());
  AtomicFileWriter writer(path);
  writer.write(header, sizeof(header));
  writer.write(tokens.data(), tokens.size() * sizeof(uint16_t));
  writer.commit();
}

std::vector<std::string> expandDataPaths(const std::string &spec) {
  std::vector<std::string> paths;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string::npos)
      comma = spec.size();
    std::string item = spec.substr(start, comma - start);
    start = comma + 1;
    if (item.empty())
      continue;
    if (item.find_first_of("*?[") == std::string::npos) {
      paths.push_back(item); // a plain path: opening it reports a missing file
      continue;
    }
    glob_t matches;
    int rc = ::glob(item.c_str(), 0, nullptr, &matches);
    if (rc != 0) {
      ::globfree(&matches);
      throw Error(item + ": no file matches this pattern");
    }
    std::vector<std::string> found(matches.gl_pathv,
                                   matches.gl_pathv + matches.gl_pathc);
    ::globfree(&matches);
    std::sort(found.begin(), found.end());
    paths.insert(paths.end(), found.begin(), found.end());
  }
  if (paths.empty())
    throw Error("'" + spec + "': no data file given");
  return paths;
}

//===----------------------------------------------------------------------===//
// TokenLoader
//===----------------------------------------------------------------------===//

TokenLoader::TokenLoader(const Options &options)
    : options_(options), rng_(options.seed) {
  if (options.batch <= 0 || options.seqLen <= 0)
    throw Error("token loader needs a positive batch and sequence length, got " +
                std::to_string(options.batch) + " and " +
                std::to_string(options.seqLen));
  paths_ = expandDataPaths(options.paths);
  int64_t T = options.seqLen;
  windowStarts_.push_back(0);
  rowStarts_.push_back(0);
  for (const std::string &path : paths_) {
    auto shard = std::make_unique<TokenShard>(path);
    shard->checkVocab(options.vocabSize);
    int64_t n = shard->numTokens();
    totalTokens_ += n;
    windowStarts_.push_back(windowStarts_.back() + std::max<int64_t>(0, n - T));
    rowStarts_.push_back(rowStarts_.back() + (n > 0 ? (n - 1) / T : 0));
    shards_.push_back(std::move(shard));
  }
  if (windowStarts_.back() == 0) {
    std::string names = paths_.size() == 1 ? paths_[0]
                                           : std::to_string(paths_.size()) +
                                                 " shards from " + options.paths;
    throw Error(names + ": " + std::to_string(totalTokens_) +
                " tokens, too few for one sequence of " + std::to_string(T) +
                "+1 tokens");
  }
  rngAfterTaken_ = rng_.state();
  if (options_.random && options_.prefetch)
    startWorker();
}

TokenLoader::~TokenLoader() { stopWorker(); }

void TokenLoader::copyRow(int64_t shard, int64_t offset, int64_t row,
                          TokenBatch &batch) const {
  int64_t T = options_.seqLen;
  const uint16_t *source = shards_[shard]->tokens() + offset;
  int32_t *tokens = batch.tokens.data() + row * T;
  int32_t *targets = batch.targets.data() + row * T;
  for (int64_t t = 0; t < T; ++t) {
    tokens[t] = source[t];
    targets[t] = source[t + 1];
  }
}

void TokenLoader::fillRandom(Slot &slot, Rng &rng) const {
  int64_t B = options_.batch, T = options_.seqLen;
  slot.batch.tokens.resize(B * T);
  slot.batch.targets.resize(B * T);
  slot.batch.validRows = B;
  for (int64_t row = 0; row < B; ++row) {
    int64_t window = static_cast<int64_t>(
        rng.below(static_cast<uint64_t>(windowStarts_.back())));
    int64_t shard = std::upper_bound(windowStarts_.begin(), windowStarts_.end(),
                                     window) -
                    windowStarts_.begin() - 1;
    copyRow(shard, window - windowStarts_[shard], row, slot.batch);
  }
  slot.rngAfter = rng.state();
}

int64_t TokenLoader::batchesPerPass() const {
  int64_t rows = rowStarts_.back();
  return (rows + options_.batch - 1) / options_.batch;
}

void TokenLoader::fillInOrder(TokenBatch &batch, int64_t firstRow) const {
  int64_t B = options_.batch, T = options_.seqLen;
  int64_t rows = rowStarts_.back();
  batch.tokens.resize(B * T);
  batch.targets.resize(B * T);
  int64_t first = firstRow % rows;
  batch.validRows = std::min(B, rows - first);
  for (int64_t row = 0; row < B; ++row) {
    int64_t global = (first + row) % rows;
    int64_t shard = std::upper_bound(rowStarts_.begin(), rowStarts_.end(),
                                     global) -
                    rowStarts_.begin() - 1;
    copyRow(shard, (global - rowStarts_[shard]) * T, row, batch);
  }
}

const TokenBatch &TokenLoader::next() {
  if (!options_.random) {
    if (!current_)
      current_ = std::make_unique<Slot>();
    fillInOrder(current_->batch, samples_);
    samples_ += options_.batch;
    return current_->batch;
  }
  if (!running_) {
    if (!current_)
      current_ = std::make_unique<Slot>();
    fillRandom(*current_, rng_);
  } else {
    std::unique_lock<std::mutex> lock(mutex_);
    if (current_)
      free_.push_back(std::move(current_));
    changed_.notify_all();
    changed_.wait(lock, [&] { return !ready_.empty(); });
    current_ = std::move(ready_.front());
    ready_.pop_front();
    changed_.notify_all();
  }
  samples_ += options_.batch;
  rngAfterTaken_ = current_->rngAfter;
  return current_->batch;
}

DataPosition TokenLoader::position() const {
  DataPosition position;
  position.samples = samples_;
  if (!options_.random) {
    position.epochSamples = rowStarts_.back();
    position.epoch = samples_ / position.epochSamples;
  }
  position.rng = options_.random ? rngAfterTaken_ : "";
  return position;
}

void TokenLoader::setPosition(const DataPosition &position) {
  std::string names = paths_.size() == 1
                          ? paths_[0]
                          : std::to_string(paths_.size()) + " shards";
  if (position.samples < 0)
    throw Error(names + ": the data position " + position.toJson() +
                " counts no samples (a checkpoint from an older tgc: its "
                "trainer translates it)");
  if (!options_.random && position.epochSamples &&
      position.epochSamples != rowStarts_.back())
    throw Error(names + ": the data position was written for " +
                std::to_string(position.epochSamples) +
                " rows in order, these files hold " +
                std::to_string(rowStarts_.back()) +
                " (other data, or another sequence length)");
  bool restart = running_;
  stopWorker();
  if (options_.random) {
    Rng restored;
    if (!restored.setState(position.rng))
      throw Error(names + ": the data position has a bad rng state '" +
                  position.rng + "' (it was written for shuffled data: drop "
                  "--no-shuffle?)");
    rng_ = restored;
    rngAfterTaken_ = position.rng;
  }
  samples_ = position.samples;
  current_.reset();
  if (restart)
    startWorker();
}

DataPosition TokenLoader::translateLegacy(const DataPosition &legacy,
                                          int64_t step,
                                          int64_t batchSize) const {
  // Every step drew batchSize rows; the Rng draws once per row, so its state
  // after them does not depend on how they were batched.
  DataPosition position = legacy;
  position.samples = step * batchSize;
  position.cursor = 0;
  if (!options_.random) {
    // Older loaders restarted every pass over the data at its first row,
    // after a last batch that wrapped around: the same rows as the stream
    // only within the first pass.
    int64_t rows = rowStarts_.back();
    if (position.samples > rows)
      throw Error("the checkpoint's in-order data position (" +
                  std::to_string(position.samples) +
                  " sequences) is past the first pass over the " +
                  std::to_string(rows) +
                  " sequences of the data, where the tgc that wrote it "
                  "restarted each pass at the first row: resume it with that "
                  "version, or start over");
    position.epochSamples = rows;
    position.epoch = position.samples / rows;
  }
  return position;
}

void TokenLoader::rewind() { samples_ = 0; }

void TokenLoader::startWorker() {
  stopping_ = false;
  ready_.clear();
  running_ = true;
  worker_ = std::thread([this] { workerLoop(); });
}

void TokenLoader::stopWorker() {
  if (!running_)
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
  running_ = false;
  ready_.clear();
}

void TokenLoader::workerLoop() {
  // Two batches ahead: one for the next step, one being assembled.
  constexpr size_t kDepth = 2;
  Rng rng = rng_;
  while (true) {
    std::unique_ptr<Slot> slot;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || ready_.size() < kDepth; });
      if (stopping_)
        return;
      if (!free_.empty()) {
        slot = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (!slot)
      slot = std::make_unique<Slot>();
    fillRandom(*slot, rng);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.push_back(std::move(slot));
    }
    changed_.notify_all();
  }
}

} // namespace tgc
