//===- Checkpoint.cpp - Model checkpoints as safetensors ----------*- C++ -*-===//

#include "runtime/checkpoint/Checkpoint.h"

#include "runtime/checkpoint/Safetensors.h"
#include "runtime/checkpoint/ShardedCheckpoint.h"
#include "runtime/core/AtomicFile.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tgc {

std::string stateTensorName(const StateDesc &state) {
  return std::string(state.param) + "." + state.slot;
}

namespace {

/// A checkpoint or weights file in either layout, read tensor by tensor:
/// one safetensors file, or a sharded checkpoint's directory, whose tensors
/// come back whole.
class CheckpointReader {
public:
  /// Opens `path`, a file or a directory with an index.json; throws
  /// tgc::Error naming it and the problem.
  explicit CheckpointReader(const std::string &path) {
    if (isShardedCheckpoint(path))
      sharded_ = std::make_unique<ShardedCheckpoint>(path);
    else
      file_ = std::make_unique<SafetensorsFile>(path);
  }

  const std::map<std::string, std::string> &metadata() const {
    return sharded_ ? sharded_->metadata() : file_->metadata();
  }
  std::string metadataOr(const std::string &key,
                         const std::string &fallback) const {
    auto it = metadata().find(key);
    return it == metadata().end() ? fallback : it->second;
  }
  /// The tensors' names, in the file's (or index's) order.
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    if (sharded_)
      for (const ShardedTensor &tensor : sharded_->tensors())
        names.push_back(tensor.name);
    else
      for (const SafetensorsTensor &tensor : file_->tensors())
        names.push_back(tensor.name);
    return names;
  }
  /// Tensor `name`'s dtype and shape, without its data (null when absent).
  /// A sharded checkpoint's shape is the one the writing step held it in;
  /// storedFileShape says which shape files show it in.
  const SafetensorsTensor *describe(const std::string &name) {
    if (file_)
      return file_->find(name);
    const ShardedTensor *tensor = sharded_->find(name);
    if (!tensor)
      return nullptr;
    whole_.name = tensor->name;
    whole_.dtype = tensor->dtype;
    whole_.shape = tensor->shape;
    whole_.begin = whole_.end = 0;
    whole_.data = nullptr;
    return &whole_;
  }
  /// The file shape a sharded checkpoint's index gives tensor `name` (which
  /// must exist) when it differs from its shape; empty otherwise (a
  /// safetensors file shows its tensors as they are).
  std::vector<int64_t> storedFileShape(const std::string &name) const {
    return sharded_ ? sharded_->find(name)->fileShape : std::vector<int64_t>{};
  }
  /// The box [offset, offset + shape) of tensor `name` (which must exist,
  /// with as many elements as `view`) into `dst`, dense; `offset` and
  /// `shape` are coordinates of `view`, the row-major shape the model holds
  /// the tensor in, which may differ from the stored one (same bytes).
  void readBox(const std::string &name, const std::vector<int64_t> &view,
               const std::vector<int64_t> &offset,
               const std::vector<int64_t> &shape, void *dst) {
    if (sharded_) {
      sharded_->readBoxInView(*sharded_->find(name), view, offset, shape, dst);
      return;
    }
    const SafetensorsTensor *found = file_->find(name);
    copyBox(found->data, std::vector<int64_t>(view.size(), 0), view, dst,
            offset, shape, dtypeSize(found->dtype));
  }
  /// Tensor `name` whole, or null. Its data stays valid until the next call
  /// (a sharded checkpoint's pieces are put together in one buffer).
  const SafetensorsTensor *find(const std::string &name) {
    if (file_)
      return file_->find(name);
    if (!describe(name))
      return nullptr;
    whole_.end =
        static_cast<uint64_t>(whole_.numElements() * dtypeSize(whole_.dtype));
    buffer_.assign(whole_.end, 0);
    sharded_->read(*sharded_->find(name), buffer_.data());
    whole_.data = buffer_.data();
    return &whole_;
  }

private:
  std::unique_ptr<SafetensorsFile> file_;
  std::unique_ptr<ShardedCheckpoint> sharded_;
  SafetensorsTensor whole_;
  std::vector<uint8_t> buffer_;
};

} // namespace

