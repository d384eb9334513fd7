//===- InfoCommand.cpp - tg-data info: what a file holds --------*- C++ -*-===//
//
// Opens a file with the runtime's own readers (TokenShard, ClassDataset), so
// a file that info accepts is one training accepts, and a corrupt one fails
// with the same message it would give at the start of training.
//
//===----------------------------------------------------------------------===//

#include "tools/tg-data/Commands.h"

#include "runtime/core/Error.h"
#include "runtime/core/FloatFormat.h"
#include "runtime/core/MappedFile.h"
#include "runtime/data/ClassData.h"
#include "runtime/data/TokenData.h"
#include "tools/tg-data/CommandLine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace tgc {
namespace data {

namespace {

const char *const kInfoAbout =
    "Prints what llm.c token shards (.bin) and classification files (.tgcls)\n"
    "hold, after checking them as training would:\n"
    "  token shard: tokens, largest token, the vocabulary a model needs to\n"
    "    read it (largest token + 1), distinct tokens, and how often GPT-2's\n"
    "    <|endoftext|> (50256) occurs when the largest token reaches it;\n"
    "  classification file: rows, features, classes, label width, feature\n"
    "    range and the number of rows of each class.\n"
    "A file that is truncated, of another format or has bad contents is an\n"
    "error naming the file and the problem.\n";

void describeTokenShard(const std::string &path) {
  TokenShard shard(path);
  const int64_t count = shard.numTokens();
  std::vector<int64_t> seen(65536, 0);
  int maxToken = -1;
  for (int64_t i = 0; i < count; ++i) {
    int token = shard.tokens()[i];
    ++seen[token];
    maxToken = std::max(maxToken, token);
  }
  int64_t distinct =
      std::count_if(seen.begin(), seen.end(), [](int64_t n) { return n > 0; });
  std::printf("%s: llm.c token shard (version %d)\n", path.c_str(),
              kTokenShardVersion);
  std::printf("  tokens: %lld\n", static_cast<long long>(count));
  if (count == 0)
    return;
  std::printf("  max token: %d\n", maxToken);
  std::printf("  vocabulary needed: %d\n", maxToken + 1);
  std::printf("  distinct tokens: %lld\n", static_cast<long long>(distinct));
  if (maxToken >= 50256)
    std::printf("  <|endoftext|> (50256): %lld\n",
                static_cast<long long>(seen[50256]));
}

void describeClassData(const std::string &path) {
  ClassDataset data(path);
  const int64_t rows = data.numRows(), features = data.numFeatures(),
                classes = data.numClasses();
  int64_t labelBytes;
  {
    MappedFile file(path);
    std::memcpy(&labelBytes, file.data() + 5 * sizeof(int64_t),
                sizeof(labelBytes));
  }
  std::printf("%s: classification data (version %lld)\n", path.c_str(),
              static_cast<long long>(kClassDataVersion));
  std::printf("  rows: %lld\n", static_cast<long long>(rows));
  std::printf("  features: %lld (float32)\n", static_cast<long long>(features));
  std::printf("  classes: %lld\n", static_cast<long long>(classes));
  std::printf("  labels: int%lld\n", static_cast<long long>(labelBytes * 8));
  if (rows == 0)
    return;
  float lo = INFINITY, hi = -INFINITY;
  int64_t nonFinite = 0;
  std::vector<int64_t> histogram(classes, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = data.features(r);
    for (int64_t f = 0; f < features; ++f) {
      if (!std::isfinite(x[f])) {
        ++nonFinite;
        continue;
      }
      lo = std::min(lo, x[f]);
      hi = std::max(hi, x[f]);
    }
    ++histogram[data.label(r)];
  }
  if (lo <= hi)
    std::printf("  feature range: [%s, %s]\n", formatFloat(lo).c_str(),
                formatFloat(hi).c_str());
  if (nonFinite > 0)
    std::printf("  non-finite features: %lld\n",
                static_cast<long long>(nonFinite));
  std::string counts;
  for (int64_t c = 0; c < classes; ++c)
    counts += (c == 0 ? "" : " ") + std::to_string(c) + ":" +
              std::to_string(histogram[c]);
  std::printf("  rows per class: %s\n", counts.c_str());
}

} // namespace

int runInfoCommand(const std::vector<std::string> &args) {
  std::vector<std::string> paths;
  CommandLine cl("tg-data info", "FILE...", kInfoAbout);
  cl.setOperands("FILE", &paths, 1, -1);
  if (!cl.parse(args))
    return 0;
  for (const std::string &path : paths) {
    uint8_t magic[8] = {};
    uint64_t size;
    {
      MappedFile file(path);
      size = file.size();
      if (size > 0)
        std::memcpy(magic, file.data(), std::min<uint64_t>(size, 8));
    }
    int32_t magic32;
    int64_t magic64;
    std::memcpy(&magic32, magic, 4);
    std::memcpy(&magic64, magic, 8);
    if (size >= 4 && magic32 == kTokenShardMagic)
      describeTokenShard(path);
    else if (size >= 8 && magic64 == kClassDataMagic)
      describeClassData(path);
    else if (size < 8)
      throw Error(path + ": " + std::to_string(size) +
                  " bytes: too short for a token shard or a classification "
                  "file header");
    else {
      char first[32];
      std::snprintf(first, sizeof(first), "%02x %02x %02x %02x", magic[0],
                    magic[1], magic[2], magic[3]);
      throw Error(path + ": neither an llm.c token shard (magic " +
                  std::to_string(kTokenShardMagic) +
                  ") nor a classification file (magic " +
                  std::to_string(kClassDataMagic) + "): it starts with bytes " +
                  first);
    }
  }
  return 0;
}

} // namespace data
} // namespace tgc
