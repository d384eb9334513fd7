//===- OutputFiles.h - Checking where tg-data writes ------------*- C++ -*-===//
//
// Every output is named PREFIX_<split>.<ext>. Before anything is written
// tg-data checks that the prefix names files (not a directory), creates the
// output directory when it is missing, and refuses an output that is one of
// the inputs or is not a regular file, so a mistyped command fails before it
// has done anything. Each file is then written atomically by the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGDATA_OUTPUTFILES_H
#define TGC_TOOLS_TGDATA_OUTPUTFILES_H

#include <string>
#include <vector>

namespace tgc {
namespace data {

/// Throws tgc::Error unless `prefix` is a usable output prefix.
void checkOutputPrefix(const std::string &prefix);

/// Throws tgc::Error when an output path exists and is the same file as one
/// of `inputs`, or exists and is not a regular file.
void checkOutputs(const std::vector<std::string> &outputs,
                  const std::vector<std::string> &inputs);

/// Creates the directory that will hold `prefix`'s files (and its parents)
/// when missing; throws tgc::Error naming it when it cannot be created or is
/// not a writable directory.
void prepareOutputDirectory(const std::string &prefix);

/// Existing "PREFIX_<split>_NNNNNN.bin" shards numbered from `first` on,
/// left from an earlier run that wrote more shards.
std::vector<std::string> staleShards(const std::string &prefix,
                                     const std::string &split, int64_t first);

/// "PREFIX_<split>_NNNNNN.bin" (six digits, as llm.c's scripts name shards).
std::string shardPath(const std::string &prefix, const std::string &split,
                      int64_t index);

} // namespace data
} // namespace tgc

#endif // TGC_TOOLS_TGDATA_OUTPUTFILES_H
