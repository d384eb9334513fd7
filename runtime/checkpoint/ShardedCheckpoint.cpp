//===- ShardedCheckpoint.cpp - Checkpoints every rank writes ----*- C++ -*-===//

#include "runtime/checkpoint/ShardedCheckpoint.h"

#include "runtime/core/AtomicFile.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"
#include "runtime/core/JsonText.h"
#include "runtime/core/MappedFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tgc {

static std::string stepName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step_%08lld",
                static_cast<long long>(step));
  return name;
}

std::string shardedCheckpointPath(const std::string &dir, int64_t step) {
  return joinPath(dir, stepName(step));
}

std::string partialCheckpointPath(const std::string &dir, int64_t step) {
  return joinPath(dir, "." + stepName(step) + ".partial");
}

std::string shardFileName(int rank) {
  char name[40];
  std::snprintf(name, sizeof(name), "rank_%05d.safetensors", rank);
  return name;
}

bool isShardedCheckpoint(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode) &&
         ::stat(joinPath(path, kShardedIndexName).c_str(), &info) == 0;
}

/// Removes the plain files of `dir` and then `dir`; a missing `dir` is fine.
static void removeFlatDirectory(const std::string &dir) {
  DIR *handle = ::opendir(dir.c_str());
  if (!handle) {
    if (errno == ENOENT)
      return;
    throwErrno(dir, "cannot read the directory to remove it", errno);
  }
  std::vector<std::string> names;
  while (struct dirent *entry = ::readdir(handle)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..")
      names.push_back(name);
  }
  ::closedir(handle);
  for (const std::string &name : names)
    if (::unlink(joinPath(dir, name).c_str()) != 0 && errno != ENOENT)
      throwErrno(joinPath(dir, name), "cannot remove", errno);
  if (::rmdir(dir.c_str()) != 0 && errno != ENOENT)
    throwErrno(dir, "cannot remove the directory", errno);
}

void preparePartialCheckpoint(const std::string &partial) {
  removeFlatDirectory(partial);
  if (::mkdir(partial.c_str(), 0755) != 0)
    throwErrno(partial, "cannot create the checkpoint directory", errno);
}

