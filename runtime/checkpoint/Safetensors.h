//===- Safetensors.h - Read and write .safetensors files ----------*- C++ -*-===//
//
// The Hugging Face layout, readable by PyTorch (safetensors.torch.load_file)
// or by anything with a JSON parser:
//
//   8 bytes     little-endian uint64 N, the header length
//   N bytes     JSON: {"__metadata__": {"key": "value", ...},
//                      "<name>": {"dtype": "F32", "shape": [64, 10],
//                                 "data_offsets": [begin, end]}, ...}
//               padded with spaces to a multiple of 8
//   the rest    the tensors' bytes, row-major little-endian; offsets are
//               relative to the end of the header and tile it exactly
//
// The writer is atomic (see AtomicFile.h). The reader checks everything
// before handing out a tensor: header length against the file, JSON syntax,
// each entry's fields, dtype, shape, offsets inside the file, sizes matching
// shape x dtype, and that the tensors tile the data without gaps or overlaps.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CHECKPOINT_SAFETENSORS_H
#define TGC_RUNTIME_CHECKPOINT_SAFETENSORS_H

#include "runtime/core/MappedFile.h"
#include "runtime/core/Model.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace tgc {

/// The longest header the reader accepts (the reference implementation's
/// limit).
constexpr uint64_t kMaxSafetensorsHeader = 100u << 20;

struct SafetensorsTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0; ///< offsets into the data section
  const uint8_t *data = nullptr;

  int64_t numElements() const;
  std::string shapeString() const;
};

class SafetensorsFile {
public:
  /// Maps and validates `path`; throws tgc::Error naming the file and the
  /// problem.
  explicit SafetensorsFile(const std::string &path);

  const std::string &path() const { return file_.path(); }
  /// In the order of their data offsets.
  const std::vector<SafetensorsTensor> &tensors() const { return tensors_; }
  const SafetensorsTensor *find(const std::string &name) const;
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// The metadata value, or `fallback` when the key is absent.
  std::string metadataOr(const std::string &key,
                         const std::string &fallback) const;

private:
  MappedFile file_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

struct TensorToWrite {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void *data;
  /// When `data` is null: fills a buffer of the tensor's bytes just before
  /// they are written, so a file of many tensors needs memory for one.
  std::function<void(void *)> fill = nullptr;
};

/// Writes the tensors (in this order) and the metadata atomically; on error
/// the previous file at `path` is left as it was.
void writeSafetensors(const std::string &path,
                      const std::vector<TensorToWrite> &tensors,
                      const std::map<std::string, std::string> &metadata);

} // namespace tgc

#endif // TGC_RUNTIME_CHECKPOINT_SAFETENSORS_H
