//===- ShardedCheckpoint.cpp - Checkpoints every rank writes ----*- C++ -*-===//

#include "runtime/checkpoint/ShardedCheckpoint.h"

#include "runtime/core/AtomicFile.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"
#include "runtime/core/Json.h"
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

static std::string joinPath(const std::string &dir, const std::string &name) {
  return (dir.empty() || dir.back() == '/' ? dir : dir + "/") + name;
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

static JsonValue intArray(const std::vector<int64_t> &values) {
  JsonValue array = JsonValue::array();
  for (int64_t value : values)
    array.push(value);
  return array;
}

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
  JsonValue offsets = JsonValue::object();
  for (size_t i = 0; i < layout.tensors.size(); ++i) {
    const ShardedTensor &tensor = layout.tensors[i];
    for (const ShardPiece &piece : tensor.pieces)
      if (piece.rank == rank) {
        tensors.push_back({tensor.name, tensor.dtype, piece.shape, local[i]});
        offsets.append(tensor.name, intArray(piece.offset));
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
static JsonValue
meshJson(const std::vector<std::pair<std::string, int64_t>> &mesh) {
  JsonValue json = JsonValue::object();
  for (const auto &[name, size] : mesh)
    json.append(name, size);
  return json;
}

/// [[], ["tp"]]: the axes splitting each dim.
static JsonValue splitJson(const std::vector<std::vector<std::string>> &split) {
  JsonValue dims = JsonValue::array();
  for (const auto &axes : split) {
    JsonValue names = JsonValue::array();
    for (const std::string &axis : axes)
      names.push(axis);
    dims.push(std::move(names));
  }
  return dims;
}

std::string consolidatedShardingJson(
    const std::vector<std::pair<std::string, int64_t>> &mesh,
    const std::vector<ShardedTensor> &tensors) {
  JsonValue json = JsonValue::object();
  json.set("mesh", meshJson(mesh));
  json.set("layout", "consolidated");
  JsonValue split = JsonValue::object(), views = JsonValue::object();
  for (const ShardedTensor &tensor : tensors) {
    bool isSplit = false;
    for (const auto &names : tensor.split)
      isSplit = isSplit || !names.empty();
    if (!isSplit)
      continue;
    split.append(tensor.name, splitJson(tensor.split));
    // The file holds the tensor in its file shape; the split is per dim of
    // the view the step held.
    if (!tensor.fileShape.empty() && tensor.fileShape != tensor.shape)
      views.append(tensor.name, intArray(tensor.shape));
  }
  json.set("split", std::move(split));
  if (!views.asObject().empty())
    json.set("views", std::move(views));
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

  JsonValue index = JsonValue::object();
  index.set("format", kShardedCheckpointFormat);
  index.set("model", model);
  index.set("mesh", meshJson(layout.mesh));
  JsonValue meta = JsonValue::object();
  for (const auto &[key, value] : metadata)
    meta.append(key, value);
  index.set("metadata", std::move(meta));
  JsonValue files = JsonValue::array();
  for (int rank : ranks)
    files.push(shardFileName(rank));
  index.set("files", std::move(files));
  JsonValue tensors = JsonValue::object();
  for (const ShardedTensor &tensor : layout.tensors) {
    JsonValue entry = JsonValue::object();
    entry.set("dtype", dtypeName(tensor.dtype));
    entry.set("shape", intArray(tensor.shape));
    if (!tensor.fileShape.empty() && tensor.fileShape != tensor.shape)
      entry.set("file_shape", intArray(tensor.fileShape));
    entry.set("split", splitJson(tensor.split));
    JsonValue pieces = JsonValue::array();
    for (const ShardPiece &piece : tensor.pieces) {
      JsonValue p = JsonValue::object();
      p.set("file",
            static_cast<int64_t>(
                std::lower_bound(ranks.begin(), ranks.end(), piece.rank) -
                ranks.begin()));
      p.set("offset", intArray(piece.offset));
      p.set("shape", intArray(piece.shape));
      pieces.push(std::move(p));
    }
    entry.set("pieces", std::move(pieces));
    tensors.append(tensor.name, std::move(entry));
  }
  index.set("tensors", std::move(tensors));
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
  const JsonValue &member(const JsonValue &object, const std::string &key,
                          JsonValue::Kind kind, const std::string &where) {
    const JsonValue *value = object.find(key);
    if (!value)
      fail(where + " has no \"" + key + "\"");
    if (value->kind() != kind)
      fail(where + "'s \"" + key + "\" is " +
           JsonValue::kindName(value->kind()) + ", expected " +
           JsonValue::kindName(kind));
    return *value;
  }
  std::vector<int64_t> dims(const JsonValue &object, const std::string &key,
                            const std::string &where) {
    std::vector<int64_t> out;
    for (const JsonValue &v :
         member(object, key, JsonValue::Kind::Array, where).asArray()) {
      if (!v.isInteger() || v.asInt() < 0)
        fail(where + "'s \"" + key + "\" holds " + writeJson(v) +
             ", not a count");
      out.push_back(v.asInt());
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
  JsonValue index;
  std::string jsonError;
  if (!parseJson(text, index, jsonError))
    in.fail("not valid JSON: " + jsonError);
  if (!index.isObject())
    in.fail("the index is " + std::string(JsonValue::kindName(index.kind())) +
            ", expected an object");
  const std::string &format =
      in.member(index, "format", JsonValue::Kind::String, "the index")
          .asString();
  if (format != kShardedCheckpointFormat)
    in.fail("format '" + format + "', expected '" + kShardedCheckpointFormat +
            "'");
  model_ = in.member(index, "model", JsonValue::Kind::String, "the index")
               .asString();
  for (const auto &[name, size] :
       in.member(index, "mesh", JsonValue::Kind::Object, "the index")
           .asObject()) {
    if (!size.isInteger() || size.asInt() < 1)
      in.fail("mesh axis " + name + " has size " + writeJson(size));
    mesh_.push_back({name, size.asInt()});
  }
  for (const auto &[key, value] :
       in.member(index, "metadata", JsonValue::Kind::Object, "the index")
           .asObject()) {
    if (!value.isString())
      in.fail("metadata \"" + key + "\" is not a string");
    metadata_[key] = value.asString();
  }
  metadata_["format"] = format;
  metadata_["model"] = model_;
  for (const JsonValue &file :
       in.member(index, "files", JsonValue::Kind::Array, "the index")
           .asArray()) {
    if (!file.isString() || file.asString().empty() ||
        file.asString().find('/') != std::string::npos)
      in.fail("files holds " + writeJson(file) +
              ", not a file name in the checkpoint directory");
    files_.push_back(file.asString());
  }
  opened_.resize(files_.size());
  offsets_.resize(files_.size());

  for (const auto &[name, entry] :
       in.member(index, "tensors", JsonValue::Kind::Object, "the index")
           .asObject()) {
    std::string where = "tensor " + name;
    if (!entry.isObject())
      in.fail(where + " is not an object");
    if (byName_.count(name))
      in.fail(where + " appears twice");
    ShardedTensor tensor;
    tensor.name = name;
    const std::string &dtype =
        in.member(entry, "dtype", JsonValue::Kind::String, where).asString();
    if (!parseDType(dtype, tensor.dtype))
      in.fail(where + " has unsupported dtype " + dtype);
    tensor.shape = in.dims(entry, "shape", where);
    if (tensor.shape.size() > static_cast<size_t>(kMaxRank))
      in.fail(where + " has rank " + std::to_string(tensor.shape.size()) +
              ", above " + std::to_string(kMaxRank));
    int64_t volume = 1, covered = 0;
    for (int64_t dim : tensor.shape)
      volume *= dim;
    if (entry.find("file_shape")) {
      tensor.fileShape = in.dims(entry, "file_shape", where);
      int64_t fileVolume = 1;
      for (int64_t dim : tensor.fileShape)
        fileVolume *= dim;
      if (tensor.fileShape.size() > static_cast<size_t>(kMaxRank) ||
          fileVolume != volume)
        in.fail(where + "'s \"file_shape\" " +
                writeJson(intArray(tensor.fileShape)) +
                " is not a view of its shape " +
                writeJson(intArray(tensor.shape)));
      if (tensor.fileShape == tensor.shape)
        tensor.fileShape.clear();
    }
    if (const JsonValue *split = entry.find("split")) {
      if (!split->isArray() || split->asArray().size() != tensor.shape.size())
        in.fail(where + "'s \"split\" is not one list of axes per dim");
      for (const JsonValue &axes : split->asArray()) {
        tensor.split.emplace_back();
        if (!axes.isArray())
          in.fail(where + "'s \"split\" is not one list of axes per dim");
        for (const JsonValue &axis : axes.asArray()) {
          if (!axis.isString())
            in.fail(where + "'s \"split\" names " + writeJson(axis));
          tensor.split.back().push_back(axis.asString());
        }
      }
    }
    for (const JsonValue &p :
         in.member(entry, "pieces", JsonValue::Kind::Array, where).asArray()) {
      std::string at =
          where + "'s piece " + std::to_string(tensor.pieces.size());
      if (!p.isObject())
        in.fail(at + " is not an object");
      const JsonValue &file = in.member(p, "file", JsonValue::Kind::Number, at);
      if (!file.isInteger() || file.asInt() < 0 ||
          file.asInt() >= static_cast<int64_t>(files_.size()))
        in.fail(at + " names file " + writeJson(file) + " of " +
                std::to_string(files_.size()));
      ShardPiece piece;
      piece.file = static_cast<int>(file.asInt());
      piece.offset = in.dims(p, "offset", at);
      piece.shape = in.dims(p, "shape", at);
      if (piece.offset.size() != tensor.shape.size() ||
          piece.shape.size() != tensor.shape.size())
        in.fail(at + " has a different rank than the tensor's shape " +
                shapeString(tensor.shape));
      int64_t pieceVolume = 1;
      for (size_t d = 0; d < tensor.shape.size(); ++d) {
        if (piece.offset[d] + piece.shape[d] > tensor.shape[d])
          in.fail(at + " (offset " + writeJson(intArray(piece.offset)) +
                  ", shape " + writeJson(intArray(piece.shape)) +
                  ") reaches outside the tensor's shape " +
                  writeJson(intArray(tensor.shape)));
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
  JsonValue offsets;
  std::string jsonError;
  if (!parseJson(shard.metadataOr("offsets", ""), offsets, jsonError) ||
      !offsets.isObject())
    throw Error(shard.path() + ": metadata \"offsets\" is missing or not a "
                               "JSON object (not a tgc checkpoint shard?)");
  for (const auto &[name, value] : offsets.asObject()) {
    std::vector<int64_t> offset;
    if (value.isArray())
      for (const JsonValue &v : value.asArray())
        offset.push_back(v.isInteger() ? v.asInt() : -1);
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
      throw Error(shard.path() + " holds the piece of " + tensor.name +
                  " at offset " +
                  writeJson(intArray(pieceOffset(piece.file, tensor.name))) +
                  ", " + indexPath_ + " expects the one at " +
                  writeJson(intArray(piece.offset)));
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