void removeShardedCheckpoint(const std::string &path) {
  removeFlatDirectory(path);
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

void writeCheckpointShard(const std::string &partial,
                          const ShardedLayout &layout, int rank,
                          const std::vector<const void *> &local,
                          const std::string &model) {
  if (local.size() != layout.tensors.size())
    throw Error("sharded checkpoint: " + std::to_string(local.size()) +
                " local tensors for a layout of " +
                std::to_string(layout.tensors.size()));
  std::vector<TensorToWrite> tensors;
  // Where each piece sits in its tensor, so that a reader can tell a shard
  // file that does not hold the piece the index expects.
  Json offsets = Json::object();
  for (size_t i = 0; i < layout.tensors.size(); ++i) {
    const ShardedTensor &tensor = layout.tensors[i];
    for (const ShardPiece &piece : tensor.pieces)
      if (piece.rank == rank) {
        tensors.push_back({tensor.name, tensor.dtype, piece.shape, local[i]});
        offsets[tensor.name] = piece.offset;
      }
  }
  if (tensors.empty())
    return;
  std::map<std::string, std::string> metadata = {
      {"format", "tgc-checkpoint-shard-1"},
      {"model", model},
      {"rank", std::to_string(rank)},
      {"offsets", writeJson(offsets)}};
  writeSafetensors(joinPath(partial, shardFileName(rank)), tensors, metadata);
}

/// {"data": 2, "tp": 2}.
static Json meshJson(const std::vector<std::pair<std::string, int64_t>> &mesh) {
  Json json = Json::object();
  for (const auto &[name, size] : mesh)
    json[name] = size;
  return json;
}

std::string consolidatedShardingJson(
    const std::vector<std::pair<std::string, int64_t>> &mesh,
    const std::vector<ShardedTensor> &tensors) {
  Json json = {{"mesh", meshJson(mesh)}, {"layout", "consolidated"}};
  Json split = Json::object(), views = Json::object();
  for (const ShardedTensor &tensor : tensors) {
    bool isSplit = false;
    for (const auto &names : tensor.split)
      isSplit = isSplit || !names.empty();
    if (!isSplit)
      continue;
    // [[], ["tp"]]: the axes splitting each dim.
    split[tensor.name] = tensor.split;
    // The file holds the tensor in its file shape; the split is per dim of
    // the view the step held.
    if (!tensor.fileShape.empty() && tensor.fileShape != tensor.shape)
      views[tensor.name] = tensor.shape;
  }
  json["split"] = std::move(split);
  if (!views.empty())
    json["views"] = std::move(views);
  return writeJson(json);
}

void commitShardedCheckpoint(
    const std::string &partial, const std::string &target,
    const ShardedLayout &layout, const std::string &model,
    const std::map<std::string, std::string> &metadata) {
  // The files, in rank order, each once.
  std::vector<int> ranks;
  for (const ShardedTensor &tensor : layout.tensors)
    for (const ShardPiece &piece : tensor.pieces)
      ranks.push_back(piece.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());

  Json files = Json::array();
  for (int rank : ranks)
    files.push_back(shardFileName(rank));
  Json index = {{"format", kShardedCheckpointFormat},
                {"model", model},
                {"mesh", meshJson(layout.mesh)},
                {"metadata", metadata},
                {"files", std::move(files)}};
  Json tensors = Json::object();
  for (const ShardedTensor &tensor : layout.tensors) {
    Json entry = {{"dtype", dtypeName(tensor.dtype)}, {"shape", tensor.shape}};
    if (!tensor.fileShape.empty() && tensor.fileShape != tensor.shape)
      entry["file_shape"] = tensor.fileShape;
    entry["split"] = tensor.split;
    Json pieces = Json::array();
    for (const ShardPiece &piece : tensor.pieces) {
      int64_t file = std::lower_bound(ranks.begin(), ranks.end(), piece.rank) -
                     ranks.begin();
      pieces.push_back(
          {{"file", file}, {"offset", piece.offset}, {"shape", piece.shape}});
    }
    entry["pieces"] = std::move(pieces);
    tensors[tensor.name] = std::move(entry);
  }
  index["tensors"] = std::move(tensors);
  writeFileAtomically(joinPath(partial, kShardedIndexName),
                      writeJson(index) + "\n");

  // An older checkpoint of the same step (a rerun from an earlier one) is
  // moved aside first: rename() does not replace a non-empty directory.
  struct stat info;
  std::string old;
  if (::stat(target.c_str(), &info) == 0) {
    old = target + ".old";
    removeFlatDirectory(old);
    if (::rename(target.c_str(), old.c_str()) != 0)
      throwErrno(target, "cannot move the older checkpoint aside", errno);
  }
  if (::rename(partial.c_str(), target.c_str()) != 0)
    throwErrno(target, "cannot rename " + partial + " to it", errno);
  syncDirectory(parentDirectory(target));
  if (!old.empty())
    removeFlatDirectory(old);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

void copyBox(const void *src, const std::vector<int64_t> &srcOffset,
             const std::vector<int64_t> &srcShape, void *dst,
             const std::vector<int64_t> &dstOffset,
             const std::vector<int64_t> &dstShape, int64_t elementSize) {
  const int n = static_cast<int>(srcShape.size());
  if (n == 0) {
    std::memcpy(dst, src, elementSize);
    return;
  }
  // The intersection [lo, hi), in the whole tensor's coordinates.
  std::vector<int64_t> lo(n), hi(n);
  for (int d = 0; d < n; ++d) {
    lo[d] = std::max(srcOffset[d], dstOffset[d]);
    hi[d] = std::min(srcOffset[d] + srcShape[d], dstOffset[d] + dstShape[d]);
    if (lo[d] >= hi[d])
      return;
  }
  std::vector<int64_t> srcStride(n, 1), dstStride(n, 1);
  for (int d = n - 1; d > 0; --d) {
    srcStride[d - 1] = srcStride[d] * srcShape[d];
    dstStride[d - 1] = dstStride[d] * dstShape[d];
  }
  // One memcpy per run of the innermost dim.
  int64_t run = (hi[n - 1] - lo[n - 1]) * elementSize;
  std::vector<int64_t> at(lo);
  const char *from = static_cast<const char *>(src);
  char *to = static_cast<char *>(dst);
  while (true) {
    int64_t s = 0, t = 0;
    for (int d = 0; d < n; ++d) {
      s += (at[d] - srcOffset[d]) * srcStride[d];
      t += (at[d] - dstOffset[d]) * dstStride[d];
    }
    std::memcpy(to + t * elementSize, from + s * elementSize, run);
    int d = n - 2;
    for (; d >= 0; --d) {
      if (++at[d] < hi[d])
        break;
      at[d] = lo[d];
    }
    if (d < 0)
      return;
  }
}

namespace {

/// Reads the index's JSON with errors that name the index file.
class IndexReader {
public:
  explicit IndexReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string &problem) const {
    throw Error(path_ + ": " + problem);
  }
  /// `object`'s member `key`, which must be there and of `kind`.
  const Json &member(const Json &object, const std::string &key,
                     Json::value_t kind, const std::string &where) {
    auto value = object.find(key);
    if (value == object.end())
      fail(where + " has no \"" + key + "\"");
    if (value->type() != kind)
      fail(where + "'s \"" + key + "\" is " + jsonKindName(*value) +
           ", expected " + jsonKindName(kind));
    return *value;
  }
  const std::string &stringMember(const Json &object, const std::string &key,
                                  const std::string &where) {
    return member(object, key, Json::value_t::string, where)
        .get_ref<const std::string &>();
  }
  std::vector<int64_t> dims(const Json &object, const std::string &key,
                            const std::string &where) {
    std::vector<int64_t> out;
    for (const Json &v : member(object, key, Json::value_t::array, where)) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        fail(where + "'s \"" + key + "\" holds " + writeJson(v) +
             ", not a count");
      out.push_back(v.get<int64_t>());
    }
    return out;
  }

private:
  std::string path_;
};

} // namespace

