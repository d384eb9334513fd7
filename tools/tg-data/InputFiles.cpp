//===- InputFiles.cpp - Finding and reading inputs --------------*- C++ -*-===//

#include "tools/tg-data/InputFiles.h"

#include "runtime/core/Error.h"
#include "runtime/core/MappedFile.h"

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <fnmatch.h>
#include <set>
#include <sys/stat.h>
#include <utility>
#include <zlib.h>

namespace tgc {
namespace data {

namespace {

bool matchesAny(const std::string &name,
                const std::vector<std::string> &globs) {
  if (globs.empty())
    return true;
  for (const std::string &glob : globs)
    if (::fnmatch(glob.c_str(), name.c_str(), 0) == 0)
      return true;
  return false;
}

void walkDirectory(const std::string &dir,
                   const std::vector<std::string> &globs,
                   std::vector<std::string> &files) {
  DIR *handle = ::opendir(dir.c_str());
  if (!handle)
    throwErrno(dir, "cannot read directory", errno);
  std::vector<std::string> names;
  errno = 0;
  while (dirent *entry = ::readdir(handle)) {
    std::string name = entry->d_name;
    if (name.empty() || name[0] == '.')
      continue; // ".", "..", and hidden entries such as .git
    names.push_back(std::move(name));
  }
  int saved = errno;
  ::closedir(handle);
  if (saved != 0)
    throwErrno(dir, "cannot read directory", saved);
  for (const std::string &name : names) {
    std::string path = dir.back() == '/' ? dir + name : dir + "/" + name;
    struct stat info;
    if (::lstat(path.c_str(), &info) != 0)
      throwErrno(path, "cannot stat", errno);
    if (S_ISLNK(info.st_mode)) {
      // Follow links to files; links to directories could make cycles.
      if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
        continue;
    }
    if (S_ISDIR(info.st_mode))
      walkDirectory(path, globs, files);
    else if (S_ISREG(info.st_mode) && matchesAny(name, globs))
      files.push_back(path);
  }
}

} // namespace

std::vector<std::string>
listInputFiles(const std::vector<std::string> &operands,
               const std::vector<std::string> &globs) {
  std::vector<std::string> files;
  std::set<std::pair<dev_t, ino_t>> seen;
  auto add = [&](const std::string &path) {
    struct stat info;
    if (::stat(path.c_str(), &info) != 0)
      throwErrno(path, "cannot stat", errno);
    if (seen.insert({info.st_dev, info.st_ino}).second)
      files.push_back(path);
  };
  for (const std::string &operand : operands) {
    struct stat info;
    if (operand.empty())
      throw Error("'': an empty input path");
    if (::stat(operand.c_str(), &info) != 0) {
      if (errno == ENOENT)
        throw Error(operand + ": no such file or directory");
      throwErrno(operand, "cannot read", errno);
    }
    if (S_ISDIR(info.st_mode)) {
      std::vector<std::string> found;
      walkDirectory(operand, globs, found);
      std::sort(found.begin(), found.end());
      for (const std::string &path : found)
        add(path);
    } else if (S_ISREG(info.st_mode)) {
      add(operand);
    } else {
      throw Error(operand + ": not a regular file or a directory");
    }
  }
  return files;
}

bool isGzip(const std::string &data) {
  return data.size() >= 2 && static_cast<uint8_t>(data[0]) == 0x1F &&
         static_cast<uint8_t>(data[1]) == 0x8B;
}

std::string gunzip(const uint8_t *data, uint64_t size,
                   const std::string &path) {
  z_stream stream = {};
  // 16 + MAX_WBITS: a gzip wrapper, whose CRC-32 and length zlib checks.
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK)
    throw Error(path + ": cannot start zlib's inflate");
  std::string out;
  char buffer[1 << 16];
  uint64_t consumed = 0;
  int rc = Z_OK;
  while (true) {
    // avail_in is 32-bit: feed large files in pieces.
    if (stream.avail_in == 0 && consumed < size) {
      uint64_t chunk = std::min<uint64_t>(size - consumed, 1u << 30);
      stream.next_in = const_cast<Bytef *>(data + consumed);
      stream.avail_in = static_cast<uInt>(chunk);
      consumed += chunk;
    }
    stream.next_out = reinterpret_cast<Bytef *>(buffer);
    stream.avail_out = sizeof(buffer);
    rc = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - stream.avail_out);
    if (rc == Z_STREAM_END) {
      // gzip allows several members back to back (cat a.gz b.gz).
      if (stream.avail_in == 0 && consumed == size)
        break;
      if (inflateReset(&stream) != Z_OK)
        break;
      continue;
    }
    if (rc == Z_BUF_ERROR && stream.avail_in == 0 && consumed == size) {
      inflateEnd(&stream);
      throw Error(path + ": truncated gzip data: the stream ends after " +
                  std::to_string(size) + " compressed bytes (" +
                  std::to_string(out.size()) + " bytes decompressed)");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      std::string message =
          stream.msg ? stream.msg : "error " + std::to_string(rc);
      inflateEnd(&stream);
      throw Error(path + ": corrupt gzip data: " + message + " (after " +
                  std::to_string(out.size()) + " decompressed bytes)");
    }
  }
  inflateEnd(&stream);
  return out;
}

std::string readInputFile(const std::string &path) {
  MappedFile file(path);
  const uint8_t *data = file.data();
  if (file.size() >= 2 && data[0] == 0x1F && data[1] == 0x8B)
    return gunzip(data, file.size(), path);
  return std::string(reinterpret_cast<const char *>(data), file.size());
}

} // namespace data
} // namespace tgc