void saveCheckpoint(const std::string &path, const ModelDesc &model,
                    void *const *params, void *const *state,
                    const Metadata &metadata) {
  std::vector<TensorToWrite> tensors;
  for (int i = 0; i < model.numParams; ++i) {
    const TensorDesc &t = model.params[i].tensor;
    tensors.push_back({t.name, t.dtype, fileShapeOf(t), params[i]});
  }
  for (int i = 0; i < model.numState; ++i) {
    const TensorDesc &t = model.state[i].tensor;
    tensors.push_back(
        {stateTensorName(model.state[i]), t.dtype, fileShapeOf(t), state[i]});
  }
  Metadata all = metadata;
  all["format"] = kCheckpointFormat;
  all["model"] = model.name;
  if (!all.count("sharding"))
    all["sharding"] = "{\"world_size\":1,\"rank\":0,\"layout\":\"replicated\"}";
  writeSafetensors(path, tensors, all);
}

/// Checks shape (and, unless `convert`, dtype) of `found` against `want`.
/// The shapes match when the tensor is stored in `want`'s shape or in its
/// file shape, or when a sharded checkpoint gives it a file shape
/// (`foundFile`, empty when none) that is one of these: the two are row-major
/// views of the same elements, so the bytes are the same.
static void checkTensor(const std::string &path, const SafetensorsTensor &found,
                        const std::vector<int64_t> &foundFile,
                        const TensorDesc &want, const std::string &name,
                        bool convert) {
  std::vector<int64_t> shape = shapeOf(want), file = fileShapeOf(want);
  auto holds = [&](const std::vector<int64_t> &stored) {
    return stored == shape || stored == file;
  };
  if (!holds(found.shape) && (foundFile.empty() || !holds(foundFile)))
    throw Error("checkpoint " + path + " has tensor " + name + " of shape " +
                (foundFile.empty() ? found.shapeString()
                                   : fileShapeString(foundFile, found.shape)) +
                ", the model wants " + fileShapeString(want));
  if (found.dtype == want.dtype)
    return;
  bool convertible = convert &&
                     (found.dtype == DType::F32 || found.dtype == DType::BF16 ||
                      found.dtype == DType::F16) &&
                     (want.dtype == DType::F32 || want.dtype == DType::BF16 ||
                      want.dtype == DType::F16);
  if (!convertible)
    throw Error("checkpoint " + path + " has tensor " + name + " of dtype " +
                dtypeName(found.dtype) + ", the model wants " +
                dtypeName(want.dtype));
}

/// Throws when a float tensor read from `path` holds a NaN or an infinity:
/// training from it would only fail steps later with a loss of nan that
/// names neither the file nor the tensor.
static void checkFinite(const std::string &path, const SafetensorsTensor &found,
                        const std::string &name) {
  if (found.dtype != DType::F32 && found.dtype != DType::BF16 &&
      found.dtype != DType::F16)
    return;
  int64_t size = dtypeSize(found.dtype);
  int64_t count = (found.end - found.begin) / size, bad = 0, first = -1;
  float firstValue = 0;
  for (int64_t i = 0; i < count; ++i) {
    float v;
    if (found.dtype == DType::F32) {
      std::memcpy(&v, found.data + 4 * i, 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, found.data + 2 * i, 2);
      v = found.dtype == DType::BF16 ? bf16ToFloat(bits) : halfToFloat(bits);
    }
    if (std::isfinite(v))
      continue;
    if (bad++ == 0) {
      first = i;
      firstValue = v;
    }
  }
  if (bad)
    throw Error(path + ": tensor " + name + " holds " + std::to_string(bad) +
                " non-finite value" + (bad == 1 ? "" : "s") + " (the first, " +
                (std::isnan(firstValue) ? std::string("nan")
                 : firstValue > 0       ? std::string("inf")
                                        : std::string("-inf")) +
                ", at element " + std::to_string(first) + " of " +
                std::to_string(count) + ")");
}