ShardedCheckpoint::ShardedCheckpoint(const std::string &dir)
    : dir_(dir), indexPath_(joinPath(dir, kShardedIndexName)) {
  MappedFile mapped(indexPath_);
  std::string text(reinterpret_cast<const char *>(mapped.data()),
                   mapped.size());
  IndexReader in(indexPath_);
  Json index;
  std::string jsonError;
  if (!parseJson(text, index, jsonError))
    in.fail("not valid JSON: " + jsonError);
  if (!index.is_object())
    in.fail("the index is " + std::string(jsonKindName(index)) +
            ", expected an object");
  const std::string &format = in.stringMember(index, "format", "the index");
  if (format != kShardedCheckpointFormat)
    in.fail("format '" + format + "', expected '" + kShardedCheckpointFormat +
            "'");
  model_ = in.stringMember(index, "model", "the index");
  for (const auto &[name, size] :
       in.member(index, "mesh", Json::value_t::object, "the index").items()) {
    if (!size.is_number_integer() || size.get<int64_t>() < 1)
      in.fail("mesh axis " + name + " has size " + writeJson(size));
    mesh_.push_back({name, size.get<int64_t>()});
  }
  for (const auto &[key, value] :
       in.member(index, "metadata", Json::value_t::object, "the index")
           .items()) {
    if (!value.is_string())
      in.fail("metadata \"" + key + "\" is not a string");
    metadata_[key] = value.get<std::string>();
  }
  metadata_["format"] = format;
  metadata_["model"] = model_;
  for (const Json &file :
       in.member(index, "files", Json::value_t::array, "the index")) {
    if (!file.is_string() || file.get_ref<const std::string &>().empty() ||
        file.get_ref<const std::string &>().find('/') != std::string::npos)
      in.fail("files holds " + writeJson(file) +
              ", not a file name in the checkpoint directory");
    files_.push_back(file.get<std::string>());
  }
  opened_.resize(files_.size());
  offsets_.resize(files_.size());

  for (const auto &[name, entry] :
       in.member(index, "tensors", Json::value_t::object, "the index")
           .items()) {
    std::string where = "tensor " + name;
    if (!entry.is_object())
      in.fail(where + " is not an object");
    if (byName_.count(name))
      in.fail(where + " appears twice");
    ShardedTensor tensor;
    tensor.name = name;
    const std::string &dtype = in.stringMember(entry, "dtype", where);
    if (!parseDType(dtype, tensor.dtype))
      in.fail(where + " has unsupported dtype " + dtype);
    tensor.shape = in.dims(entry, "shape", where);
    if (tensor.shape.size() > static_cast<size_t>(kMaxRank))
      in.fail(where + " has rank " + std::to_string(tensor.shape.size()) +
              ", above " + std::to_string(kMaxRank));
    int64_t volume = 1, covered = 0;
    for (int64_t dim : tensor.shape)
      volume *= dim;
    if (entry.contains("file_shape")) {
      tensor.fileShape = in.dims(entry, "file_shape", where);
      int64_t fileVolume = 1;
      for (int64_t dim : tensor.fileShape)
        fileVolume *= dim;
      if (tensor.fileShape.size() > static_cast<size_t>(kMaxRank) ||
          fileVolume != volume)
        in.fail(where + "'s \"file_shape\" " + writeJson(tensor.fileShape) +
                " is not a view of its shape " + writeJson(tensor.shape));
      if (tensor.fileShape == tensor.shape)
        tensor.fileShape.clear();
    }
    auto split = entry.find("split");
    if (split != entry.end()) {
      if (!split->is_array() || split->size() != tensor.shape.size())
        in.fail(where + "'s \"split\" is not one list of axes per dim");
      for (const Json &axes : *split) {
        tensor.split.emplace_back();
        if (!axes.is_array())
          in.fail(where + "'s \"split\" is not one list of axes per dim");
        for (const Json &axis : axes) {
          if (!axis.is_string())
            in.fail(where + "'s \"split\" names " + writeJson(axis));
          tensor.split.back().push_back(axis.get<std::string>());
        }
      }
    }
    for (const Json &p :
         in.member(entry, "pieces", Json::value_t::array, where)) {
      std::string at =
          where + "'s piece " + std::to_string(tensor.pieces.size());
      if (!p.is_object())
        in.fail(at + " is not an object");
      int64_t file = in.member(p, "file", Json::value_t::number_integer, at)
                         .get<int64_t>();
      if (file < 0 || file >= static_cast<int64_t>(files_.size()))
        in.fail(at + " names file " + std::to_string(file) + " of " +
                std::to_string(files_.size()));
      ShardPiece piece;
      piece.file = static_cast<int>(file);
      piece.offset = in.dims(p, "offset", at);
      piece.shape = in.dims(p, "shape", at);
      if (piece.offset.size() != tensor.shape.size() ||
          piece.shape.size() != tensor.shape.size())
        in.fail(at + " has a different rank than the tensor's shape " +
                shapeString(tensor.shape));
      int64_t pieceVolume = 1;
      for (size_t d = 0; d < tensor.shape.size(); ++d) {
        if (piece.offset[d] + piece.shape[d] > tensor.shape[d])
          in.fail(at + " (offset " + writeJson(piece.offset) + ", shape " +
                  writeJson(piece.shape) +
                  ") reaches outside the tensor's shape " +
                  writeJson(tensor.shape));
        pieceVolume *= piece.shape[d];
      }
      // Boxes that overlap nowhere and add up to the volume tile it.
      for (size_t q = 0; q < tensor.pieces.size(); ++q) {
        const ShardPiece &other = tensor.pieces[q];
        bool overlap = pieceVolume > 0;
        for (size_t d = 0; overlap && d < tensor.shape.size(); ++d)
          overlap = piece.offset[d] < other.offset[d] + other.shape[d] &&
                    other.offset[d] < piece.offset[d] + piece.shape[d];
        if (overlap)
          in.fail(at + " overlaps piece " + std::to_string(q));
      }
      covered += pieceVolume;
      tensor.pieces.push_back(std::move(piece));
    }
    if (covered != volume)
      in.fail(where + "'s pieces cover " + std::to_string(covered) +
              " of its " + std::to_string(volume) + " elements");
    byName_[name] = tensors_.size();
    tensors_.push_back(std::move(tensor));
  }
}

