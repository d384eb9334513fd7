//===- BuildCache.cpp - Compiled objects by content
//------------------------===//

#include "compiler/pipeline/BuildCache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <sys/time.h>

using namespace mlir::tg;
using llvm::StringRef;
namespace fs = llvm::sys::fs;

std::string mlir::tg::sha256Hex(StringRef text) {
  return llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(text)),
                     /*LowerCase=*/true);
}

BuildCache BuildCache::standard(uint64_t maxBytes) {
  llvm::SmallString<256> dir;
  if (const char *env = std::getenv("TGC_CACHE_DIR"); env && *env) {
    dir = env;
  } else if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    dir = xdg;
    llvm::sys::path::append(dir, "tgc");
  } else if (const char *home = std::getenv("HOME"); home && *home) {
    dir = home;
    llvm::sys::path::append(dir, ".cache", "tgc");
  } else {
    return BuildCache();
  }
  llvm::sys::path::append(dir, "objects");
  return BuildCache(dir.str().str(), maxBytes);
}

std::string BuildCache::objectPath(StringRef key) const {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, key + ".o");
  return path.str().str();
}

std::string BuildCache::sumPath(StringRef key) const {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, key + ".sha256");
  return path.str().str();
}

bool BuildCache::fetch(StringRef key, StringRef path) const {
  if (!enabled())
    return false;
  std::string object = objectPath(key), sum = sumPath(key);
  auto recorded = llvm::MemoryBuffer::getFile(sum);
  (void)fs::remove(path);
  bool put = recorded && (!fs::create_hard_link(object, path) ||
                          !fs::copy_file(object, path));
  auto bytes =
      put ? llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                        /*RequiresNullTerminator=*/false)
          : llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>>(
                std::make_error_code(std::errc::io_error));
  if (bytes &&
      sha256Hex((*bytes)->getBuffer()) == (*recorded)->getBuffer().trim()) {
    // Used now: the last to go when the cache is trimmed.
    (void)::utimes(object.c_str(), nullptr);
    return true;
  }
  // Missing, or bytes that are not what was stored: never linked.
  (void)fs::remove(path);
  if (recorded) {
    (void)fs::remove(object);
    (void)fs::remove(sum);
  }
  return false;
}

llvm::Error BuildCache::store(StringRef key, StringRef path) const {
  if (!enabled())
    return llvm::Error::success();
  if (std::error_code ec = fs::create_directories(dir))
    return llvm::createStringError("cannot create the build cache " + dir +
                                   ": " + ec.message());
  auto bytes = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!bytes)
    return llvm::createStringError("cannot read " + path.str() + ": " +
                                   bytes.getError().message());
  // Each half written to a temporary in the cache and renamed into place,
  // the sum last: a lookup that finds the sum finds the whole object.
  auto put = [&](const std::string &target, StringRef contents) -> llvm::Error {
    llvm::SmallString<256> temp;
    int fd;
    if (std::error_code ec =
            fs::createUniqueFile(target + ".tmp-%%%%%%%%", fd, temp))
      return llvm::createStringError("cannot write the build cache " + dir +
                                     ": " + ec.message());
    {
      llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
      os << contents;
      os.close();
      if (os.has_error()) {
        (void)fs::remove(temp);
        return llvm::createStringError("cannot write " + temp.str().str() +
                                       ": " + os.error().message());
      }
    }
    if (std::error_code ec = fs::rename(temp, target)) {
      (void)fs::remove(temp);
      return llvm::createStringError("cannot write " + target + ": " +
                                     ec.message());
    }
    return llvm::Error::success();
  };
  StringRef contents = (*bytes)->getBuffer();
  if (llvm::Error error = put(objectPath(key), contents))
    return error;
  if (llvm::Error error = put(sumPath(key), sha256Hex(contents) + "\n"))
    return error;
  trim();
  return llvm::Error::success();
}

void BuildCache::trim() const {
  struct Entry {
    std::string object;
    uint64_t bytes;
    llvm::sys::TimePoint<> used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    if (llvm::sys::path::extension(it->path()) != ".o")
      continue;
    fs::file_status status;
    if (fs::status(it->path(), status))
      continue;
    entries.push_back(
        {it->path(), status.getSize(), status.getLastModificationTime()});
    total += status.getSize();
  }
  if (total <= maxBytes)
    return;
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.used < b.used; });
  for (const Entry &e : entries) {
    if (total <= maxBytes)
      break;
    llvm::SmallString<256> sum(e.object);
    llvm::sys::path::replace_extension(sum, ".sha256");
    (void)fs::remove(sum);
    (void)fs::remove(e.object);
    total -= e.bytes;
  }
}
