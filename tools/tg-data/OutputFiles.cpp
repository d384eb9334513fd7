//===- OutputFiles.cpp - Checking where tg-data writes ----------*- C++ -*-===//

#include "tools/tg-data/OutputFiles.h"

#include "runtime/core/AtomicFile.h"
#include "runtime/core/Error.h"

#include <cerrno>
#include <cstdio>
#include <sys/stat.h>
#include <unistd.h>

namespace tgc {
namespace data {

void checkOutputPrefix(const std::string &prefix) {
  if (prefix.empty())
    throw Error("-o needs an output prefix such as data/tiny (files "
                "data/tiny_train.* and data/tiny_val.* are written)");
  if (prefix.back() == '/')
    throw Error("-o " + prefix +
                ": the output prefix names files, not a "
                "directory (try " +
                prefix + "NAME)");
}

void checkOutputs(const std::vector<std::string> &outputs,
                  const std::vector<std::string> &inputs) {
  for (const std::string &output : outputs) {
    struct stat out;
    if (::stat(output.c_str(), &out) != 0)
      continue; // not there yet: nothing to overwrite
    if (!S_ISREG(out.st_mode))
      throw Error(output + ": output exists and is not a regular file");
    for (const std::string &input : inputs) {
      struct stat in;
      if (::stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev &&
          in.st_ino == out.st_ino)
        throw Error(output + ": output would overwrite the input " + input +
                    " (choose another -o prefix)");
    }
  }
}

/// Creates `dir` and its missing parents; `target` is the directory the
/// user asked for, named in errors.
static void makeDirectories(const std::string &dir, const std::string &target) {
  struct stat info;
  if (::stat(dir.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode))
      throw Error(dir == target
                      ? target + ": output directory is not a directory"
                      : target +
                            ": cannot create the output "
                            "directory: " +
                            dir + " is not a directory");
    return;
  }
  if (errno != ENOENT && errno != ENOTDIR) // ENOTDIR: a parent is a file
    throwErrno(target, "cannot create the output directory", errno);
  std::string parent = parentDirectory(dir);
  if (parent != dir)
    makeDirectories(parent, target);
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    throwErrno(target, "cannot create the output directory", errno);
}

void prepareOutputDirectory(const std::string &prefix) {
  std::string dir = parentDirectory(prefix);
  makeDirectories(dir, dir);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throwErrno(dir, "output directory is not writable", errno);
}

std::string shardPath(const std::string &prefix, const std::string &split,
                      int64_t index) {
  char digits[32];
  std::snprintf(digits, sizeof(digits), "%06lld",
                static_cast<long long>(index));
  return prefix + "_" + split + "_" + digits + ".bin";
}

std::vector<std::string> staleShards(const std::string &prefix,
                                     const std::string &split, int64_t first) {
  std::vector<std::string> stale;
  for (int64_t index = first;; ++index) {
    std::string path = shardPath(prefix, split, index);
    struct stat info;
    if (::stat(path.c_str(), &info) != 0)
      break;
    stale.push_back(path);
  }
  return stale;
}

} // namespace data
} // namespace tgc
