//===- AtomicFile.cpp - Write a file so readers see all or nothing -*- C++ -*-===//

#include "runtime/core/AtomicFile.h"

#include "runtime/core/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tgc {

std::string parentDirectory(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

std::string joinPath(const std::string &dir, const std::string &name) {
  return (dir.empty() || dir.back() == '/' ? dir : dir + "/") + name;
}

static std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

AtomicFileWriter::AtomicFileWriter(const std::string &path) : path_(path) {
  if (path.empty() || path.back() == '/')
    throw Error("'" + path + "': not a file path");
  tempPath_ = parentDirectory(path) + "/." + baseName(path) + ".tmp.XXXXXX";
  std::vector<char> name(tempPath_.begin(), tempPath_.end());
  name.push_back('\0');
  fd_ = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd_ < 0) {
    int saved = errno;
    tempPath_.clear();
    throwErrno(path, "cannot create a temporary file in " +
                         parentDirectory(path),
               saved);
  }
  tempPath_ = name.data();
  // mkstemp makes the file 0600; a checkpoint is as readable as any file.
  ::fchmod(fd_, 0644);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!committed_ && !tempPath_.empty())
    ::unlink(tempPath_.c_str());
}

void AtomicFileWriter::fail(const std::string &what, int errnum) {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  if (!tempPath_.empty())
    ::unlink(tempPath_.c_str());
  tempPath_.clear();
  throwErrno(path_, what, errnum);
}

void AtomicFileWriter::write(const void *data, size_t size) {
  if (fd_ < 0)
    throw Error(path_ + ": write after the file was closed");
  const char *bytes = static_cast<const char *>(data);
  while (size > 0) {
    // Linux writes at most 0x7ffff000 bytes per call.
    size_t chunk = size < (1u << 30) ? size : (1u << 30);
    ssize_t n = ::write(fd_, bytes, chunk);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      fail("cannot write", errno);
    }
    bytes += n;
    size -= static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
}

void AtomicFileWriter::commit() {
  if (fd_ < 0)
    throw Error(path_ + ": commit after the file was closed");
  if (::fsync(fd_) != 0)
    fail("cannot fsync", errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    fd_ = -1;
    fail("cannot close", errno);
  }
  if (::rename(tempPath_.c_str(), path_.c_str()) != 0)
    fail("cannot rename " + tempPath_ + " to it", errno);
  committed_ = true;
  // The rename is durable once the directory is: fsync it too.
  syncDirectory(parentDirectory(path_));
}

void syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

void writeFileAtomically(const std::string &path, const std::string &contents) {
  AtomicFileWriter writer(path);
  writer.write(contents);
  writer.commit();
}

} // namespace tgc
