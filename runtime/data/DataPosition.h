//===- DataPosition.h - Where a data loader is, for resume --------*- C++ -*-===//
//
// A loader's whole state: the epoch, the cursor inside it and the RNG state
// that reproduces the rest of the stream. A checkpoint stores it as JSON in
// its metadata; restoring it makes the loader yield the same batches as an
// uninterrupted run.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_DATA_DATAPOSITION_H
#define TGC_RUNTIME_DATA_DATAPOSITION_H

#include <cstdint>
#include <string>

namespace tgc {

struct DataPosition {
  int64_t epoch = 0;
  int64_t cursor = 0; ///< batches (token data) or rows (classification) done
  std::string rng;    ///< Rng::state() text

  /// {"epoch":E,"cursor":C,"rng":"..."}
  std::string toJson() const;
  /// Throws tgc::Error when `text` is not such an object.
  static DataPosition fromJson(const std::string &text);

  bool operator==(const DataPosition &other) const {
    return epoch == other.epoch && cursor == other.cursor && rng == other.rng;
  }
};

} // namespace tgc

#endif // TGC_RUNTIME_DATA_DATAPOSITION_H
