//===- InputFiles.h - Finding and reading inputs ----------------*- C++ -*-===//
//
// `tg-data text` takes files and directories; directories are walked
// recursively (hidden entries, whose names start with '.', and symbolic
// links to directories are skipped) and the files found are sorted by path,
// so the same tree always gives the same token stream. Any input that starts
// with the gzip magic bytes is decompressed as it is read, with a clear
// error when the compressed data are truncated or corrupt.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGDATA_INPUTFILES_H
#define TGC_TOOLS_TGDATA_INPUTFILES_H

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {
namespace data {

/// The files named by `operands`: a file is taken as is, a directory
/// contributes the regular files below it whose base name matches one of
/// `globs` (all of them when there is none), sorted by path. A file reached
/// twice is read once. Throws tgc::Error on a missing operand, one that is
/// neither a file nor a directory, or an unreadable directory.
std::vector<std::string>
listInputFiles(const std::vector<std::string> &operands,
               const std::vector<std::string> &globs);

/// The contents of `path`, gunzipped when it starts with the gzip magic.
/// Throws tgc::Error naming the file when it cannot be read or its gzip
/// data are truncated or corrupt.
std::string readInputFile(const std::string &path);

/// Whether the gzip magic bytes start `data`.
bool isGzip(const std::string &data);

/// Decompresses a gzip file's bytes (one or more members); `path` names it
/// in errors.
std::string gunzip(const uint8_t *data, uint64_t size, const std::string &path);

} // namespace data
} // namespace tgc

#endif // TGC_TOOLS_TGDATA_INPUTFILES_H