ShardedCheckpoint::~ShardedCheckpoint() = default;

const ShardedTensor *ShardedCheckpoint::find(const std::string &name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : &tensors_[it->second];
}

const SafetensorsFile &ShardedCheckpoint::file(size_t index) const {
  if (opened_[index])
    return *opened_[index];
  opened_[index] =
      std::make_unique<SafetensorsFile>(joinPath(dir_, files_[index]));
  const SafetensorsFile &shard = *opened_[index];
  // The offset of each piece the file holds.
  Json offsets;
  std::string jsonError;
  if (!parseJson(shard.metadataOr("offsets", ""), offsets, jsonError) ||
      !offsets.is_object())
    throw Error(shard.path() + ": metadata \"offsets\" is missing or not a "
                               "JSON object (not a tgc checkpoint shard?)");
  for (const auto &[name, value] : offsets.items()) {
    std::vector<int64_t> offset;
    if (value.is_array())
      for (const Json &v : value)
        offset.push_back(v.is_number_integer() ? v.get<int64_t>() : -1);
    offsets_[index][name] = offset;
  }
  return shard;
}

std::vector<int64_t>
ShardedCheckpoint::pieceOffset(size_t file, const std::string &name) const {
  auto it = offsets_[file].find(name);
  return it == offsets_[file].end() ? std::vector<int64_t>{} : it->second;
}

