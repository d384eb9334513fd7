//===- MappedFile.h - A read-only memory-mapped file --------------*- C++ -*-===//
//
// Data shards and checkpoints are read through mmap: the kernel pages them in
// on demand and shares them between processes on one node.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_MAPPEDFILE_H
#define TGC_RUNTIME_CORE_MAPPEDFILE_H

#include <cstdint>
#include <string>

namespace tgc {

class MappedFile {
public:
  /// Maps `path` read-only; throws tgc::Error naming the path when it cannot
  /// be opened or mapped (an empty file maps to data() == nullptr, size 0).
  explicit MappedFile(const std::string &path);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const std::string &path() const { return path_; }
  const uint8_t *data() const { return data_; }
  uint64_t size() const { return size_; }

private:
  std::string path_;
  const uint8_t *data_ = nullptr;
  uint64_t size_ = 0;
};

} // namespace tgc

#endif // TGC_RUNTIME_CORE_MAPPEDFILE_H