static void copyTensor(const SafetensorsTensor &found, const TensorDesc &want,
                       void *dst) {
  int64_t count = numElements(want);
  if (found.dtype == want.dtype) {
    std::memcpy(dst, found.data, found.end - found.begin);
    return;
  }
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) {
    if (found.dtype == DType::F32) {
      std::memcpy(&values[i], found.data + 4 * i, 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, found.data + 2 * i, 2);
      values[i] = found.dtype == DType::BF16 ? bf16ToFloat(bits)
                                              : halfToFloat(bits);
    }
  }
  storeFloats(values.data(), count, want.dtype, dst);
}

Metadata loadCheckpoint(const std::string &path, const ModelDesc &model,
                        const std::vector<LoadTarget> &params,
                        const std::vector<LoadTarget> &state) {
  CheckpointReader file(path);
  std::string format = file.metadataOr("format", "");
  if (format != kCheckpointFormat && format != kShardedCheckpointFormat)
    throw Error("checkpoint " + path + " has format '" + format +
                "', expected '" + kCheckpointFormat +
                "' (use --init-from to load plain weights)");
  std::set<std::string> known;
  auto load = [&](const std::string &name, const TensorDesc &want,
                  const LoadTarget &target) {
    known.insert(name);
    const SafetensorsTensor *found = file.describe(name);
    if (!found) {
      std::string other = file.metadataOr("model", "?");
      throw Error("checkpoint " + path + " (of model '" + other +
                  "') has no tensor " + name + ", which model '" +
                  model.name + "' needs");
    }
    checkTensor(path, *found, file.storedFileShape(name), want, name,
                /*convert=*/false);
    // The target's box is in the model's shape, whichever view the
    // checkpoint stored.
    SafetensorsTensor box;
    box.name = name;
    box.dtype = want.dtype;
    box.shape = target.shape.empty() ? shapeOf(want) : target.shape;
    std::vector<int64_t> offset = target.shape.empty()
                                      ? std::vector<int64_t>(want.rank, 0)
                                      : target.offset;
    file.readBox(name, shapeOf(want), offset, box.shape, target.data);
    box.end = static_cast<uint64_t>(box.numElements() * dtypeSize(want.dtype));
    box.data = static_cast<const uint8_t *>(target.data);
    checkFinite("checkpoint " + path, box, name);
  };
  for (int i = 0; i < model.numParams; ++i)
    load(model.params[i].tensor.name, model.params[i].tensor, params[i]);
  for (int i = 0; i < model.numState; ++i)
    load(stateTensorName(model.state[i]), model.state[i].tensor, state[i]);
  for (const std::string &name : file.names())
    if (!known.count(name))
      throw Error("checkpoint " + path + " has tensor " + name +
                  ", which model '" + model.name + "' does not have");
  return file.metadata();
}

Metadata loadCheckpoint(const std::string &path, const ModelDesc &model,
                        void **params, void **state) {
  std::vector<LoadTarget> paramTargets(model.numParams),
      stateTargets(model.numState);
  for (int i = 0; i < model.numParams; ++i)
    paramTargets[i].data = params[i];
  for (int i = 0; i < model.numState; ++i)
    stateTargets[i].data = state[i];
  return loadCheckpoint(path, model, paramTargets, stateTargets);
}

void loadParams(const std::string &path, const ModelDesc &model, void **params,
                std::string *ignored, const std::set<std::string> &optional) {
  CheckpointReader file(path);
  std::set<std::string> known;
  for (int i = 0; i < model.numParams; ++i) {
    const TensorDesc &want = model.params[i].tensor;
    known.insert(want.name);
    const SafetensorsTensor *found = file.find(want.name);
    if (!found && optional.count(want.name))
      continue;
    if (!found)
      throw Error(path + " has no tensor " + want.name + " (of shape " +
                  fileShapeString(want) + "), which model '" + model.name +
                  "' needs");
    checkTensor(path, *found, file.storedFileShape(want.name), want, want.name,
                /*convert=*/true);
    checkFinite(path, *found, want.name);
    copyTensor(*found, want, params[i]);
  }
  if (ignored) {
    ignored->clear();
    for (const std::string &name : file.names()) {
      if (known.count(name))
        continue;
      if (!ignored->empty())
        *ignored += ", ";
      *ignored += name;
    }
  }
}

