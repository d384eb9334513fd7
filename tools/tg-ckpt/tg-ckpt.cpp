//===- tg-ckpt.cpp - Inspect and consolidate tgc checkpoints ----*- C++ -*-===//
//
// tg-ckpt SUBCOMMAND ...: `info` describes a checkpoint of either layout (a
// safetensors file, or a sharded checkpoint's directory written by a run
// over several processes); `consolidate` puts a sharded checkpoint's pieces
// together into one safetensors file of whole tensors, which PyTorch
// (safetensors.torch.load_file) reads and any training executable of the
// model resumes from, on any mesh. Like tg-data it is plain C++ on the
// runtime's own readers and writers.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/Safetensors.h"
#include "runtime/checkpoint/ShardedCheckpoint.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"
#include "runtime/core/JsonText.h"
#include "runtime/core/ToolMain.h"

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

using tgc::Error;

const char *const kUsage =
    "usage: tg-ckpt SUBCOMMAND [ARGS...]\n"
    "\n"
    "Inspects and converts the checkpoints tgc's training executables write.\n"
    "\n"
    "subcommands:\n"
    "  info CHECKPOINT\n"
    "      the layout, model, step, mesh, metadata and every tensor (dtype,\n"
    "      shape, the mesh axes that split it, its pieces) of a checkpoint\n"
    "      file or a sharded checkpoint's directory; a tensor the step held\n"
    "      in another view than its file shape shows both:\n"
    "      768x2304 (held as 768x3x768)\n"
    "  consolidate CHECKPOINT -o FILE.safetensors\n"
    "      puts a sharded checkpoint's pieces together into one safetensors\n"
    "      file of whole tensors in their file shapes (written atomically,\n"
    "      one tensor in memory at a time); PyTorch reads it and --resume\n"
    "      continues from it\n"
    "\n"
    "CHECKPOINT is a step_*.safetensors file or a step_* directory (with an\n"
    "index.json) under a run's --checkpoint-dir.\n";

std::string describeSplit(const std::vector<std::vector<std::string>> &split) {
  std::string text = "[";
  for (size_t d = 0; d < split.size(); ++d) {
    text += d ? ", " : "";
    if (split[d].empty())
      text += "-";
    for (size_t i = 0; i < split[d].size(); ++i)
      text += (i ? "*" : "") + split[d][i];
  }
  return text + "]";
}

std::string megabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f MB", bytes / 1e6);
  return text;
}

/// The views of a consolidated checkpoint's split tensors: its "sharding"
/// metadata's "views" (see Checkpoint.h), by tensor; empty when it has none
/// or it is not JSON.
std::map<std::string, std::vector<int64_t>>
consolidatedViews(const tgc::SafetensorsFile &file) {
  std::map<std::string, std::vector<int64_t>> views;
  tgc::Json sharding;
  std::string error;
  if (!tgc::parseJson(file.metadataOr("sharding", ""), sharding, error))
    return views;
  auto found = sharding.find("views");
  if (found == sharding.end() || !found->is_object())
    return views;
  for (const auto &[name, dims] : found->items()) {
    if (!dims.is_array())
      continue;
    std::vector<int64_t> &view = views[name];
    for (const tgc::Json &dim : dims)
      view.push_back(dim.is_number_integer() ? dim.get<int64_t>() : -1);
  }
  return views;
}

void printMetadata(const std::map<std::string, std::string> &metadata) {
  for (const auto &[key, value] : metadata)
    if (key != "format" && key != "model")
      std::printf("  %s: %s\n", key.c_str(), value.c_str());
}

