//===- AtomicFile.h - Write a file so readers see all or nothing --*- C++ -*-===//
//
// A checkpoint (or data file) is written to a temporary file in the target's
// directory, fsynced, renamed over the target and the directory fsynced, so a
// crash, a full disk or a kill at any moment leaves either the previous file
// or the complete new one, never a torn one. On any error the temporary file
// is removed and a tgc::Error names the path and the errno text.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_ATOMICFILE_H
#define TGC_RUNTIME_CORE_ATOMICFILE_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace tgc {

class AtomicFileWriter {
public:
  /// Creates "<dir>/.<name>.tmp.XXXXXX" next to `path`.
  explicit AtomicFileWriter(const std::string &path);
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter &) = delete;
  AtomicFileWriter &operator=(const AtomicFileWriter &) = delete;

  void write(const void *data, size_t size);
  void write(const std::string &text) { write(text.data(), text.size()); }
  uint64_t bytesWritten() const { return written_; }

  /// fsync, close, rename over the target, fsync the directory.
  void commit();

  const std::string &tempPath() const { return tempPath_; }

private:
  void fail(const std::string &what, int errnum);

  std::string path_;
  std::string tempPath_;
  int fd_ = -1;
  uint64_t written_ = 0;
  bool committed_ = false;
};

/// Writes `contents` to `path` atomically.
void writeFileAtomically(const std::string &path, const std::string &contents);

/// The directory part of a path ("." when there is none).
std::string parentDirectory(const std::string &path);

/// `name` in directory `dir` ("dir/name"; `name` alone when `dir` is "").
std::string joinPath(const std::string &dir, const std::string &name);

/// fsyncs directory `dir`, so that renames in it survive a crash (best
/// effort: a directory that cannot be opened is left as it is).
void syncDirectory(const std::string &dir);

} // namespace tgc

#endif // TGC_RUNTIME_CORE_ATOMICFILE_H