void loadTensor(const std::string &path, const std::string &key,
                const TensorDesc &tensor, void *dst) {
  CheckpointReader file(path);
  const SafetensorsTensor *found = file.find(key);
  if (!found)
    throw Error(path + " has no tensor " + key + " (to initialise " +
                tensor.name + ")");
  checkTensor(path, *found, file.storedFileShape(key), tensor, key,
              /*convert=*/true);
  checkFinite(path, *found, key);
  copyTensor(*found, tensor, dst);
}

void loadFoundTensor(const std::string &path, const SafetensorsTensor &found,
                     const std::string &name, const TensorDesc &tensor,
                     void *dst) {
  checkTensor(path, found, {}, tensor, name, /*convert=*/true);
  checkFinite(path, found, name);
  copyTensor(found, tensor, dst);
}

std::string checkpointPath(const std::string &dir, int64_t step) {
  char name[64];
  std::snprintf(name, sizeof(name), "step_%08lld.safetensors",
                static_cast<long long>(step));
  return (dir.empty() || dir.back() == '/' ? dir : dir + "/") + name;
}

/// The step of "step_NNNNNNNN.safetensors" or of a sharded checkpoint's
/// "step_NNNNNNNN" (`sharded`), or -1 for any other name.
static int64_t stepOfName(const std::string &name, bool *sharded) {
  const std::string prefix = "step_", suffix = ".safetensors";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix))
    return -1;
  *sharded = name.size() <= suffix.size() ||
             name.compare(name.size() - suffix.size(), suffix.size(), suffix);
  std::string digits =
      name.substr(prefix.size(),
                  name.size() - prefix.size() - (*sharded ? 0 : suffix.size()));
  if (digits.empty() || digits.size() > 18 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stoll(digits);
}

std::vector<std::pair<int64_t, std::string>>
listCheckpoints(const std::string &dir) {
  DIR *handle = ::opendir(dir.c_str());
  if (!handle)
    throwErrno(dir, "cannot read the checkpoint directory", errno);
  std::string prefix = dir.back() == '/' ? dir : dir + "/";
  std::vector<std::pair<int64_t, std::string>> found;
  while (struct dirent *entry = ::readdir(handle)) {
    bool sharded = false;
    int64_t step = stepOfName(entry->d_name, &sharded);
    // A sharded checkpoint is complete once its index is there (it is
    // renamed into place after it).
    if (step >= 0 && (!sharded || isShardedCheckpoint(prefix + entry->d_name)))
      found.push_back({step, prefix + entry->d_name});
  }
  ::closedir(handle);
  std::sort(found.begin(), found.end());
  return found;
}

std::string latestCheckpoint(const std::string &dir) {
  std::vector<std::pair<int64_t, std::string>> found = listCheckpoints(dir);
  return found.empty() ? "" : found.back().second;
}

std::string resolveResumePath(const std::string &dirOrFile) {
  struct stat info;
  if (::stat(dirOrFile.c_str(), &info) != 0)
    throwErrno(dirOrFile, "cannot resume from it", errno);
  if (!S_ISDIR(info.st_mode) || isShardedCheckpoint(dirOrFile))
    return dirOrFile;
  std::string latest = latestCheckpoint(dirOrFile);
  if (latest.empty())
    throw Error(dirOrFile + ": no checkpoint (step_*.safetensors, or a "
                            "sharded step_* directory) to resume from");
  return latest;
}

void prepareCheckpointDir(const std::string &dir) {
  // mkdir -p, one component at a time.
  for (size_t slash = 1; slash != std::string::npos;) {
    slash = dir.find('/', slash);
    std::string prefix = dir.substr(0, slash);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0755) != 0 &&
        errno != EEXIST)
      throwErrno(prefix, "cannot create the checkpoint directory", errno);
    if (slash != std::string::npos)
      ++slash;
  }
  struct stat info;
  if (::stat(dir.c_str(), &info) != 0)
    throwErrno(dir, "cannot use as checkpoint directory", errno);
  if (!S_ISDIR(info.st_mode))
    throw Error(dir + ": not a directory (--checkpoint-dir)");
  // A probe file: permissions, read-only mounts and the like show up now.
  try {
    AtomicFileWriter probe(dir + "/.tgc-write-test");
  } catch (const Error &error) {
    throw Error("checkpoint directory " + dir + " is not writable (" +
                error.what() + ")");
  }
}

} // namespace tgc