void ShardedCheckpoint::read(const ShardedTensor &tensor, void *whole) const {
  readBox(tensor, std::vector<int64_t>(tensor.shape.size(), 0), tensor.shape,
          whole);
}

void ShardedCheckpoint::readBoxInView(const ShardedTensor &tensor,
                                      const std::vector<int64_t> &view,
                                      const std::vector<int64_t> &offset,
                                      const std::vector<int64_t> &shape,
                                      void *dst) const {
  if (view == tensor.shape) {
    readBox(tensor, offset, shape, dst);
    return;
  }
  int64_t count = 1, viewCount = 1;
  for (int64_t dim : tensor.shape)
    count *= dim;
  for (int64_t dim : view)
    viewCount *= dim;
  if (viewCount != count)
    throw Error(indexPath_ + ": tensor " + tensor.name + " of shape " +
                shapeString(tensor.shape) + " cannot be read as " +
                shapeString(view) + " (" + std::to_string(count) + " vs " +
                std::to_string(viewCount) + " elements)");
  bool whole = shape == view;
  for (size_t d = 0; whole && d < offset.size(); ++d)
    whole = offset[d] == 0;
  if (whole) {
    read(tensor, dst);
    return;
  }
  // The pieces are boxes of the written shape, which a box of `view` does
  // not map onto: the whole tensor, then the box of it.
  int64_t elementSize = dtypeSize(tensor.dtype);
  std::vector<uint8_t> buffer(static_cast<size_t>(count * elementSize));
  read(tensor, buffer.data());
  copyBox(buffer.data(), std::vector<int64_t>(view.size(), 0), view, dst,
          offset, shape, elementSize);
}

void ShardedCheckpoint::readBox(const ShardedTensor &tensor,
                                const std::vector<int64_t> &offset,
                                const std::vector<int64_t> &shape,
                                void *dst) const {
  int64_t elementSize = dtypeSize(tensor.dtype);
  for (const ShardPiece &piece : tensor.pieces) {
    // Pieces outside the box: their files are not opened.
    bool meets = true;
    for (size_t d = 0; meets && d < shape.size(); ++d)
      meets = piece.offset[d] < offset[d] + shape[d] &&
              offset[d] < piece.offset[d] + piece.shape[d];
    if (!meets && !shape.empty())
      continue;
    const SafetensorsFile &shard = file(static_cast<size_t>(piece.file));
    const SafetensorsTensor *found = shard.find(tensor.name);
    if (!found)
      throw Error(shard.path() + " has no tensor " + tensor.name + ", which " +
                  indexPath_ + " places there");
    if (pieceOffset(piece.file, tensor.name) != piece.offset)
      throw Error(
          shard.path() + " holds the piece of " + tensor.name + " at offset " +
          writeJson(pieceOffset(piece.file, tensor.name)) + ", " + indexPath_ +
          " expects the one at " + writeJson(piece.offset));
    if (found->dtype != tensor.dtype || found->shape != piece.shape)
      throw Error(shard.path() + " has tensor " + tensor.name + " as " +
                  dtypeName(found->dtype) + " " + found->shapeString() + ", " +
                  indexPath_ + " says " + dtypeName(tensor.dtype) + " " +
                  shapeString(piece.shape));
    copyBox(found->data, piece.offset, piece.shape, dst, offset, shape,
            elementSize);
  }
}

} // namespace tgc
