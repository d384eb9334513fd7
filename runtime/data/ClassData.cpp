//===- ClassData.cpp - Classification data: features and labels ---*- C++ -*-===//

#include "runtime/data/ClassData.h"

#include "runtime/core/AtomicFile.h"
#include "runtime/core/Error.h"

#include <cstring>

namespace tgc {

//===----------------------------------------------------------------------===//
// ClassDataset
//===----------------------------------------------------------------------===//

ClassDataset::ClassDataset(const std::string &path) : file_(path) {
  const uint64_t headerBytes = kClassDataHeaderInts * sizeof(int64_t);
  if (file_.size() < headerBytes)
    throw Error(path + ": truncated classification file: " +
                std::to_string(file_.size()) +
                " bytes, the header alone is " + std::to_string(headerBytes));
  int64_t header[kClassDataHeaderInts];
  std::memcpy(header, file_.data(), headerBytes);
  if (header[0] != kClassDataMagic) {
    int32_t first;
    std::memcpy(&first, file_.data(), 4);
    std::string hint = first == 20240520 ? " (this is an llm.c token shard)" : "";
    throw Error(path + ": bad magic " + std::to_string(header[0]) +
                ", expected " + std::to_string(kClassDataMagic) +
                " (a tg-data classification file)" + hint);
  }
  if (header[1] != kClassDataVersion)
    throw Error(path + ": unsupported classification file version " +
                std::to_string(header[1]) + ", expected " +
                std::to_string(kClassDataVersion));
  rows_ = header[2];
  features_ = header[3];
  classes_ = header[4];
  labelBytes_ = header[5];
  if (rows_ < 0 || features_ <= 0 || classes_ <= 0 ||
      (labelBytes_ != 4 && labelBytes_ != 8) || features_ > (int64_t(1) << 32) ||
      rows_ > (int64_t(1) << 40))
    throw Error(path + ": bad header: " + std::to_string(rows_) + " rows, " +
                std::to_string(features_) + " features, " +
                std::to_string(classes_) + " classes, " +
                std::to_string(labelBytes_) + "-byte labels");
  uint64_t want = static_cast<uint64_t>(rows_) *
                  (static_cast<uint64_t>(features_) * 4 + labelBytes_);
  uint64_t have = file_.size() - headerBytes;
  if (have < want)
    throw Error(path + ": truncated classification file: the header says " +
                std::to_string(rows_) + " rows of " +
                std::to_string(features_) + " features (" +
                std::to_string(want) + " bytes) but the file has " +
                std::to_string(have) + " bytes after the header");
  if (have > want)
    throw Error(path + ": classification file has " +
                std::to_string(have - want) + " bytes after its " +
                std::to_string(rows_) + " rows");
  featureData_ = reinterpret_cast<const float *>(file_.data() + headerBytes);
  labelData_ = file_.data() + headerBytes + rows_ * features_ * 4;
  for (int64_t row = 0; row < rows_; ++row) {
    int64_t value = label(row);
    if (value < 0 || value >= classes_)
      throw Error(path + ": row " + std::to_string(row) + " has label " +
                  std::to_string(value) + ", outside [0, " +
                  std::to_string(classes_) + ")");
  }
}

int64_t ClassDataset::label(int64_t row) const {
  if (labelBytes_ == 4) {
    int32_t value;
    std::memcpy(&value, labelData_ + row * 4, 4);
    return value;
  }
  int64_t value;
  std::memcpy(&value, labelData_ + row * 8, 8);
  return value;
}

void writeClassData(const std::string &path, int64_t rows, int64_t features,
                    int64_t classes, const std::vector<float> &x,
                    const std::vector<int64_t> &labels, int labelBytes) {
  if (static_cast<int64_t>(x.size()) != rows * features ||
      static_cast<int64_t>(labels.size()) != rows)
    throw Error(path + ": " + std::to_string(x.size()) + " features and " +
                std::to_string(labels.size()) + " labels do not make " +
                std::to_string(rows) + " rows of " + std::to_string(features));
  if (labelBytes != 4 && labelBytes != 8)
    throw Error(path + ": labels are 4 or 8 bytes, not " +
                std::to_string(labelBytes));
  int64_t header[kClassDataHeaderInts] = {};
  header[0] = kClassDataMagic;
  header[1] = kClassDataVersion;
  header[2] = rows;
  header[3] = features;
  header[4] = classes;
  header[5] = labelBytes;
  AtomicFileWriter writer(path);
  writer.write(header, sizeof(header));
  writer.write(x.data(), x.size() * sizeof(float));
  if (labelBytes == 8) {
    writer.write(labels.data(), labels.size() * sizeof(int64_t));
  } else {
    std::vector<int32_t> narrow(labels.begin(), labels.end());
    writer.write(narrow.data(), narrow.size() * sizeof(int32_t));
  }
  writer.commit();
}

//===----------------------------------------------------------------------===//
// ClassLoader
//===----------------------------------------------------------------------===//

ClassLoader::ClassLoader(const Options &options)
    : options_(options), data_(options.path), rng_(options.seed) {
  if (options.batch <= 0)
    throw Error("classification loader needs a positive batch, got " +
                std::to_string(options.batch));
  if (data_.numRows() == 0)
    throw Error(options.path + ": no rows");
  if (options.random && data_.numRows() < options.batch)
    throw Error(options.path + ": " + std::to_string(data_.numRows()) +
                " rows, fewer than one batch of " +
                std::to_string(options.batch));
  order_.resize(data_.numRows());
  if (options.random)
    shuffle();
}

void ClassLoader::shuffle() {
  epochRng_ = rng_.state();
  for (int64_t i = 0; i < static_cast<int64_t>(order_.size()); ++i)
    order_[i] = i;
  // Fisher-Yates with our own Rng: the same permutation everywhere.
  for (int64_t i = static_cast<int64_t>(order_.size()) - 1; i > 0; --i) {
    int64_t j = static_cast<int64_t>(rng_.below(static_cast<uint64_t>(i + 1)));
    std::swap(order_[i], order_[j]);
  }
}

int64_t ClassLoader::batchesPerPass() const {
  return (data_.numRows() + options_.batch - 1) / options_.batch;
}

const ClassBatch &ClassLoader::next() {
  int64_t B = options_.batch, F = data_.numFeatures(), N = data_.numRows();
  batch_.features.resize(B * F);
  batch_.labels.resize(B);
  for (int64_t row = 0; row < B; ++row) {
    int64_t s = samples_ + row, source = s % N;
    if (options_.random) {
      // The stream's epoch s / N: reshuffle on entering it.
      while (epoch_ < s / N) {
        ++epoch_;
        shuffle();
      }
      source = order_[source];
    }
    std::memcpy(&batch_.features[row * F], data_.features(source), F * 4);
    batch_.labels[row] = data_.label(source);
  }
  batch_.validRows = options_.random ? B : std::min(B, N - samples_ % N);
  samples_ += B;
  return batch_;
}

DataPosition ClassLoader::position() const {
  DataPosition position;
  position.samples = samples_;
  position.epoch = options_.random ? epoch_ : samples_ / data_.numRows();
  position.epochSamples = data_.numRows();
  position.rng = options_.random ? epochRng_ : "";
  return position;
}

DataPosition ClassLoader::translateLegacy(const DataPosition &legacy,
                                          int64_t step,
                                          int64_t batchSize) const {
  int64_t N = data_.numRows();
  DataPosition position = legacy;
  position.cursor = 0;
  position.epochSamples = N;
  if (!options_.random) {
    position.samples = step * batchSize;
    position.epoch = position.samples / N;
    return position;
  }
  // The older loader was `cursor` rows into epoch `epoch`'s permutation
  // (skipping the last N mod B rows of each): the stream continues with
  // that permutation from that row, which is sample epoch * N + cursor of
  // the stream that uses every row.
  if (legacy.cursor < 0 || legacy.cursor > N || legacy.epoch < 0)
    throw Error(options_.path + ": data position " + legacy.toJson() +
                " is outside the " + std::to_string(N) + " rows");
  position.samples = legacy.epoch * N + legacy.cursor;
  return position;
}

void ClassLoader::setPosition(const DataPosition &position) {
  int64_t N = data_.numRows();
  if (position.samples < 0)
    throw Error(options_.path + ": the data position " + position.toJson() +
                " counts no samples (a checkpoint from an older tgc: its "
                "trainer translates it)");
  if (position.epochSamples && position.epochSamples != N)
    throw Error(options_.path + ": the data position was written for epochs "
                "of " + std::to_string(position.epochSamples) +
                " rows, this file has " + std::to_string(N) + " (other data)");
  // The shuffled stream's epoch of the next row; position.epoch may be one
  // behind it when the writer stopped exactly at the end of an epoch.
  if (options_.random && (position.epoch < 0 ||
                          position.epoch > position.samples / N ||
                          position.epoch < (position.samples - 1) / N))
    throw Error(options_.path + ": data position " + position.toJson() +
                " puts sample " + std::to_string(position.samples) +
                " in epoch " + std::to_string(position.epoch) + " of " +
                std::to_string(N) + " rows");
  if (options_.random) {
    Rng restored;
    if (!restored.setState(position.rng))
      throw Error(options_.path + ": the data position has a bad rng state '" +
                  position.rng + "' (it was written for shuffled data: drop "
                  "--no-shuffle?)");
    rng_ = restored;
    shuffle();
    epoch_ = position.epoch;
  }
  samples_ = position.samples;
}

} // namespace tgc
