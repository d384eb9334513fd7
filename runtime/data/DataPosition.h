//===- DataPosition.h - Where a data loader is, for resume --------*- C++ -*-===//
//
// A loader's whole state in terms that do not depend on the mesh: the
// samples (sequences or examples) drawn since the start of the run, the
// epoch, and the Rng state that reproduces the rest of the stream. Every
// process of a run draws every micro-batch of every step, so `samples` is
// the run's global sample index, whatever the micro-batch, the accumulation
// or the number of data replicas; a reader on another mesh continues the
// same stream of samples. A checkpoint stores the position as JSON in its
// metadata.
//
// Checkpoints written before `samples` existed hold a `cursor` in the
// writer's own units (its micro-batches for token data, rows of the epoch
// for classification data); Trainer translates those from the step and the
// batch size it recorded (runtime/train/Train.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_DATA_DATAPOSITION_H
#define TGC_RUNTIME_DATA_DATAPOSITION_H

#include <cstdint>
#include <string>

namespace tgc {

struct DataPosition {
  /// Samples drawn since the start; -1 when read from a checkpoint that
  /// predates it (then `cursor` holds the writer's count).
  int64_t samples = 0;
  int64_t epoch = 0;
  /// The epoch's length in samples when the data has epochs (a shuffled or
  /// in-order pass over the file), else 0; a reader checks it against its
  /// own data.
  int64_t epochSamples = 0;
  int64_t cursor = 0; ///< legacy checkpoints only (see above)
  std::string rng;    ///< Rng::state() text

  /// {"samples":S,"epoch":E,"epoch_samples":N,"rng":"..."}
  std::string toJson() const;
  /// Throws tgc::Error when `text` is not such an object (or the legacy
  /// {"epoch":E,"cursor":C,"rng":"..."}).
  static DataPosition fromJson(const std::string &text);

  bool operator==(const DataPosition &other) const {
    return samples == other.samples && epoch == other.epoch &&
           epochSamples == other.epochSamples && cursor == other.cursor &&
           rng == other.rng;
  }
};

} // namespace tgc

#endif // TGC_RUNTIME_DATA_DATAPOSITION_H
