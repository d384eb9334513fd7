//===- MappedFile.cpp - A read-only memory-mapped file ------------*- C++ -*-===//

#include "runtime/core/MappedFile.h"

#include "runtime/core/Error.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tgc {

MappedFile::MappedFile(const std::string &path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throwErrno(path, "cannot open", errno);
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int saved = errno;
    ::close(fd);
    throwErrno(path, "cannot stat", saved);
  }
  if (S_ISDIR(info.st_mode)) {
    ::close(fd);
    throw Error(path + ": is a directory, expected a file");
  }
  size_ = static_cast<uint64_t>(info.st_size);
  if (size_ > 0) {
    void *mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      int saved = errno;
      ::close(fd);
      throwErrno(path, "cannot mmap", saved);
    }
    data_ = static_cast<const uint8_t *>(mapped);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_)
    ::munmap(const_cast<uint8_t *>(data_), size_);
}

} // namespace tgc