int runInfo(const std::vector<std::string> &args) {
  if (args.size() != 1)
    throw Error("info takes one checkpoint (see tg-ckpt --help)");
  const std::string &path = args[0];
  if (!tgc::isShardedCheckpoint(path)) {
    tgc::SafetensorsFile file(path);
    int64_t bytes = 0;
    for (const tgc::SafetensorsTensor &tensor : file.tensors())
      bytes += static_cast<int64_t>(tensor.end - tensor.begin);
    std::printf("checkpoint %s: one file, format %s, model %s\n", path.c_str(),
                file.metadataOr("format", "?").c_str(),
                file.metadataOr("model", "?").c_str());
    std::printf("%zu tensors, %s\nmetadata:\n", file.tensors().size(),
                megabytes(static_cast<double>(bytes)).c_str());
    printMetadata(file.metadata());
    std::printf("tensors:\n");
    std::map<std::string, std::vector<int64_t>> views = consolidatedViews(file);
    for (const tgc::SafetensorsTensor &tensor : file.tensors()) {
      auto view = views.find(tensor.name);
      std::printf("  %s %s %s\n", tensor.name.c_str(),
                  tgc::dtypeName(tensor.dtype),
                  tgc::fileShapeString(
                      tensor.shape, view == views.end() ? std::vector<int64_t>{}
                                                        : view->second)
                      .c_str());
    }
    return 0;
  }
  tgc::ShardedCheckpoint checkpoint(path);
  std::string mesh;
  int64_t processes = 1;
  for (const auto &[name, size] : checkpoint.mesh()) {
    mesh += (mesh.empty() ? "" : ",") + name + "=" + std::to_string(size);
    processes *= size;
  }
  int64_t bytes = 0;
  for (const tgc::ShardedTensor &tensor : checkpoint.tensors()) {
    int64_t count = tgc::dtypeSize(tensor.dtype);
    for (int64_t dim : tensor.shape)
      count *= dim;
    bytes += count;
  }
  std::printf("checkpoint %s: sharded, format %s, model %s\n", path.c_str(),
              tgc::kShardedCheckpointFormat, checkpoint.model().c_str());
  std::printf("mesh %s (%lld processes), %zu files, %zu tensors, %s whole\n",
              mesh.c_str(), static_cast<long long>(processes),
              checkpoint.files().size(), checkpoint.tensors().size(),
              megabytes(static_cast<double>(bytes)).c_str());
  std::printf("metadata:\n");
  printMetadata(checkpoint.metadata());
  std::printf("tensors:\n");
  for (const tgc::ShardedTensor &tensor : checkpoint.tensors())
    std::printf("  %s %s %s split %s, %zu piece%s\n", tensor.name.c_str(),
                tgc::dtypeName(tensor.dtype),
                tgc::fileShapeString(
                    tensor.fileShape.empty() ? tensor.shape : tensor.fileShape,
                    tensor.shape)
                    .c_str(),
                describeSplit(tensor.split).c_str(), tensor.pieces.size(),
                tensor.pieces.size() == 1 ? "" : "s");
  return 0;
}

int runConsolidate(const std::vector<std::string> &args) {
  std::string input, output;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o" || args[i] == "--output") {
      if (i + 1 == args.size())
        throw Error(args[i] + " needs a file name");
      output = args[++i];
    } else if (!args[i].empty() && args[i][0] == '-') {
      throw Error("consolidate: unknown option '" + args[i] +
                  "' (see tg-ckpt --help)");
    } else if (input.empty()) {
      input = args[i];
    } else {
      throw Error("consolidate takes one checkpoint, got '" + input +
                  "' and '" + args[i] + "'");
    }
  }
  if (input.empty() || output.empty())
    throw Error("usage: tg-ckpt consolidate CHECKPOINT -o FILE.safetensors");
  if (!tgc::isShardedCheckpoint(input))
    throw Error(input + " is not a sharded checkpoint (a directory with " +
                tgc::kShardedIndexName +
                "); a checkpoint file is already consolidated");
  tgc::ShardedCheckpoint checkpoint(input);
  // Each tensor is put together just before it is written: memory for the
  // largest one. Files show a tensor in its file shape (the same bytes as
  // the view the step held it in), as a one-process run writes it.
  std::vector<tgc::TensorToWrite> tensors;
  for (const tgc::ShardedTensor &tensor : checkpoint.tensors())
    tensors.push_back(
        {tensor.name, tensor.dtype,
         tensor.fileShape.empty() ? tensor.shape : tensor.fileShape, nullptr,
         [&checkpoint, &tensor](void *whole) {
           checkpoint.read(tensor, whole);
         }});
  std::map<std::string, std::string> metadata = checkpoint.metadata();
  metadata["format"] = tgc::kCheckpointFormat;
  metadata["sharding"] =
      tgc::consolidatedShardingJson(checkpoint.mesh(), checkpoint.tensors());
  tgc::writeSafetensors(output, tensors, metadata);
  std::printf("%s: %zu tensors of model %s at step %s from %zu files\n",
              output.c_str(), tensors.size(), checkpoint.model().c_str(),
              checkpoint.metadata().count("step")
                  ? checkpoint.metadata().at("step").c_str()
                  : "?",
              checkpoint.files().size());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return tgc::runSubcommands(
      "tg-ckpt", kUsage, argc, argv,
      {{"info", runInfo}, {"consolidate", runConsolidate}});
}
