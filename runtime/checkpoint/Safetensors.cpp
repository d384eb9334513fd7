//===- Safetensors.cpp - Read and write .safetensors files --------*- C++ -*-===//

#include "runtime/checkpoint/Safetensors.h"

#include "runtime/core/AtomicFile.h"
#include "runtime/core/DType.h"
#include "runtime/core/Error.h"
#include "runtime/core/JsonText.h"

#include <algorithm>
#include <cstring>

namespace tgc {

int64_t SafetensorsTensor::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

std::string SafetensorsTensor::shapeString() const {
  return tgc::shapeString(shape.data(), static_cast<int>(shape.size()));
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

SafetensorsFile::SafetensorsFile(const std::string &path) : file_(path) {
  auto fail = [&](const std::string &problem) -> Error {
    return Error(path + ": " + problem);
  };
  if (file_.size() < 8)
    throw fail("truncated safetensors file: " + std::to_string(file_.size()) +
               " bytes, fewer than the 8-byte header length");
  uint64_t headerLength = 0;
  for (int i = 7; i >= 0; --i)
    headerLength = (headerLength << 8) | file_.data()[i];
  if (headerLength > kMaxSafetensorsHeader)
    throw fail("safetensors header length " + std::to_string(headerLength) +
               " is above the limit of " +
               std::to_string(kMaxSafetensorsHeader) +
               " (not a safetensors file?)");
  if (headerLength > file_.size() - 8)
    throw fail("safetensors header length " + std::to_string(headerLength) +
               " runs past the end of the " + std::to_string(file_.size()) +
               "-byte file");
  if (headerLength < 2)
    throw fail("safetensors header of " + std::to_string(headerLength) +
               " bytes is too short for a JSON object");
  std::string text(reinterpret_cast<const char *>(file_.data() + 8),
                   headerLength);
  Json header;
  std::string jsonError;
  if (!parseJson(text, header, jsonError))
    throw fail("safetensors header is not valid JSON: " + jsonError);
  if (!header.is_object())
    throw fail("safetensors header is " + std::string(jsonKindName(header)) +
               ", expected an object");

  const uint8_t *dataStart = file_.data() + 8 + headerLength;
  uint64_t dataSize = file_.size() - 8 - headerLength;
  for (const auto &[name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object())
        throw fail("\"__metadata__\" is " + std::string(jsonKindName(entry)) +
                   ", expected an object of strings");
      for (const auto &[key, value] : entry.items()) {
        if (!value.is_string())
          throw fail("metadata \"" + key + "\" is " + jsonKindName(value) +
                     ", safetensors metadata values are strings");
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    std::string where = "tensor \"" + name + "\"";
    if (!entry.is_object())
      throw fail(where + " is " + jsonKindName(entry) + ", expected an object");
    for (const auto &[field, value] : entry.items())
      if (field != "dtype" && field != "shape" && field != "data_offsets")
        throw fail(where + " has an unknown field \"" + field + "\"");
    for (const char *field : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(field))
        throw fail(where + " lacks \"" + field + "\"");
    const Json &dtype = entry["dtype"];
    const Json &shape = entry["shape"];
    const Json &offsets = entry["data_offsets"];
    SafetensorsTensor tensor;
    tensor.name = name;
    if (!dtype.is_string() ||
        !parseDType(dtype.get_ref<const std::string &>(), tensor.dtype))
      throw fail(
          where + " has unsupported dtype " +
          (dtype.is_string() ? dtype.get<std::string>() : writeJson(dtype)) +
          " (supported: F32, BF16, F16, F8_E4M3, F8_E5M2, I32, I64, "
          "BOOL)");
    if (!shape.is_array() || shape.size() > kMaxRank)
      throw fail(where + " has a bad shape " + writeJson(shape) +
                 " (expected an array of at most " + std::to_string(kMaxRank) +
                 " dims)");
    uint64_t elements = 1;
    bool overflow = false;
    for (const Json &dim : shape) {
      if (!dim.is_number_integer() || dim.get<int64_t>() < 0)
        throw fail(where + " has a bad shape " + writeJson(shape));
      tensor.shape.push_back(dim.get<int64_t>());
      uint64_t d = dim.get<uint64_t>();
      if (d != 0 && elements > UINT64_MAX / d / 8)
        overflow = true;
      elements *= d;
    }
    auto isCount = [](const Json &v) {
      return v.is_number_integer() && v.get<int64_t>() >= 0;
    };
    if (!offsets.is_array() || offsets.size() != 2 || !isCount(offsets[0]) ||
        !isCount(offsets[1]))
      throw fail(where + " has bad data_offsets " + writeJson(offsets) +
                 " (expected [begin, end])");
    tensor.begin = offsets[0].get<uint64_t>();
    tensor.end = offsets[1].get<uint64_t>();
    if (tensor.begin > tensor.end || tensor.end > dataSize)
      throw fail(where + " has data_offsets [" + std::to_string(tensor.begin) +
                 ", " + std::to_string(tensor.end) +
                 "] outside the data section of " + std::to_string(dataSize) +
                 " bytes");
    uint64_t want = elements * static_cast<uint64_t>(dtypeSize(tensor.dtype));
    if (overflow || tensor.end - tensor.begin != want)
      throw fail(where + " of shape " + tensor.shapeString() + " and dtype " +
                 dtypeName(tensor.dtype) + " needs " + std::to_string(want) +
                 " bytes but its data_offsets span " +
                 std::to_string(tensor.end - tensor.begin));
    tensor.data = dataStart + tensor.begin;
    tensors_.push_back(std::move(tensor));
  }

  std::sort(tensors_.begin(), tensors_.end(),
            [](const SafetensorsTensor &a, const SafetensorsTensor &b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  uint64_t expected = 0;
  for (const SafetensorsTensor &tensor : tensors_) {
    if (tensor.begin != expected)
      throw fail("tensor \"" + tensor.name + "\" starts at byte " +
                 std::to_string(tensor.begin) + " of the data, expected " +
                 std::to_string(expected) +
                 (tensor.begin < expected ? " (tensors overlap)"
                                          : " (a gap between tensors)"));
    expected = tensor.end;
  }
  if (expected != dataSize)
    throw fail("the tensors cover " + std::to_string(expected) +
               " bytes of a data section of " + std::to_string(dataSize) +
               " (trailing bytes)");
  for (size_t i = 0; i < tensors_.size(); ++i)
    index_[tensors_[i].name] = i;
}

const SafetensorsTensor *SafetensorsFile::find(const std::string &name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

std::string SafetensorsFile::metadataOr(const std::string &key,
                                        const std::string &fallback) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? fallback : it->second;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

void writeSafetensors(const std::string &path,
                      const std::vector<TensorToWrite> &tensors,
                      const std::map<std::string, std::string> &metadata) {
  Json header = Json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  uint64_t offset = 0;
  std::vector<uint64_t> sizes;
  for (const TensorToWrite &tensor : tensors) {
    if (tensor.name == "__metadata__" || header.contains(tensor.name))
      throw Error(path + ": tensor name \"" + tensor.name +
                  "\" is reserved or repeated");
    uint64_t elements = 1;
    for (int64_t dim : tensor.shape)
      elements *= static_cast<uint64_t>(dim);
    uint64_t size = elements * static_cast<uint64_t>(dtypeSize(tensor.dtype));
    header[tensor.name] = {{"dtype", dtypeName(tensor.dtype)},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + size}}};
    sizes.push_back(size);
    offset += size;
  }
  std::string text = writeJson(header);
  // Pad with spaces so the data starts 8-byte aligned, as the reference
  // writer does.
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t length = text.size();
  uint8_t lengthBytes[8];
  for (int i = 0; i < 8; ++i)
    lengthBytes[i] = static_cast<uint8_t>(length >> (8 * i));

  AtomicFileWriter writer(path);
  writer.write(lengthBytes, 8);
  writer.write(text);
  std::vector<char> buffer;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].data) {
      writer.write(tensors[i].data, sizes[i]);
      continue;
    }
    buffer.resize(sizes[i]);
    tensors[i].fill(buffer.data());
    writer.write(buffer.data(), sizes[i]);
  }
  writer.commit();
}

} // namespace tgc
