//===- BuildCache.h - Compiled objects by content ------------------*- C++
//-*-===//
//
// A content-addressed cache of the host compiler's object files, so that a
// layer body compiled once (with the same compiler, flags, runtime headers
// and host CPU) is not compiled again: by the next build of the same model
// with another flag, or by another model with the same layer. An entry is
// the object and the SHA-256 of its bytes; an entry whose bytes do not
// match is removed and rebuilt, never linked. The cache keeps under a size
// limit by dropping the least recently used entries.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_COMPILER_PIPELINE_BUILDCACHE_H
#define TGC_COMPILER_PIPELINE_BUILDCACHE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mlir::tg {

/// The SHA-256 of `text` as 64 hex digits.
std::string sha256Hex(llvm::StringRef text);

class BuildCache {
public:
  /// No cache: every lookup misses, nothing is stored.
  BuildCache() = default;
  /// The cache in `dir` (created on the first store), trimmed to
  /// `maxBytes`.
  BuildCache(std::string dir, uint64_t maxBytes)
      : dir(std::move(dir)), maxBytes(maxBytes) {}

  /// $TGC_CACHE_DIR, else $XDG_CACHE_HOME/tgc, else ~/.cache/tgc; off when
  /// none can be found.
  static BuildCache standard(uint64_t maxBytes);

  bool enabled() const { return !dir.empty(); }
  llvm::StringRef directory() const { return dir; }

  /// Puts the object stored under `key` at `path` (a hard link, else a
  /// copy, so that trimming the cache meanwhile cannot take it away) when
  /// it is there and whole: its bytes hash to what was recorded. An entry
  /// that is not is removed, and nothing is put at `path`.
  bool fetch(llvm::StringRef key, llvm::StringRef path) const;

  /// Copies the object at `path` in under `key` (atomically: a reader sees
  /// all of it or none), then drops the least recently used entries until
  /// the cache holds at most its limit.
  llvm::Error store(llvm::StringRef key, llvm::StringRef path) const;

private:
  std::string objectPath(llvm::StringRef key) const;
  std::string sumPath(llvm::StringRef key) const;
  void trim() const;

  std::string dir;
  uint64_t maxBytes = 0;
};

} // namespace mlir::tg

#endif // TGC_COMPILER_PIPELINE_BUILDCACHE_H
