//===- OnnxTranslate.cpp - ONNX models to tgc model files -------*- C++ -*-===//
//
// Compiled with exceptions: protobuf and ONNX's shape inference throw, and
// every problem found here is a Failure, caught once in translateOnnxFile.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxTranslate.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>

#include <fcntl.h>
#include <sstream>
#include <stdexcept>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tgc::onnx {
namespace {

using Json = nlohmann::ordered_json;
using ::onnx::AttributeProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

/// Anything that stops the translation; the message names the place.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr int64_t kMinOpset = 13, kMaxOpset = 17;
/// Constants above this many elements belong in parameters (the importer's
/// limit for constants written out in a model file).
constexpr int64_t kMaxConstantElements = int64_t(1) << 24;
/// Folded values up to this size become Constant nodes for ONNX's shape
/// inference (shapes, indices, scalars).
constexpr int64_t kMaxShapeConstant = 4096;

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool isFloatType(int type) {
  return type == TensorProto::FLOAT || type == TensorProto::FLOAT16 ||
         type == TensorProto::BFLOAT16 || type == TensorProto::DOUBLE;
}

bool isIntType(int type) {
  return type == TensorProto::INT64 || type == TensorProto::INT32 ||
         type == TensorProto::INT16 || type == TensorProto::INT8 ||
         type == TensorProto::UINT8 || type == TensorProto::UINT16 ||
         type == TensorProto::UINT32 || type == TensorProto::UINT64;
}

/// The model file's dtype of an ONNX element type ("" when it has none).
std::string dtypeName(int type) {
  switch (type) {
  case TensorProto::FLOAT:
  case TensorProto::DOUBLE:
    return "f32";
  case TensorProto::FLOAT16:
    return "f16";
  case TensorProto::BFLOAT16:
    return "bf16";
  case TensorProto::INT32:
    return "i32";
  case TensorProto::INT64:
    return "i64";
  case TensorProto::BOOL:
    return "i1";
  default:
    return "";
  }
}

std::string typeName(int type) {
  return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(type));
}

/// "/h.0/attn/MatMul" -> "h.0.attn.MatMul": the layer is a dotted prefix.
std::string dottedName(const std::string &name) {
  std::string out;
  for (char c : name) {
    if (c == '/' || c == ':')
      c = '.';
    if (c == '.' && (out.empty() || out.back() == '.'))
      continue;
    out += c;
  }
  while (!out.empty() && out.back() == '.')
    out.pop_back();
  return out;
}

/// JSON has no infinities or NaN; the model file's reader (FlatBuffers')
/// takes inf, -inf and nan: they are written as these markers and spelled
/// out in the text.
constexpr const char *kPosInf = "@tgc:inf@", *kNegInf = "@tgc:-inf@",
                     *kNaN = "@tgc:nan@";

Json floatJson(double v) {
  if (std::isnan(v))
    return kNaN;
  if (std::isinf(v))
    return v > 0 ? kPosInf : kNegInf;
  return v;
}

/// The text with the markers of floatJson spelled as FlatBuffers reads
/// them.
std::string spellSpecialFloats(std::string text) {
  for (auto [marker, spelled] :
       {std::pair<std::string, std::string>{kPosInf, "inf"},
        {kNegInf, "-inf"},
        {kNaN, "nan"}}) {
    std::string quoted = "\"" + marker + "\"";
    for (size_t at = text.find(quoted); at != std::string::npos;
         at = text.find(quoted, at + spelled.size()))
      text.replace(at, quoted.size(), spelled);
  }
  return text;
}

/// A tensor known when the model is compiled, in doubles (exact for the
/// integers of shapes and indices).
struct Const {
  int type = TensorProto::FLOAT;
  std::vector<int64_t> shape;
  std::vector<double> data;

  int64_t size() const { return static_cast<int64_t>(data.size()); }
  /// Element i as an integer; the int64 extremes exports write for "to
  /// the end" (9223372036854775807) saturate rather than overflow.
  int64_t integer(size_t i) const {
    double v = data[i];
    if (v >= 9.2e18)
      return std::numeric_limits<int64_t>::max();
    if (v <= -9.2e18)
      return std::numeric_limits<int64_t>::min();
    return static_cast<int64_t>(v);
  }
  std::vector<int64_t> integers() const {
    std::vector<int64_t> out;
    for (size_t i = 0; i < data.size(); ++i)
      out.push_back(integer(i));
    return out;
  }
};

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// numpy's broadcast of two shapes, or throws.
std::vector<int64_t> broadcastShapes(const std::vector<int64_t> &a,
                                     const std::vector<int64_t> &b,
                                     const std::string &where) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Failure(where + ": shapes " + shapeText(a) + " and " +
                    shapeText(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// The flat index into `shape` (broadcast to `out`) of each element of
/// `out`: the strides are worked out once.
class Broadcast {
public:
  Broadcast(const std::vector<int64_t> &out, const std::vector<int64_t> &shape)
      : out_(out), outStrides_(stridesOf(out)), strides_(out.size(), 0),
        same_(out == shape), single_(product(shape) == 1) {
    std::vector<int64_t> own = stridesOf(shape);
    size_t offset = out.size() - shape.size();
    for (size_t d = offset; d < out.size(); ++d)
      if (shape[d - offset] != 1)
        strides_[d] = own[d - offset];
  }
  int64_t operator()(int64_t flat) const {
    if (same_)
      return flat;
    if (single_)
      return 0;
    int64_t index = 0;
    for (size_t d = 0; d < out_.size(); ++d)
      index += (flat / outStrides_[d]) % out_[d] * strides_[d];
    return index;
  }

private:
  std::vector<int64_t> out_, outStrides_, strides_;
  bool same_, single_;
};

int64_t normalizeAxis(int64_t axis, int64_t rank, const std::string &where) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    throw Failure(where + ": axis " + std::to_string(axis) +
                  " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

struct ValueInfo {
  int type = 0;
  std::vector<int64_t> shape;
};

class Translator {
public:
  Translator(const std::string &path, const TranslateOptions &options)
      : path_(path), options_(options) {
    size_t slash = path.rfind('/');
    dir_ = slash == std::string::npos ? "." : path.substr(0, slash);
  }

  Translation run();

private:
  // Reading.
  void parse();
  void checkOpsets();
  void fixInputs();
  void inferShapes();
  std::string tensorBytes(const TensorProto &tensor, const std::string &what);
  Const constOf(const TensorProto &tensor, const std::string &what);
  void classifyInitializers();

  // Values.
  const ValueInfo &info(const std::string &name, const std::string &where);
  bool isConst(const std::string &name) const { return consts_.count(name); }
  const Const &constant(const std::string &name, const std::string &where);
  std::string use(const std::string &name, const std::string &where);
  std::string useAs(const std::string &name, int type,
                    const std::string &where);

  // Nodes.
  std::string where(const NodeProto &node) const;
  std::string input(const NodeProto &node, int i) const {
    return i < node.input_size() ? node.input(i) : std::string();
  }
  const AttributeProto *attr(const NodeProto &node, const std::string &name);
  int64_t attrInt(const NodeProto &node, const std::string &name,
                  int64_t fallback);
  double attrFloat(const NodeProto &node, const std::string &name,
                   double fallback);
  std::vector<int64_t> attrInts(const NodeProto &node, const std::string &name);
  void checkAttrs(const NodeProto &node,
                  std::initializer_list<const char *> known);
  std::vector<int64_t> constInts(const NodeProto &node, int i,
                                 const std::string &what);
  std::vector<int64_t> poolPads(const NodeProto &node, const std::string &at);

  bool fold(const NodeProto &node);
  void foldGraph();
  void raiseErfGelu();
  void translate(const NodeProto &node);
  std::string emit(const std::string &name, const std::string &op,
                   const std::vector<std::string> &inputs,
                   const std::string &output, Json attrs = Json::array());
  void setLoss();
  void writeWeights();

  std::string path_, dir_;
  const TranslateOptions &options_;
  ::onnx::ModelProto model_;
  int64_t opset_ = 0;
  std::map<std::string, ValueInfo> infos_;
  std::map<std::string, const TensorProto *> initializers_;
  std::set<std::string> paramNames_;
  std::map<std::string, Const> consts_;
  std::set<std::string> materialized_;
  std::unordered_map<std::string, std::string> constantsByContent_;
  std::map<std::string, std::string> aliases_;
  /// Transposes of 2-D values that only MatMul right-hand sides read: the
  /// matmul transposes instead (nn.Linear's weight, exported as
  /// Transpose -> MatMul).
  std::map<std::string, std::string> transposedRhs_;
  std::map<std::string, int> uses_;
  /// GELU in its erf form, 0.5 * x * (1 + erf(x / sqrt 2)): its last
  /// node's output -> x; the other nodes of the pattern are skipped.
  std::map<std::string, std::string> erfGelu_;
  std::set<const NodeProto *> raised_;
  std::map<std::string, const NodeProto *> producer_;
  std::map<std::string, std::string> externalData_;
  std::set<std::string> emittedNames_;
  Json params_ = Json::array(), inputs_ = Json::array(), nodes_ = Json::array();
  std::string loss_;
  Translation result_;
};

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

void Translator::parse() {
  // Mapped, not read: protobuf copies what it keeps, and a GPT-2 124M
  // export is 500 MB.
  int fd = ::open(path_.c_str(), O_RDONLY);
  if (fd < 0)
    throw Failure(path_ +
                  ": cannot read the ONNX model: " + std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw Failure(path_ + ": cannot read the ONNX model: not a file");
  }
  size_t size = static_cast<size_t>(info.st_size);
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    ::close(fd);
    throw Failure(path_ + ": an ONNX file over 2 GB (protobuf's limit): "
                          "export with external data");
  }
  void *mapped =
      size ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  ::close(fd);
  if (size && mapped == MAP_FAILED)
    throw Failure(path_ +
                  ": cannot read the ONNX model: " + std::strerror(errno));
  struct Unmap {
    void *data;
    size_t size;
    ~Unmap() {
      if (size)
        ::munmap(data, size);
    }
  } unmap{mapped, size};
  google::protobuf::io::ArrayInputStream stream(mapped, static_cast<int>(size));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(std::numeric_limits<int>::max());
  if (size == 0 || !model_.ParseFromCodedStream(&coded) ||
      !coded.ConsumedEntireMessage())
    throw Failure(path_ + ": not an ONNX model (the protobuf does not parse: "
                          "the file is truncated, damaged or another format)");
  if (!model_.has_graph() || model_.graph().node_size() == 0)
    throw Failure(path_ + ": the ONNX model has no graph");
}

void Translator::checkOpsets() {
  for (const auto &import : model_.opset_import()) {
    if (import.domain().empty() || import.domain() == "ai.onnx")
      opset_ = import.version();
  }
  if (opset_ < kMinOpset || opset_ > kMaxOpset)
    throw Failure(path_ + ": opset " + std::to_string(opset_) +
                  " (tgc imports the default domain at opsets " +
                  std::to_string(kMinOpset) + " to " +
                  std::to_string(kMaxOpset) +
                  ": torch.onnx.export(..., opset_version=17))");
  for (const NodeProto &node : model_.graph().node())
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      throw Failure(where(node) + ": op domain '" + node.domain() +
                    "' (tgc imports the default ONNX domain only)");
}

/// Fixes the dynamic first dims of the inputs to the batch size (before
/// shape inference, which then knows every shape); any other dynamic dim
/// is an error.
void Translator::fixInputs() {
  std::set<std::string> inits;
  for (const TensorProto &t : model_.graph().initializer())
    inits.insert(t.name());
  for (auto &input : *model_.mutable_graph()->mutable_input()) {
    if (inits.count(input.name()))
      continue;
    if (!input.type().has_tensor_type() ||
        !input.type().tensor_type().has_shape())
      throw Failure(path_ + ": input '" + input.name() +
                    "' has no tensor shape");
    auto *shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int d = 0; d < shape->dim_size(); ++d) {
      auto *dim = shape->mutable_dim(d);
      if (dim->has_dim_value()) {
        if (d == 0 && options_.batchSize > 0 &&
            dim->dim_value() != options_.batchSize * options_.dataReplicas)
          throw Failure(
              path_ + ": input '" + input.name() +
              "' was exported with batch " + std::to_string(dim->dim_value()) +
              ", not " +
              std::to_string(options_.batchSize * options_.dataReplicas) +
              " (export it with that batch, or with a dynamic "
              "first dim: dynamic_axes)");
        continue;
      }
      std::string param = dim->has_dim_param() ? dim->dim_param() : "?";
      if (d != 0 || options_.batchSize <= 0)
        throw Failure(
            path_ + ": input '" + input.name() + "' dim " + std::to_string(d) +
            " is dynamic ('" + param + "'), which tgc cannot fix" +
            (d == 0 ? ": pass --batch-size" : ": export with static shapes"));
      dim->set_dim_value(options_.batchSize * options_.dataReplicas);
    }
  }
}

void Translator::inferShapes() {
  ::onnx::ShapeInferenceOptions inference{/*check_type=*/false,
                                          /*error_mode=*/1,
                                          /*enable_data_propagation=*/true};
  try {
    ::onnx::shape_inference::InferShapes(
        model_, ::onnx::OpSchemaRegistry::Instance(), inference);
  } catch (const std::exception &e) {
    throw Failure(path_ + ": ONNX shape inference failed: " + e.what());
  }
  auto record = [&](const ::onnx::ValueInfoProto &value) {
    if (!value.type().has_tensor_type())
      return;
    const auto &tensor = value.type().tensor_type();
    ValueInfo info;
    info.type = tensor.elem_type();
    if (!tensor.has_shape())
      return;
    for (const auto &dim : tensor.shape().dim()) {
      if (!dim.has_dim_value())
        return;
      info.shape.push_back(dim.dim_value());
    }
    infos_[value.name()] = info;
  };
  for (const auto &v : model_.graph().input())
    record(v);
  for (const auto &v : model_.graph().value_info())
    record(v);
  for (const auto &v : model_.graph().output())
    record(v);
  for (const TensorProto &t : model_.graph().initializer()) {
    ValueInfo info;
    info.type = t.data_type();
    info.shape.assign(t.dims().begin(), t.dims().end());
    infos_[t.name()] = info;
  }
}

/// The little-endian bytes of `tensor`, wherever the file keeps them.
std::string Translator::tensorBytes(const TensorProto &tensor,
                                    const std::string &what) {
  if (tensor.data_location() == TensorProto::EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &entry : tensor.external_data()) {
      if (entry.key() == "location")
        location = entry.value();
      else if (entry.key() == "offset")
        offset = std::stoll(entry.value());
      else if (entry.key() == "length")
        length = std::stoll(entry.value());
    }
    if (location.empty() || location.find("..") != std::string::npos ||
        location[0] == '/')
      throw Failure(what + ": external data location '" + location +
                    "' is not a file beside the model");
    std::string file = dir_ + "/" + location;
    std::ifstream in(file, std::ios::binary);
    if (!in)
      throw Failure(what + ": external data file " + file + " is missing (" +
                    std::strerror(errno) + ")");
    in.seekg(0, std::ios::end);
    int64_t size = in.tellg();
    if (length < 0)
      length = size - offset;
    if (offset < 0 || offset + length > size)
      throw Failure(what + ": external data file " + file + " holds " +
                    std::to_string(size) + " bytes, the tensor's are at [" +
                    std::to_string(offset) + ", " +
                    std::to_string(offset + length) + ")");
    std::string bytes(length, '\0');
    in.seekg(offset);
    in.read(&bytes[0], length);
    return bytes;
  }
  if (tensor.has_raw_data())
    return tensor.raw_data();
  std::string bytes;
  auto append = [&](const void *p, size_t n) {
    bytes.append(static_cast<const char *>(p), n);
  };
  switch (tensor.data_type()) {
  case TensorProto::FLOAT:
    for (float v : tensor.float_data())
      append(&v, 4);
    break;
  case TensorProto::DOUBLE:
    for (double v : tensor.double_data())
      append(&v, 8);
    break;
  case TensorProto::INT64:
    for (int64_t v : tensor.int64_data())
      append(&v, 8);
    break;
  case TensorProto::INT32:
    for (int32_t v : tensor.int32_data())
      append(&v, 4);
    break;
  case TensorProto::BOOL:
  case TensorProto::INT8:
  case TensorProto::UINT8:
    for (int32_t v : tensor.int32_data()) {
      uint8_t b = static_cast<uint8_t>(v);
      append(&b, 1);
    }
    break;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
    for (int32_t v : tensor.int32_data()) {
      uint16_t h = static_cast<uint16_t>(v);
      append(&h, 2);
    }
    break;
  default:
    throw Failure(what + ": element type " + typeName(tensor.data_type()) +
                  " is not supported");
  }
  return bytes;
}

float halfBitsToFloat(uint16_t h, bool bf16) {
  if (bf16) {
    uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 31, man = h & 1023;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(man + 1024), int(exp) - 25);
  return sign ? -v : v;
}

Const Translator::constOf(const TensorProto &tensor, const std::string &what) {
  Const c;
  c.type = tensor.data_type();
  c.shape.assign(tensor.dims().begin(), tensor.dims().end());
  int64_t count = product(c.shape);
  if (count > kMaxConstantElements)
    throw Failure(what + ": a constant of " + std::to_string(count) +
                  " elements (tgc folds constants of at most " +
                  std::to_string(kMaxConstantElements) + ")");
  std::string bytes = tensorBytes(tensor, what);
  int size = 0;
  switch (c.type) {
  case TensorProto::FLOAT:
  case TensorProto::INT32:
  case TensorProto::UINT32:
    size = 4;
    break;
  case TensorProto::DOUBLE:
  case TensorProto::INT64:
  case TensorProto::UINT64:
    size = 8;
    break;
  case TensorProto::FLOAT16:
  case TensorProto::BFLOAT16:
  case TensorProto::INT16:
  case TensorProto::UINT16:
    size = 2;
    break;
  case TensorProto::BOOL:
  case TensorProto::INT8:
  case TensorProto::UINT8:
    size = 1;
    break;
  default:
    throw Failure(what + ": element type " + typeName(c.type) +
                  " is not supported");
  }
  if (static_cast<int64_t>(bytes.size()) != count * size)
    throw Failure(what + ": holds " + std::to_string(bytes.size()) +
                  " bytes, its shape " + shapeText(c.shape) + " of " +
                  typeName(c.type) + " needs " + std::to_string(count * size));
  c.data.resize(count);
  const char *p = bytes.data();
  for (int64_t i = 0; i < count; ++i, p += size) {
    switch (c.type) {
    case TensorProto::FLOAT: {
      float v;
      std::memcpy(&v, p, 4);
      c.data[i] = v;
      break;
    }
    case TensorProto::DOUBLE:
      std::memcpy(&c.data[i], p, 8);
      break;
    case TensorProto::INT64:
    case TensorProto::UINT64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      c.data[i] = static_cast<double>(v);
      break;
    }
    case TensorProto::INT32:
    case TensorProto::UINT32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      c.data[i] = v;
      break;
    }
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      c.data[i] = halfBitsToFloat(v, c.type == TensorProto::BFLOAT16);
      break;
    }
    case TensorProto::INT16:
    case TensorProto::UINT16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      c.data[i] = v;
      break;
    }
    default:
      c.data[i] = static_cast<int8_t>(*p);
      if (c.type == TensorProto::BOOL || c.type == TensorProto::UINT8)
        c.data[i] = static_cast<uint8_t>(*p);
    }
  }
  return c;
}

/// Which inputs of a node the gradient flows through (false: shapes,
/// indices, conditions, labels).
bool differentiableInput(const NodeProto &node, int i) {
  static const std::set<std::string> none = {
      "Shape",           "Size",           "Equal",  "Less",   "Greater",
      "LessOrEqual",     "GreaterOrEqual", "Not",    "And",    "Or",
      "ConstantOfShape", "Range",          "ArgMax", "ArgMin", "NonZero"};
  const std::string &op = node.op_type();
  if (none.count(op))
    return false;
  if (op == "Where")
    return i != 0;
  if (op == "Gather" || op == "SoftmaxCrossEntropyLoss" ||
      op == "NegativeLogLikelihoodLoss")
    return i == 0;
  if (op == "BatchNormalization")
    return i < 3; // not the running mean and variance
  static const std::set<std::string> firstOnly = {
      "Reshape", "Slice",     "Expand", "Split", "Squeeze", "Unsqueeze",
      "Dropout", "ReduceSum", "Tile",   "Pad",   "Trilu"};
  if (firstOnly.count(op))
    return i == 0;
  return true;
}

/// Parameters are the float initializers the loss reaches through
/// differentiable inputs; the rest (buffers: masks, position ids) are
/// constants.
void Translator::classifyInitializers() {
  for (const NodeProto &node : model_.graph().node())
    for (const std::string &out : node.output())
      producer_[out] = &node;
  std::set<std::string> reached;
  std::vector<std::string> work;
  if (model_.graph().output_size() > 0)
    work.push_back(model_.graph().output(0).name());
  while (!work.empty()) {
    std::string value = work.back();
    work.pop_back();
    if (!reached.insert(value).second)
      continue;
    auto it = producer_.find(value);
    if (it == producer_.end())
      continue;
    const NodeProto &node = *it->second;
    if (node.op_type() == "Cast" && !isFloatType(attrInt(node, "to", 0)))
      continue;
    for (int i = 0; i < node.input_size(); ++i)
      if (!node.input(i).empty() && differentiableInput(node, i))
        work.push_back(node.input(i));
  }
  for (const TensorProto &t : model_.graph().initializer()) {
    initializers_[t.name()] = &t;
    std::string what = path_ + ": initializer '" + t.name() + "'";
    if (reached.count(t.name()) && isFloatType(t.data_type())) {
      // A tensor holding infinities (an additive mask) is no weight.
      int64_t count = product({t.dims().begin(), t.dims().end()});
      bool finite = true;
      if (t.data_type() == TensorProto::FLOAT &&
          count <= kMaxConstantElements) {
        std::string copy;
        const std::string &bytes =
            t.has_raw_data() ? t.raw_data() : (copy = tensorBytes(t, what));
        for (size_t i = 0; finite && i + 4 <= bytes.size(); i += 4) {
          float v;
          std::memcpy(&v, bytes.data() + i, 4);
          finite = std::isfinite(v);
        }
      }
      if (finite) {
        paramNames_.insert(t.name());
        continue;
      }
    }
    consts_[t.name()] = constOf(t, what);
  }
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

const ValueInfo &Translator::info(const std::string &name,
                                  const std::string &where) {
  auto alias = aliases_.find(name);
  if (alias != aliases_.end())
    return info(alias->second, where);
  auto it = infos_.find(name);
  if (it != infos_.end())
    return it->second;
  auto c = consts_.find(name);
  if (c != consts_.end()) {
    ValueInfo &made = infos_[name];
    made.type = c->second.type;
    made.shape = c->second.shape;
    return made;
  }
  throw Failure(where + ": the shape of '" + name +
                "' is not known after ONNX shape inference (a dynamic "
                "shape tgc cannot fix)");
}

const Const &Translator::constant(const std::string &name,
                                  const std::string &where) {
  auto alias = aliases_.find(name);
  if (alias != aliases_.end())
    return constant(alias->second, where);
  auto it = consts_.find(name);
  if (it == consts_.end())
    throw Failure(where + ": '" + name +
                  "' must be a constant (known when the model is compiled), "
                  "but it is computed at run time");
  return it->second;
}

/// The model-file tensor of value `name`: a constant is written out as a
/// node the first time it is read at run time.
std::string Translator::use(const std::string &name, const std::string &where) {
  auto alias = aliases_.find(name);
  if (alias != aliases_.end())
    return use(alias->second, where);
  auto it = consts_.find(name);
  if (it == consts_.end())
    return name;
  if (!materialized_.insert(name).second)
    return name;
  const Const &c = it->second;
  // Constants of equal contents are one (each layer of an export folds its
  // own copy of the causal mask).
  std::string content = std::to_string(c.type) + shapeText(c.shape);
  content.append(reinterpret_cast<const char *>(c.data.data()),
                 c.data.size() * sizeof(double));
  auto [same, fresh] = constantsByContent_.try_emplace(content, name);
  if (!fresh) {
    aliases_[name] = same->second;
    return same->second;
  }
  std::string dtype = dtypeName(c.type);
  if (dtype.empty())
    throw Failure(where + ": constant '" + name + "' of element type " +
                  typeName(c.type) + " has no tg dtype");
  Json attrs = Json::array();
  attrs.push_back({{"name", "shape"}, {"ints", c.shape}});
  attrs.push_back({{"name", "dtype"}, {"s", dtype}});
  bool splat = std::all_of(c.data.begin(), c.data.end(),
                           [&](double v) { return v == c.data[0]; });
  bool isFloat = isFloatType(c.type);
  Json value = {{"name", "value"}};
  if (splat && !c.data.empty()) {
    if (c.type == TensorProto::BOOL)
      value["b"] = c.data[0] != 0;
    else if (isFloat)
      value["f"] = floatJson(c.data[0]);
    else
      value["i"] = c.integer(0);
  } else if (isFloat) {
    Json floats = Json::array();
    for (double v : c.data)
      floats.push_back(floatJson(v));
    value["floats"] = floats;
  } else {
    value["ints"] = c.integers();
  }
  attrs.push_back(value);
  nodes_.push_back({{"name", dottedName(name)},
                    {"op", "constant"},
                    {"inputs", Json::array()},
                    {"outputs", {name}},
                    {"attrs", attrs}});
  ++result_.constants;
  return name;
}

/// `use`, with a constant converted to `type` first (ONNX constants are
/// often float32 beside a half or a double; integer scalars beside floats).
std::string Translator::useAs(const std::string &name, int type,
                              const std::string &where) {
  auto it = consts_.find(name);
  if (it != consts_.end() && it->second.type != type) {
    std::string converted = name + "." + dtypeName(type);
    if (!consts_.count(converted)) {
      Const c = it->second;
      c.type = type;
      consts_[converted] = c;
    }
    return use(converted, where);
  }
  return use(name, where);
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

std::string Translator::where(const NodeProto &node) const {
  std::string name = node.name().empty()
                         ? (node.output_size() ? node.output(0) : "?")
                         : node.name();
  return path_ + ": node '" + name + "' (" + node.op_type() + ")";
}

const AttributeProto *Translator::attr(const NodeProto &node,
                                       const std::string &name) {
  for (const AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t Translator::attrInt(const NodeProto &node, const std::string &name,
                            int64_t fallback) {
  const AttributeProto *a = attr(node, name);
  return a ? a->i() : fallback;
}

double Translator::attrFloat(const NodeProto &node, const std::string &name,
                             double fallback) {
  const AttributeProto *a = attr(node, name);
  return a ? a->f() : fallback;
}

std::vector<int64_t> Translator::attrInts(const NodeProto &node,
                                          const std::string &name) {
  const AttributeProto *a = attr(node, name);
  if (!a)
    return {};
  return {a->ints().begin(), a->ints().end()};
}

/// An attribute the translation does not read would change what the node
/// computes: an error, naming it.
void Translator::checkAttrs(const NodeProto &node,
                            std::initializer_list<const char *> known) {
  for (const AttributeProto &a : node.attribute()) {
    bool ok = false;
    for (const char *k : known)
      ok |= a.name() == k;
    if (!ok)
      throw Failure(where(node) + ": attribute '" + a.name() +
                    "' is not supported");
  }
}

/// A conv's or pool's pads as tg takes them, [height, width], both sides
/// alike.
std::vector<int64_t> Translator::poolPads(const NodeProto &node,
                                          const std::string &at) {
  if (const AttributeProto *a = attr(node, "auto_pad"))
    if (a->s() != "NOTSET")
      throw Failure(at + ": auto_pad " + a->s() +
                    " (export with explicit pads)");
  std::vector<int64_t> pads = attrInts(node, "pads");
  if (pads.empty())
    return {0, 0};
  if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
    throw Failure(at + ": pads " + shapeText(pads) +
                  " differ between the sides (tgc pads both alike)");
  return {pads[0], pads[1]};
}

std::vector<int64_t> Translator::constInts(const NodeProto &node, int i,
                                           const std::string &what) {
  return constant(input(node, i), where(node) + " (" + what + ")").integers();
}

std::string Translator::emit(const std::string &name, const std::string &op,
                             const std::vector<std::string> &inputs,
                             const std::string &output, Json attrs) {
  // Node names are unique in the model file's diagnostics: a node that
  // becomes several tg ops names the later ones after its output.
  std::string unique = name;
  for (int n = 1; !emittedNames_.insert(unique).second; ++n)
    unique = name + "." + std::to_string(n);
  Json node = {
      {"name", unique}, {"op", op}, {"inputs", inputs}, {"outputs", {output}}};
  if (!attrs.empty())
    node["attrs"] = attrs;
  nodes_.push_back(node);
  ++result_.nodes;
  return output;
}

Json intsAttr(const std::string &name, const std::vector<int64_t> &v) {
  return {{"name", name}, {"ints", v}};
}
Json intAttr(const std::string &name, int64_t v) {
  return {{"name", name}, {"i", v}};
}
Json floatAttr(const std::string &name, double v) {
  return {{"name", name}, {"f", v}};
}
Json strAttr(const std::string &name, const std::string &v) {
  return {{"name", name}, {"s", v}};
}
Json boolAttr(const std::string &name, bool v) {
  return {{"name", name}, {"b", v}};
}

/// Evaluates `node` when its inputs are constants and its op is one of the
/// shape-and-index ops exports compute with; returns whether it did.
bool Translator::fold(const NodeProto &node) {
  const std::string &op = node.op_type();
  std::string at = where(node);
  if (op == "Constant") {
    Const c;
    if (const AttributeProto *a = attr(node, "value")) {
      c = constOf(a->t(), at);
    } else if (const AttributeProto *a = attr(node, "value_float")) {
      c.data = {a->f()};
    } else if (const AttributeProto *a = attr(node, "value_int")) {
      c.type = TensorProto::INT64;
      c.data = {static_cast<double>(a->i())};
    } else if (const AttributeProto *a = attr(node, "value_ints")) {
      c.type = TensorProto::INT64;
      for (int64_t v : a->ints())
        c.data.push_back(static_cast<double>(v));
      c.shape = {static_cast<int64_t>(c.data.size())};
    } else if (const AttributeProto *a = attr(node, "value_floats")) {
      c.data.assign(a->floats().begin(), a->floats().end());
      c.shape = {static_cast<int64_t>(c.data.size())};
    } else {
      throw Failure(at + ": a Constant without a value, value_float, "
                         "value_int, value_ints or value_floats");
    }
    consts_[node.output(0)] = c;
    return true;
  }
  if (op == "Shape") {
    // The static shape of any value, computed or not.
    const ValueInfo &in = info(input(node, 0), at);
    int64_t rank = in.shape.size();
    int64_t start = attrInt(node, "start", 0), end = attrInt(node, "end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    Const c;
    c.type = TensorProto::INT64;
    for (int64_t d = start; d < end; ++d)
      c.data.push_back(static_cast<double>(in.shape[d]));
    c.shape = {static_cast<int64_t>(c.data.size())};
    consts_[node.output(0)] = c;
    return true;
  }
  if (op == "Size") {
    Const c;
    c.type = TensorProto::INT64;
    c.data = {static_cast<double>(product(info(input(node, 0), at).shape))};
    consts_[node.output(0)] = c;
    return true;
  }
  static const std::set<std::string> foldable = {"Identity",
                                                 "Gather",
                                                 "Unsqueeze",
                                                 "Squeeze",
                                                 "Concat",
                                                 "Cast",
                                                 "Reshape",
                                                 "Slice",
                                                 "Add",
                                                 "Sub",
                                                 "Mul",
                                                 "Div",
                                                 "Pow",
                                                 "Neg",
                                                 "Sqrt",
                                                 "Equal",
                                                 "Less",
                                                 "Greater",
                                                 "LessOrEqual",
                                                 "GreaterOrEqual",
                                                 "Not",
                                                 "And",
                                                 "Or",
                                                 "Where",
                                                 "Range",
                                                 "Expand",
                                                 "Transpose",
                                                 "Trilu",
                                                 "ConstantOfShape",
                                                 "Floor",
                                                 "Ceil",
                                                 "Min",
                                                 "Max",
                                                 "Flatten",
                                                 "Reciprocal",
                                                 "Exp",
                                                 "Log",
                                                 "Sin",
                                                 "Cos",
                                                 "Abs"};
  if (!foldable.count(op))
    return false;
  for (int i = 0; i < node.input_size(); ++i) {
    auto alias = aliases_.find(node.input(i));
    std::string value = alias == aliases_.end() ? node.input(i) : alias->second;
    if (!value.empty() && !isConst(value))
      return false;
  }
  auto in = [&](int i) -> const Const & {
    return constant(input(node, i), at);
  };
  const std::string &out = node.output(0);
  Const r;
  // Outputs whose shape the translation computes itself take ONNX's
  // inferred one when it is there (it agrees).
  if (op == "Identity") {
    r = in(0);
  } else if (op == "ConstantOfShape") {
    r.shape = in(0).integers();
    double value = 0;
    r.type = TensorProto::FLOAT;
    if (const AttributeProto *a = attr(node, "value")) {
      Const v = constOf(a->t(), at);
      r.type = v.type;
      value = v.data.empty() ? 0 : v.data[0];
    }
    r.data.assign(product(r.shape), value);
  } else if (op == "Range") {
    double start = in(0).data[0], limit = in(1).data[0], delta = in(2).data[0];
    r.type = in(0).type;
    if (delta == 0)
      throw Failure(at + ": Range with delta 0");
    for (double v = start; delta > 0 ? v < limit : v > limit; v += delta)
      r.data.push_back(v);
    r.shape = {static_cast<int64_t>(r.data.size())};
  } else if (op == "Cast") {
    r = in(0);
    r.type = static_cast<int>(attrInt(node, "to", TensorProto::FLOAT));
    if (isIntType(r.type))
      for (double &v : r.data)
        v = std::trunc(v);
    if (r.type == TensorProto::BOOL)
      for (double &v : r.data)
        v = v != 0;
  } else if (op == "Reshape") {
    r = in(0);
    std::vector<int64_t> target = in(1).integers();
    bool allowZero = attrInt(node, "allowzero", 0) != 0;
    int64_t known = 1, unknown = -1;
    for (size_t d = 0; d < target.size(); ++d) {
      if (target[d] == 0 && !allowZero && d < r.shape.size())
        target[d] = r.shape[d];
      if (target[d] == -1)
        unknown = d;
      else
        known *= target[d];
    }
    if (unknown >= 0)
      target[unknown] = known ? r.size() / known : 0;
    if (product(target) != r.size())
      throw Failure(at + ": reshapes " + shapeText(r.shape) + " to " +
                    shapeText(target));
    r.shape = target;
  } else if (op == "Unsqueeze") {
    r = in(0);
    std::vector<int64_t> axes = in(1).integers();
    int64_t rank = r.shape.size() + axes.size();
    for (int64_t &a : axes)
      a = normalizeAxis(a, rank, at);
    std::sort(axes.begin(), axes.end());
    for (int64_t a : axes)
      r.shape.insert(r.shape.begin() + a, 1);
  } else if (op == "Squeeze") {
    r = in(0);
    int64_t rank = r.shape.size();
    std::vector<int64_t> axes;
    if (!input(node, 1).empty())
      axes = in(1).integers();
    std::vector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d) {
      bool drop = axes.empty() ? r.shape[d] == 1 : false;
      for (int64_t a : axes)
        drop |= normalizeAxis(a, rank, at) == d;
      if (!drop)
        shape.push_back(r.shape[d]);
    }
    r.shape = shape;
  } else if (op == "Flatten") {
    r = in(0);
    int64_t rank = r.shape.size();
    int64_t axis = normalizeAxis(attrInt(node, "axis", 1), rank + 1, at);
    r.shape = {product({r.shape.begin(), r.shape.begin() + axis}),
               product({r.shape.begin() + axis, r.shape.end()})};
  } else if (op == "Gather") {
    const Const &data = in(0), &idx = in(1);
    int64_t rank = data.shape.size();
    int64_t axis = normalizeAxis(attrInt(node, "axis", 0), rank, at);
    r.type = data.type;
    r.shape.assign(data.shape.begin(), data.shape.begin() + axis);
    r.shape.insert(r.shape.end(), idx.shape.begin(), idx.shape.end());
    r.shape.insert(r.shape.end(), data.shape.begin() + axis + 1,
                   data.shape.end());
    int64_t outer = product({data.shape.begin(), data.shape.begin() + axis});
    int64_t inner = product({data.shape.begin() + axis + 1, data.shape.end()});
    int64_t n = data.shape[axis];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < idx.size(); ++k) {
        int64_t j = idx.integer(k);
        if (j < 0)
          j += n;
        if (j < 0 || j >= n)
          throw Failure(at + ": index " + std::to_string(idx.integer(k)) +
                        " out of range for a dim of " + std::to_string(n));
        for (int64_t i = 0; i < inner; ++i)
          r.data.push_back(data.data[(o * n + j) * inner + i]);
      }
  } else if (op == "Concat") {
    const Const &first = in(0);
    int64_t rank = first.shape.size();
    int64_t axis = normalizeAxis(attrInt(node, "axis", 0), rank, at);
    r.type = first.type;
    r.shape = first.shape;
    r.shape[axis] = 0;
    for (int i = 0; i < node.input_size(); ++i)
      r.shape[axis] += in(i).shape[axis];
    int64_t outer = product({first.shape.begin(), first.shape.begin() + axis});
    for (int64_t o = 0; o < outer; ++o)
      for (int i = 0; i < node.input_size(); ++i) {
        const Const &part = in(i);
        int64_t chunk = product({part.shape.begin() + axis, part.shape.end()});
        r.data.insert(r.data.end(), part.data.begin() + o * chunk,
                      part.data.begin() + (o + 1) * chunk);
      }
  } else if (op == "Slice") {
    const Const &data = in(0);
    int64_t rank = data.shape.size();
    std::vector<int64_t> starts = in(1).integers(), ends = in(2).integers();
    std::vector<int64_t> axes(starts.size()), steps(starts.size(), 1);
    std::iota(axes.begin(), axes.end(), 0);
    if (!input(node, 3).empty())
      axes = in(3).integers();
    if (!input(node, 4).empty())
      steps = in(4).integers();
    std::vector<int64_t> lo(rank, 0), step(rank, 1), shape = data.shape;
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t a = normalizeAxis(axes[k], rank, at), n = data.shape[a];
      if (steps[k] <= 0)
        return false;
      int64_t s = starts[k] < 0 ? starts[k] + n : starts[k];
      int64_t e = ends[k] < 0 ? ends[k] + n : ends[k];
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      lo[a] = s;
      step[a] = steps[k];
      shape[a] = e > s ? (e - s + steps[k] - 1) / steps[k] : 0;
    }
    r.type = data.type;
    r.shape = shape;
    std::vector<int64_t> strides = stridesOf(data.shape),
                         outStrides = stridesOf(shape);
    // Row by row: the innermost dim is a run (or a strided run) of the
    // input's.
    int64_t inner = rank ? shape[rank - 1] : 1;
    r.data.reserve(product(shape));
    for (int64_t row = 0; row < product(shape) / std::max<int64_t>(inner, 1);
         ++row) {
      int64_t f = row * inner, index = 0;
      for (int64_t d = 0; d + 1 < rank; ++d)
        index +=
            (lo[d] + ((f / outStrides[d]) % shape[d]) * step[d]) * strides[d];
      if (rank)
        index += lo[rank - 1];
      for (int64_t i = 0; i < inner; ++i)
        r.data.push_back(data.data[index + i * (rank ? step[rank - 1] : 1)]);
    }
  } else if (op == "Transpose") {
    const Const &data = in(0);
    int64_t rank = data.shape.size();
    std::vector<int64_t> perm = attrInts(node, "perm");
    if (perm.empty())
      for (int64_t d = rank - 1; d >= 0; --d)
        perm.push_back(d);
    r.type = data.type;
    for (int64_t p : perm)
      r.shape.push_back(data.shape[p]);
    std::vector<int64_t> strides = stridesOf(data.shape),
                         outStrides = stridesOf(r.shape);
    for (int64_t f = 0; f < data.size(); ++f) {
      int64_t index = 0;
      for (int64_t d = 0; d < rank; ++d)
        index += ((f / outStrides[d]) % r.shape[d]) * strides[perm[d]];
      r.data.push_back(data.data[index]);
    }
  } else if (op == "Expand") {
    const Const &data = in(0);
    r.type = data.type;
    r.shape = broadcastShapes(data.shape, in(1).integers(), at);
    Broadcast from(r.shape, data.shape);
    for (int64_t f = 0; f < product(r.shape); ++f)
      r.data.push_back(data.data[from(f)]);
  } else if (op == "Trilu") {
    const Const &data = in(0);
    int64_t k = input(node, 1).empty() ? 0 : in(1).integer(0);
    bool upper = attrInt(node, "upper", 1) != 0;
    r = data;
    int64_t rows = data.shape[data.shape.size() - 2], cols = data.shape.back();
    for (int64_t f = 0; f < r.size(); ++f) {
      int64_t i = (f / cols) % rows, j = f % cols;
      bool keep = upper ? j - i >= k : j - i <= k;
      if (!keep)
        r.data[f] = 0;
    }
  } else if (op == "Where") {
    const Const &c = in(0), &a = in(1), &b = in(2);
    r.type = a.type;
    r.shape =
        broadcastShapes(broadcastShapes(c.shape, a.shape, at), b.shape, at);
    Broadcast fromC(r.shape, c.shape), fromA(r.shape, a.shape),
        fromB(r.shape, b.shape);
    for (int64_t f = 0; f < product(r.shape); ++f)
      r.data.push_back(c.data[fromC(f)] != 0 ? a.data[fromA(f)]
                                             : b.data[fromB(f)]);
  } else if (node.input_size() == 1 || op == "Not") {
    const Const &a = in(0);
    r = a;
    std::function<double(double)> f;
    if (op == "Neg")
      f = [](double v) { return -v; };
    else if (op == "Sqrt")
      f = [](double v) { return std::sqrt(v); };
    else if (op == "Not")
      f = [](double v) { return double(v == 0); };
    else if (op == "Floor")
      f = [](double v) { return std::floor(v); };
    else if (op == "Ceil")
      f = [](double v) { return std::ceil(v); };
    else if (op == "Reciprocal")
      f = [](double v) { return 1 / v; };
    else if (op == "Exp")
      f = [](double v) { return std::exp(v); };
    else if (op == "Log")
      f = [](double v) { return std::log(v); };
    else if (op == "Sin")
      f = [](double v) { return std::sin(v); };
    else if (op == "Cos")
      f = [](double v) { return std::cos(v); };
    else if (op == "Abs")
      f = [](double v) { return std::fabs(v); };
    else if (op == "Min" || op == "Max")
      f = [](double v) { return v; };
    else
      return false;
    for (double &v : r.data)
      v = f(v);
    if (op == "Not")
      r.type = TensorProto::BOOL;
  } else {
    const Const &a = in(0), &b = in(1);
    r.shape = broadcastShapes(a.shape, b.shape, at);
    r.type = a.type;
    bool compare = op == "Equal" || op == "Less" || op == "Greater" ||
                   op == "LessOrEqual" || op == "GreaterOrEqual";
    if (compare || op == "And" || op == "Or")
      r.type = TensorProto::BOOL;
    bool integer = isIntType(a.type);
    Broadcast fromA(r.shape, a.shape), fromB(r.shape, b.shape);
    for (int64_t f = 0; f < product(r.shape); ++f) {
      double x = a.data[fromA(f)];
      double y = b.data[fromB(f)];
      double v;
      if (op == "Add")
        v = x + y;
      else if (op == "Sub")
        v = x - y;
      else if (op == "Mul")
        v = x * y;
      else if (op == "Div")
        v = integer ? std::trunc(x / y) : x / y;
      else if (op == "Pow")
        v = std::pow(x, y);
      else if (op == "Equal")
        v = x == y;
      else if (op == "Less")
        v = x < y;
      else if (op == "Greater")
        v = x > y;
      else if (op == "LessOrEqual")
        v = x <= y;
      else if (op == "GreaterOrEqual")
        v = x >= y;
      else if (op == "And")
        v = x != 0 && y != 0;
      else if (op == "Or")
        v = x != 0 || y != 0;
      else if (op == "Min")
        v = std::min(x, y);
      else if (op == "Max")
        v = std::max(x, y);
      else
        return false;
      if (a.type == TensorProto::FLOAT && !compare)
        v = static_cast<float>(v);
      r.data.push_back(v);
    }
  }
  if (r.size() > kMaxConstantElements)
    throw Failure(at + ": folds to a constant of " + std::to_string(r.size()) +
                  " elements (at most " + std::to_string(kMaxConstantElements) +
                  ")");
  consts_[out] = std::move(r);
  return true;
}

/// A Constant node holding `c`, standing for the node that computed it.
NodeProto constantNode(const std::string &output, const Const &c) {
  NodeProto node;
  node.set_op_type("Constant");
  node.set_name(output + ".folded");
  node.add_output(output);
  AttributeProto *value = node.add_attribute();
  value->set_name("value");
  value->set_type(AttributeProto::TENSOR);
  TensorProto *t = value->mutable_t();
  for (int64_t d : c.shape)
    t->add_dims(d);
  if (isFloatType(c.type)) {
    t->set_data_type(TensorProto::FLOAT);
    for (double v : c.data)
      t->add_float_data(static_cast<float>(v));
  } else if (c.type == TensorProto::BOOL) {
    t->set_data_type(TensorProto::BOOL);
    for (double v : c.data)
      t->add_int32_data(v != 0);
  } else {
    t->set_data_type(TensorProto::INT64);
    for (size_t i = 0; i < c.data.size(); ++i)
      t->add_int64_data(c.integer(i));
  }
  return node;
}

/// Folds what is known at compile time into Constant nodes and infers the
/// shapes again, until nothing more folds: ONNX's shape inference stops at
/// a shape computed from other shapes (Shape -> ... -> Expand), which a
/// Constant in its place lets it through.
void Translator::foldGraph() {
  for (int round = 0; round < 16; ++round) {
    bool folded = false;
    auto *nodes = model_.mutable_graph()->mutable_node();
    for (int i = 0; i < nodes->size(); ++i) {
      NodeProto &node = *nodes->Mutable(i);
      if (node.output_size() != 1 || consts_.count(node.output(0)))
        continue;
      if (node.op_type() == "Constant") {
        fold(node);
        continue;
      }
      bool done = false;
      try {
        done = fold(node);
      } catch (const Failure &) {
        // Not yet (a shape still unknown); the translation tries again.
      }
      if (!done)
        continue;
      // A float folded from half or double stays as the model had it.
      // Only shapes, indices and scalars need a Constant for shape
      // inference (a folded mask's shape follows from its inputs).
      const Const &c = consts_.at(node.output(0));
      if ((c.type != TensorProto::FLOAT && isFloatType(c.type)) ||
          c.size() > kMaxShapeConstant)
        continue;
      node = constantNode(node.output(0), c);
      folded = true;
    }
    if (!folded)
      return;
    inferShapes();
  }
}

/// Finds x * 0.5 * (1 + erf(x / sqrt 2)) (F.gelu's export, its products in
/// any order): tg has no erf, but the whole is tg.gelu. An Erf elsewhere
/// stays, and is refused.
void Translator::raiseErfGelu() {
  std::map<std::string, std::vector<const NodeProto *>> users;
  for (const NodeProto &node : model_.graph().node())
    for (const std::string &in : node.input())
      users[in].push_back(&node);
  auto only = [&](const std::string &value) -> const NodeProto * {
    auto it = users.find(value);
    return it != users.end() && it->second.size() == 1 ? it->second[0]
                                                       : nullptr;
  };
  auto splat = [&](const std::string &value) -> std::optional<double> {
    auto it = consts_.find(value);
    if (it == consts_.end() || it->second.data.empty())
      return std::nullopt;
    for (double v : it->second.data)
      if (v != it->second.data[0])
        return std::nullopt;
    return it->second.data[0];
  };
  auto near = [](double a, double b) {
    return std::fabs(a - b) <= 1e-6 * std::fabs(b);
  };
  // The other operand of a binary node whose one operand is `value`.
  auto other = [](const NodeProto &node, const std::string &value) {
    return node.input(0) == value ? node.input(1) : node.input(0);
  };
  for (const NodeProto &erf : model_.graph().node()) {
    if (erf.op_type() != "Erf")
      continue;
    auto p = producer_.find(erf.input(0));
    if (p == producer_.end() || uses_[erf.input(0)] != 1)
      continue;
    const NodeProto &scale = *p->second;
    std::string x;
    if (scale.op_type() == "Div" && splat(scale.input(1)) &&
        near(*splat(scale.input(1)), std::sqrt(2.0)))
      x = scale.input(0);
    else if (scale.op_type() == "Mul" && splat(other(scale, scale.input(0))) &&
             near(*splat(other(scale, scale.input(0))), std::sqrt(0.5)))
      x = scale.input(0);
    else if (scale.op_type() == "Mul" && splat(scale.input(0)) &&
             near(*splat(scale.input(0)), std::sqrt(0.5)))
      x = scale.input(1);
    if (x.empty())
      continue;
    const NodeProto *plus = only(erf.output(0));
    if (!plus || plus->op_type() != "Add" ||
        !splat(other(*plus, erf.output(0))) ||
        !near(*splat(other(*plus, erf.output(0))), 1.0))
      continue;
    // Then x * (1 + erf) and a half, or (0.5 * x) * (1 + erf).
    const NodeProto *product = only(plus->output(0));
    if (!product || product->op_type() != "Mul")
      continue;
    std::string factor = other(*product, plus->output(0));
    const NodeProto *last = nullptr, *halved = nullptr;
    if (factor == x) {
      last = only(product->output(0));
      if (!last || last->op_type() != "Mul" ||
          !splat(other(*last, product->output(0))) ||
          !near(*splat(other(*last, product->output(0))), 0.5))
        continue;
    } else {
      auto h = producer_.find(factor);
      if (h == producer_.end() || h->second->op_type() != "Mul" ||
          uses_[factor] != 1)
        continue;
      halved = h->second;
      if (other(*halved, x) == x || !splat(other(*halved, x)) ||
          !near(*splat(other(*halved, x)), 0.5) ||
          (halved->input(0) != x && halved->input(1) != x))
        continue;
      last = product;
    }
    raised_.insert(&scale);
    raised_.insert(&erf);
    raised_.insert(plus);
    if (last != product)
      raised_.insert(product);
    if (halved)
      raised_.insert(halved);
    erfGelu_[last->output(0)] = x;
  }
}

const std::vector<std::string> &supportedOpList() {
  // clang-format off
  static const std::vector<std::string> ops = {
      "Abs", "Add", "And", "AveragePool", "BatchNormalization", "Cast",
      "Ceil", "Concat", "Constant", "ConstantOfShape", "Conv", "Cos", "Div",
      "Dropout", "Equal", "Exp", "Expand", "Flatten", "Floor", "Gather",
      "Gemm", "GlobalAveragePool", "Greater", "GreaterOrEqual", "Identity",
      "LayerNormalization", "Less", "LessOrEqual", "Log", "LogSoftmax",
      "MatMul", "Max", "MaxPool", "Min", "Mul", "Neg",
      "NegativeLogLikelihoodLoss", "Not", "Or", "Pow", "Range", "Reciprocal",
      "ReduceMax", "ReduceMean", "ReduceSum", "Relu", "Reshape", "Shape",
      "Sigmoid", "Sin", "Size", "Slice", "Softmax", "SoftmaxCrossEntropyLoss",
      "Split", "Sqrt", "Squeeze", "Sub", "Tanh", "Transpose", "Trilu",
      "Unsqueeze", "Where"};
  // clang-format on
  return ops;
}

std::string joinOps() {
  std::string text;
  for (const std::string &op : supportedOpList())
    text += (text.empty() ? "" : ", ") + op;
  return text;
}

void Translator::translate(const NodeProto &node) {
  if (fold(node))
    return;
  const std::string &op = node.op_type();
  std::string at = where(node);
  std::string name =
      dottedName(node.name().empty() ? node.output(0) : node.name());
  const std::string out = node.output_size() ? node.output(0) : "";
  auto in = [&](int i) { return use(input(node, i), at); };
  auto outShape = [&](const std::string &value) {
    return info(value, at).shape;
  };
  auto inType = [&](int i) { return info(input(node, i), at).type; };
  // The same element type for every operand: constants follow the first
  // value computed at run time.
  auto operands = [&](int count) {
    int type = 0;
    for (int i = 0; i < count && !type; ++i)
      if (!isConst(input(node, i)))
        type = inType(i);
    std::vector<std::string> names;
    for (int i = 0; i < count; ++i)
      names.push_back(type ? useAs(input(node, i), type, at) : in(i));
    return names;
  };
  for (int i = 1; i < node.output_size(); ++i)
    if (!node.output(i).empty() && uses_[node.output(i)] > 0 && op != "Split")
      throw Failure(at + ": output " + std::to_string(i) + " ('" +
                    node.output(i) + "') is read, which tgc does not compute");

  static const std::map<std::string, std::string> binary = {
      {"Add", "add"}, {"Sub", "sub"},     {"Mul", "mul"},    {"Div", "div"},
      {"Pow", "pow"}, {"Max", "maximum"}, {"Min", "minimum"}};
  static const std::map<std::string, std::string> unary = {
      {"Sqrt", "sqrt"}, {"Exp", "exp"},   {"Log", "log"},
      {"Tanh", "tanh"}, {"Relu", "relu"}, {"Sigmoid", "sigmoid"},
      {"Neg", "neg"},   {"Abs", "abs"},   {"Sin", "sin"},
      {"Cos", "cos"}};
  static const std::map<std::string, std::string> compares = {
      {"Equal", "eq"},
      {"Less", "lt"},
      {"Greater", "gt"},
      {"LessOrEqual", "le"},
      {"GreaterOrEqual", "ge"}};
  if (binary.count(op)) {
    checkAttrs(node, {});
    if (node.input_size() != 2)
      throw Failure(at + ": tgc takes it with 2 inputs");
    emit(name, binary.at(op), operands(2), out);
    return;
  }
  if (unary.count(op)) {
    checkAttrs(node, {});
    emit(name, unary.at(op), {in(0)}, out);
    return;
  }
  if (compares.count(op)) {
    checkAttrs(node, {});
    emit(name, "compare", operands(2), out,
         {strAttr("predicate", compares.at(op))});
    return;
  }
  if (op == "Identity") {
    aliases_[out] = input(node, 0);
    return;
  }
  if (op == "Not") {
    Const f;
    f.type = TensorProto::BOOL;
    f.data = {0};
    consts_[out + ".false"] = f;
    emit(name, "compare", {in(0), use(out + ".false", at)}, out,
         {strAttr("predicate", "eq")});
    return;
  }
  if (op == "Reciprocal") {
    Const one;
    one.type = inType(0);
    one.data = {1};
    consts_[out + ".one"] = one;
    emit(name, "div", {use(out + ".one", at), in(0)}, out);
    return;
  }
  if (op == "Softmax" || op == "LogSoftmax") {
    checkAttrs(node, {"axis"});
    emit(name, op == "Softmax" ? "softmax" : "log_softmax", {in(0)}, out,
         {intAttr("axis", attrInt(node, "axis", -1))});
    return;
  }
  if (op == "MatMul") {
    checkAttrs(node, {});
    if (outShape(input(node, 0)).size() < 2 ||
        outShape(input(node, 1)).size() < 2)
      throw Failure(at + ": a MatMul of a 1-D operand (tgc takes rank >= 2)");
    std::string rhs = input(node, 1);
    auto t = transposedRhs_.find(rhs);
    if (t != transposedRhs_.end()) {
      emit(name, "matmul", {in(0), use(t->second, at)}, out,
           {boolAttr("transpose_rhs", true)});
      return;
    }
    emit(name, "matmul", operands(2), out);
    return;
  }
  if (op == "Gemm") {
    checkAttrs(node, {"alpha", "beta", "transA", "transB"});
    double alpha = attrFloat(node, "alpha", 1),
           beta = attrFloat(node, "beta", 1);
    Json attrs = Json::array();
    if (attrInt(node, "transA", 0))
      attrs.push_back(boolAttr("transpose_lhs", true));
    if (attrInt(node, "transB", 0))
      attrs.push_back(boolAttr("transpose_rhs", true));
    std::vector<std::string> ab = operands(2);
    bool more = alpha != 1 || !input(node, 2).empty();
    std::string product = emit(name + (more ? ".matmul" : ""), "matmul", ab,
                               more ? out + ".matmul" : out, attrs);
    if (alpha != 1) {
      Const a;
      a.type = inType(0);
      a.data = {alpha};
      consts_[out + ".alpha"] = a;
      product = emit(name + ".alpha", "mul", {product, use(out + ".alpha", at)},
                     input(node, 2).empty() ? out : out + ".scaled");
    }
    if (!input(node, 2).empty()) {
      std::string c = useAs(input(node, 2), inType(0), at);
      if (beta != 1) {
        Const b;
        b.type = inType(0);
        b.data = {beta};
        consts_[out + ".beta"] = b;
        c = emit(name + ".beta", "mul", {c, use(out + ".beta", at)},
                 out + ".bias");
      }
      emit(name, "add", {product, c}, out);
    }
    return;
  }
  if (op == "LayerNormalization") {
    checkAttrs(node, {"axis", "epsilon", "stash_type"});
    int64_t rank = outShape(input(node, 0)).size();
    if (normalizeAxis(attrInt(node, "axis", -1), rank, at) != rank - 1)
      throw Failure(at + ": normalizes from axis " +
                    std::to_string(attrInt(node, "axis", -1)) +
                    " (tgc's layer_norm takes the last axis)");
    std::vector<std::string> ins = {in(0)};
    for (int i = 1; i < node.input_size() && !input(node, i).empty(); ++i)
      ins.push_back(useAs(input(node, i), inType(0), at));
    emit(name, "layer_norm", ins, out,
         {floatAttr("eps", attrFloat(node, "epsilon", 1e-5))});
    return;
  }
  if (op == "Gather") {
    checkAttrs(node, {"axis"});
    std::vector<int64_t> data = outShape(input(node, 0));
    int64_t axis = normalizeAxis(attrInt(node, "axis", 0), data.size(), at);
    if (!isConst(input(node, 1))) {
      if (axis != 0 || data.size() != 2)
        throw Failure(at + ": gathers rows of a rank-" +
                      std::to_string(data.size()) + " tensor along axis " +
                      std::to_string(axis) +
                      " by computed indices (tgc's embedding takes rows "
                      "of a 2-D table)");
      emit(name, "embedding", {in(0), in(1)}, out);
      return;
    }
    // Constant indices: slices of the data, joined.
    const Const &idx = constant(input(node, 1), at);
    std::vector<std::string> parts;
    for (int64_t k = 0; k < idx.size(); ++k) {
      int64_t j = idx.integer(k);
      if (j < 0)
        j += data[axis];
      std::vector<int64_t> start(data.size(), 0), limit = data;
      start[axis] = j;
      limit[axis] = j + 1;
      parts.push_back(emit(
          name + ".slice", "slice", {in(0)}, out + ".part" + std::to_string(k),
          {intsAttr("start", start), intsAttr("limit", limit)}));
    }
    std::string joined = parts[0];
    if (parts.size() > 1)
      joined = emit(name + ".concat", "concat", parts, out + ".parts",
                    {intAttr("axis", axis)});
    emit(name, "reshape", {joined}, out, {intsAttr("shape", outShape(out))});
    return;
  }
  if (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" ||
      op == "Flatten") {
    checkAttrs(node, {"allowzero", "axis", "axes"});
    emit(name, "reshape", {in(0)}, out, {intsAttr("shape", outShape(out))});
    return;
  }
  if (op == "Transpose") {
    checkAttrs(node, {"perm"});
    std::vector<int64_t> perm = attrInts(node, "perm");
    int64_t rank = outShape(input(node, 0)).size();
    if (perm.empty())
      for (int64_t d = rank - 1; d >= 0; --d)
        perm.push_back(d);
    emit(name, "transpose", {in(0)}, out, {intsAttr("perm", perm)});
    return;
  }
  if (op == "Concat") {
    checkAttrs(node, {"axis"});
    int64_t rank = outShape(out).size();
    std::vector<std::string> ins = operands(node.input_size());
    emit(name, "concat", ins, out,
         {intAttr("axis", normalizeAxis(attrInt(node, "axis", 0), rank, at))});
    return;
  }
  if (op == "Slice") {
    checkAttrs(node, {});
    std::vector<int64_t> shape = outShape(input(node, 0));
    int64_t rank = shape.size();
    std::vector<int64_t> starts = constInts(node, 1, "starts"),
                         ends = constInts(node, 2, "ends");
    std::vector<int64_t> axes(starts.size()), steps(starts.size(), 1);
    std::iota(axes.begin(), axes.end(), 0);
    if (!input(node, 3).empty())
      axes = constInts(node, 3, "axes");
    if (!input(node, 4).empty())
      steps = constInts(node, 4, "steps");
    std::vector<int64_t> start(rank, 0), limit = shape, stride(rank, 1);
    for (size_t k = 0; k < axes.size(); ++k) {
      int64_t a = normalizeAxis(axes[k], rank, at), n = shape[a];
      if (steps[k] <= 0)
        throw Failure(at + ": a step of " + std::to_string(steps[k]) +
                      " (tgc slices forwards)");
      int64_t s = starts[k] < 0 ? starts[k] + n : starts[k];
      int64_t e = ends[k] < 0 ? ends[k] + n : ends[k];
      start[a] = std::clamp<int64_t>(s, 0, n);
      limit[a] = std::clamp<int64_t>(e, start[a], n);
      stride[a] = steps[k];
    }
    Json attrs = {intsAttr("start", start), intsAttr("limit", limit)};
    if (std::any_of(stride.begin(), stride.end(),
                    [](int64_t s) { return s != 1; }))
      attrs.push_back(intsAttr("stride", stride));
    emit(name, "slice", {in(0)}, out, attrs);
    return;
  }
  if (op == "Split") {
    checkAttrs(node, {"axis", "num_outputs"});
    std::vector<int64_t> shape = outShape(input(node, 0));
    int64_t rank = shape.size();
    int64_t axis = normalizeAxis(attrInt(node, "axis", 0), rank, at);
    int64_t offset = 0;
    for (int i = 0; i < node.output_size(); ++i) {
      int64_t size = outShape(node.output(i))[axis];
      std::vector<int64_t> start(rank, 0), limit = shape;
      start[axis] = offset;
      limit[axis] = offset + size;
      offset += size;
      if (uses_[node.output(i)] == 0)
        continue;
      emit(name, "slice", {in(0)}, node.output(i),
           {intsAttr("start", start), intsAttr("limit", limit)});
    }
    return;
  }
  if (op == "Expand") {
    checkAttrs(node, {});
    emit(name, "broadcast_to", {in(0)}, out,
         {intsAttr("shape", outShape(out))});
    return;
  }
  if (op == "Where") {
    checkAttrs(node, {});
    int type = isConst(input(node, 1)) ? inType(2) : inType(1);
    emit(name, "select",
         {in(0), useAs(input(node, 1), type, at),
          useAs(input(node, 2), type, at)},
         out);
    return;
  }
  if (op == "Cast") {
    checkAttrs(node, {"to", "saturate"});
    int to = static_cast<int>(attrInt(node, "to", 0));
    std::string dtype = dtypeName(to);
    if (dtype.empty())
      throw Failure(at + ": a cast to " + typeName(to) + " (no tg dtype)");
    if (to == inType(0)) {
      aliases_[out] = input(node, 0);
      return;
    }
    emit(name, "cast", {in(0)}, out, {strAttr("dtype", dtype)});
    return;
  }
  if (op == "ReduceMean" || op == "ReduceSum" || op == "ReduceMax") {
    checkAttrs(node, {"axes", "keepdims", "noop_with_empty_axes"});
    int64_t rank = outShape(input(node, 0)).size();
    std::vector<int64_t> axes = attrInts(node, "axes");
    if (op == "ReduceSum" && !input(node, 1).empty())
      axes = constInts(node, 1, "axes");
    if (axes.empty() && attrInt(node, "noop_with_empty_axes", 0)) {
      aliases_[out] = input(node, 0);
      return;
    }
    if (axes.empty())
      for (int64_t d = 0; d < rank; ++d)
        axes.push_back(d);
    for (int64_t &a : axes)
      a = normalizeAxis(a, rank, at);
    std::sort(axes.begin(), axes.end());
    std::string kind = op == "ReduceMean"  ? "reduce_mean"
                       : op == "ReduceSum" ? "reduce_sum"
                                           : "reduce_max";
    emit(name, kind, {in(0)}, out,
         {intsAttr("dims", axes),
          boolAttr("keepdim", attrInt(node, "keepdims", 1) != 0)});
    return;
  }
  if (op == "Dropout") {
    checkAttrs(node, {"seed"});
    double ratio = 0.5;
    if (!input(node, 1).empty())
      ratio = constant(input(node, 1), at + " (ratio)").data.at(0);
    bool training =
        !input(node, 2).empty() &&
        constant(input(node, 2), at + " (training_mode)").data.at(0);
    if (!training || ratio == 0) {
      aliases_[out] = input(node, 0);
      return;
    }
    emit(name, "dropout", {in(0)}, out, {floatAttr("p", ratio)});
    return;
  }
  if (op == "Conv") {
    checkAttrs(node, {"kernel_shape", "strides", "pads", "dilations", "group",
                      "auto_pad"});
    int64_t rank = outShape(input(node, 0)).size();
    if (rank != 4)
      throw Failure(at + ": a " + std::to_string(rank - 2) +
                    "-D convolution (tgc's conv2d is 2-D, NCHW)");
    std::vector<int64_t> pads = poolPads(node, at);
    std::vector<int64_t> strides = attrInts(node, "strides"),
                         dilations = attrInts(node, "dilations");
    Json attrs = {intsAttr("padding", pads)};
    if (!strides.empty())
      attrs.push_back(intsAttr("stride", strides));
    if (!dilations.empty())
      attrs.push_back(intsAttr("dilation", dilations));
    if (attrInt(node, "group", 1) != 1)
      attrs.push_back(intAttr("groups", attrInt(node, "group", 1)));
    std::vector<std::string> ins = {in(0),
                                    useAs(input(node, 1), inType(0), at)};
    if (!input(node, 2).empty())
      ins.push_back(useAs(input(node, 2), inType(0), at));
    emit(name, "conv2d", ins, out, attrs);
    return;
  }
  if (op == "MaxPool" || op == "AveragePool") {
    checkAttrs(node,
               {"kernel_shape", "strides", "pads", "ceil_mode", "dilations",
                "storage_order", "count_include_pad", "auto_pad"});
    std::vector<int64_t> kernel = attrInts(node, "kernel_shape"),
                         strides = attrInts(node, "strides");
    if (kernel.size() != 2)
      throw Failure(at + ": a " + std::to_string(kernel.size()) +
                    "-D pool (tgc pools 2-D, NCHW)");
    std::vector<int64_t> pads = poolPads(node, at);
    if (attrInt(node, "ceil_mode", 0))
      throw Failure(at + ": ceil_mode 1 (tgc's pools round the output "
                         "size down)");
    for (int64_t d : attrInts(node, "dilations"))
      if (d != 1)
        throw Failure(at + ": a dilated pool");
    if (op == "AveragePool" && attrInt(node, "count_include_pad", 0) &&
        (pads[0] || pads[1]))
      throw Failure(at + ": count_include_pad 1 with padding (tgc's "
                         "average divides by the unpadded elements)");
    Json attrs = {intsAttr("kernel_size", kernel), intsAttr("padding", pads)};
    if (!strides.empty())
      attrs.push_back(intsAttr("stride", strides));
    emit(name, op == "MaxPool" ? "max_pool2d" : "avg_pool2d", {in(0)}, out,
         attrs);
    return;
  }
  if (op == "GlobalAveragePool") {
    checkAttrs(node, {});
    int64_t rank = outShape(input(node, 0)).size();
    std::vector<int64_t> dims;
    for (int64_t d = 2; d < rank; ++d)
      dims.push_back(d);
    emit(name, "reduce_mean", {in(0)}, out,
         {intsAttr("dims", dims), boolAttr("keepdim", true)});
    return;
  }
  if (op == "BatchNormalization") {
    checkAttrs(node, {"epsilon", "momentum", "training_mode"});
    std::vector<int64_t> shape = outShape(input(node, 0));
    int64_t rank = shape.size();
    if (rank < 2)
      throw Failure(at + ": a batch norm of a rank-" + std::to_string(rank) +
                    " tensor");
    int type = inType(0);
    // Scale, bias and statistics [C] broadcast over [N, C, ...].
    std::vector<int64_t> channel(rank, 1);
    channel[1] = shape[1];
    auto perChannel = [&](int i, const std::string &what) {
      return emit(name + "." + what, "reshape",
                  {useAs(input(node, i), type, at)}, out + "." + what,
                  {intsAttr("shape", channel)});
    };
    std::vector<int64_t> dims = {0};
    for (int64_t d = 2; d < rank; ++d)
      dims.push_back(d);
    std::string centered, var;
    if (attrInt(node, "training_mode", 0)) {
      // The batch's statistics (its biased variance), as PyTorch
      // normalizes in training; the running ones are not kept.
      std::string mean =
          emit(name + ".mean", "reduce_mean", {in(0)}, out + ".mean",
               {intsAttr("dims", dims), boolAttr("keepdim", true)});
      centered =
          emit(name + ".centered", "sub", {in(0), mean}, out + ".centered");
      std::string square =
          emit(name + ".square", "mul", {centered, centered}, out + ".square");
      var = emit(name + ".var", "reduce_mean", {square}, out + ".var",
                 {intsAttr("dims", dims), boolAttr("keepdim", true)});
    } else {
      centered =
          emit(name + ".centered", "sub",
               {in(0), perChannel(3, "running_mean")}, out + ".centered");
      var = perChannel(4, "running_var");
    }
    Const eps;
    eps.type = type;
    eps.data = {attrFloat(node, "epsilon", 1e-5)};
    consts_[out + ".eps"] = eps;
    std::string shifted = emit(name + ".var_eps", "add",
                               {var, use(out + ".eps", at)}, out + ".var_eps");
    std::string rstd = emit(name + ".rstd", "rsqrt", {shifted}, out + ".rstd");
    std::string normed =
        emit(name + ".normed", "mul", {centered, rstd}, out + ".normed");
    std::string scaled =
        emit(name + ".scaled", "mul", {normed, perChannel(1, "scale")},
             out + ".scaled");
    emit(name, "add", {scaled, perChannel(2, "bias")}, out);
    return;
  }
  if (op == "SoftmaxCrossEntropyLoss" || op == "NegativeLogLikelihoodLoss") {
    checkAttrs(node, {"reduction", "ignore_index"});
    if (!input(node, 2).empty())
      throw Failure(at + ": class weights (input 2) are not supported");
    std::string logits = input(node, 0);
    if (op == "NegativeLogLikelihoodLoss") {
      // NLL of a log-softmax over the classes is the cross-entropy of its
      // input.
      auto p = producer_.find(logits);
      if (p == producer_.end() || p->second->op_type() != "LogSoftmax" ||
          normalizeAxis(attrInt(*p->second, "axis", -1),
                        outShape(logits).size(), at) != 1)
        throw Failure(at + ": the input is not a LogSoftmax over axis 1 "
                           "(tgc takes NLL of log-probabilities only)");
      logits = p->second->input(0);
    }
    std::vector<int64_t> shape = outShape(logits);
    std::string scores = use(logits, at);
    if (shape.size() > 2) {
      // Classes on axis 1 in ONNX, last in tg.
      std::vector<int64_t> perm = {0};
      for (size_t d = 2; d < shape.size(); ++d)
        perm.push_back(d);
      perm.push_back(1);
      scores = emit(name + ".classes_last", "transpose", {scores},
                    out + ".scores", {intsAttr("perm", perm)});
    }
    std::string reduction = "mean";
    if (const AttributeProto *a = attr(node, "reduction"))
      reduction = a->s();
    Json attrs = {strAttr("reduction", reduction)};
    if (const AttributeProto *a = attr(node, "ignore_index"))
      attrs.push_back(intAttr("ignore_index", a->i()));
    emit(name, "cross_entropy", {scores, in(1)}, out, attrs);
    return;
  }
  if (op == "Erf")
    throw Failure(at + ": an Erf outside GELU's pattern, x * 0.5 * (1 + "
                       "erf(x / sqrt 2)), which tgc raises to tg.gelu; tg has "
                       "no erf of its own");
  static const std::set<std::string> known(supportedOpList().begin(),
                                           supportedOpList().end());
  if (known.count(op))
    throw Failure(at + ": this use of " + op +
                  " is not supported (its inputs must be constants here)");
  throw Failure(at + ": op " + op + " is not supported; tgc imports " +
                joinOps());
}

void Translator::setLoss() {
  const auto &graph = model_.graph();
  if (graph.output_size() == 0)
    throw Failure(path_ + ": the graph has no outputs");
  std::string first = graph.output(0).name();
  const ValueInfo &out = info(first, path_ + ": output '" + first + "'");
  if (options_.loss.empty()) {
    if (!out.shape.empty() || !isFloatType(out.type))
      throw Failure(path_ + ": the graph's output '" + first + "' (" +
                    typeName(out.type) + " " + shapeText(out.shape) +
                    ") is not a loss: export the module with its loss "
                    "(a scalar), or pass --loss=cross_entropy|mse "
                    "--label-input NAME");
    loss_ = use(first, path_);
    return;
  }
  if (options_.labelInput.empty())
    throw Failure("--loss=" + options_.loss +
                  " needs --label-input NAME, the batch input of the labels");
  if (out.shape.empty())
    throw Failure(path_ + ": --loss=" + options_.loss + ", but the output '" +
                  first + "' is already a scalar (the graph has its loss)");
  for (const auto &input : inputs_)
    if (input["name"] == options_.labelInput)
      throw Failure("--label-input " + options_.labelInput +
                    ": the graph has an input of that name");
  std::string logits = use(first, path_);
  Json label = {{"name", options_.labelInput}};
  std::vector<int64_t> shape = out.shape;
  if (options_.loss == "cross_entropy") {
    shape.pop_back();
    label["dtype"] = "i64";
  } else if (options_.loss == "mse") {
    label["dtype"] = dtypeName(out.type);
  } else {
    throw Failure("--loss must be cross_entropy or mse, got '" + options_.loss +
                  "'");
  }
  if (options_.dataReplicas > 1 && !shape.empty())
    shape[0] = -1;
  label["shape"] = shape;
  Json names = Json::array();
  for (size_t d = 0; d < shape.size(); ++d)
    names.push_back(d == 0 ? "batch" : "");
  label["dim_names"] = names;
  inputs_.push_back(label);
  if (options_.loss == "cross_entropy") {
    loss_ =
        emit("loss", "cross_entropy", {logits, options_.labelInput}, "loss");
    return;
  }
  std::string diff =
      emit("loss.diff", "sub", {logits, options_.labelInput}, "loss.diff");
  std::string square = emit("loss.square", "mul", {diff, diff}, "loss.square");
  loss_ = emit("loss", "reduce_mean", {square}, "loss");
}

/// The parameters' values, in a safetensors file (written beside, then
/// renamed into place).
void Translator::writeWeights() {
  // The header first, from the shapes; then each tensor's bytes, straight
  // from the model's raw data where it has them (no copy of 500 MB).
  auto dtypeOf = [](int type) -> std::string {
    return type == TensorProto::FLOAT16    ? "F16"
           : type == TensorProto::BFLOAT16 ? "BF16"
                                           : "F32";
  };
  Json header = Json::object();
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (const auto &param : params_) {
    const TensorProto &t = *initializers_.at(param["name"]);
    std::string dtype = dtypeOf(t.data_type());
    sizes.push_back(product({t.dims().begin(), t.dims().end()}) *
                    (dtype == "F32" ? 4 : 2));
    header[t.name()] = {
        {"dtype", dtype},
        {"shape", std::vector<int64_t>(t.dims().begin(), t.dims().end())},
        {"data_offsets", {offset, offset + sizes.back()}}};
    offset += sizes.back();
  }
  result_.paramBytes = offset;
  header["__metadata__"] = {{"format", "pt"}, {"source", path_}};
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string temp = options_.weightsPath + ".tmp";
  std::ofstream out(temp, std::ios::binary | std::ios::trunc);
  uint64_t length = text.size();
  out.write(reinterpret_cast<const char *>(&length), 8);
  out.write(text.data(), text.size());
  auto fail = [&](const std::string &message) {
    out.close();
    std::remove(temp.c_str());
    throw Failure(message);
  };
  for (size_t i = 0; i < sizes.size(); ++i) {
    const TensorProto &t = *initializers_.at(params_[i]["name"]);
    std::string where = path_ + ": initializer '" + t.name() + "'";
    std::string copy;
    const std::string *bytes = &copy;
    if (t.has_raw_data() && t.data_location() != TensorProto::EXTERNAL &&
        t.data_type() != TensorProto::DOUBLE)
      bytes = &t.raw_data();
    else
      copy = tensorBytes(t, where);
    if (t.data_type() == TensorProto::DOUBLE) {
      // Parameters are f32: doubles are narrowed here.
      std::string narrowed(copy.size() / 2, '\0');
      for (size_t k = 0; k < copy.size() / 8; ++k) {
        double d;
        std::memcpy(&d, copy.data() + 8 * k, 8);
        float f = static_cast<float>(d);
        std::memcpy(&narrowed[4 * k], &f, 4);
      }
      copy = std::move(narrowed);
    }
    if (bytes->size() != sizes[i])
      fail(where + ": holds " + std::to_string(bytes->size()) +
           " bytes, its shape needs " + std::to_string(sizes[i]));
    out.write(bytes->data(), bytes->size());
  }
  out.flush();
  if (!out)
    fail(options_.weightsPath +
         ": cannot write the weights: " + std::strerror(errno));
  out.close();
  if (std::rename(temp.c_str(), options_.weightsPath.c_str()) != 0)
    throw Failure(options_.weightsPath +
                  ": cannot write the weights: " + std::strerror(errno));
}

Translation Translator::run() {
  parse();
  checkOpsets();
  fixInputs();
  inferShapes();
  classifyInitializers();
  foldGraph();
  const auto &graph = model_.graph();
  for (const NodeProto &node : graph.node())
    for (const std::string &in : node.input())
      ++uses_[in];

  // Parameters, in initializer order (the module's order).
  for (const TensorProto &t : graph.initializer()) {
    if (!paramNames_.count(t.name()))
      continue;
    std::string dtype = dtypeName(t.data_type());
    if (t.data_type() == TensorProto::DOUBLE)
      dtype = "f32";
    params_.push_back(
        {{"name", t.name()},
         {"shape", std::vector<int64_t>(t.dims().begin(), t.dims().end())},
         {"dtype", dtype},
         {"init",
          {{"kind", "file"},
           {"file", options_.weightsPath},
           {"key", t.name()}}}});
    ++result_.params;
  }
  // Batch inputs: the first dim is the batch; a 2-D integer input is
  // tokens [batch, seq].
  int64_t batch = 0, seq = 0;
  for (const auto &value : graph.input()) {
    if (initializers_.count(value.name()))
      continue;
    const ValueInfo &in = info(value.name(), path_ + ": input");
    std::string dtype = dtypeName(in.type);
    if (dtype.empty())
      throw Failure(path_ + ": input '" + value.name() + "' of element type " +
                    typeName(in.type) +
                    " (tgc takes float, int32, int64 "
                    "and bool inputs)");
    Json names = Json::array();
    for (size_t d = 0; d < in.shape.size(); ++d) {
      bool tokens = in.shape.size() == 2 && isIntType(in.type);
      names.push_back(d == 0 ? "batch" : (d == 1 && tokens ? "seq" : ""));
      if (d == 1 && tokens)
        seq = in.shape[1];
    }
    if (!in.shape.empty())
      batch = in.shape[0];
    // Over data replicas the model file writes the batch as -1: the
    // import makes it one replica's micro-batch times the replicas.
    std::vector<int64_t> shape = in.shape;
    if (options_.dataReplicas > 1 && !shape.empty())
      shape[0] = -1;
    inputs_.push_back({{"name", value.name()},
                       {"shape", shape},
                       {"dtype", dtype},
                       {"dim_names", names}});
  }

  // nn.Linear's Transpose -> MatMul: the matmul transposes.
  for (const NodeProto &node : graph.node()) {
    if (node.op_type() != "Transpose" || node.output_size() != 1)
      continue;
    auto it = infos_.find(node.input(0));
    if (it == infos_.end() || it->second.shape.size() != 2)
      continue;
    bool onlyRhs = true;
    for (const NodeProto &user : graph.node())
      for (int i = 0; i < user.input_size(); ++i)
        if (user.input(i) == node.output(0))
          onlyRhs &= user.op_type() == "MatMul" && i == 1;
    if (onlyRhs && uses_[node.output(0)] > 0)
      transposedRhs_[node.output(0)] = node.input(0);
  }
  raiseErfGelu();
  for (const NodeProto &node : graph.node()) {
    if (transposedRhs_.count(node.output_size() ? node.output(0) : "") ||
        raised_.count(&node))
      continue;
    auto gelu = erfGelu_.find(node.output_size() ? node.output(0) : "");
    if (gelu != erfGelu_.end()) {
      emit(dottedName(node.name().empty() ? node.output(0) : node.name()),
           "gelu", {use(gelu->second, where(node))}, node.output(0),
           {strAttr("approximate", "none")});
      continue;
    }
    translate(node);
  }
  setLoss();

  Json model = {{"name", graph.name().empty() ? "onnx-model" : graph.name()},
                {"params", params_},
                {"inputs", inputs_},
                {"nodes", nodes_},
                {"loss", loss_}};
  Json training = Json::object();
  if (!options_.trainingJson.empty()) {
    training = Json::parse(options_.trainingJson, nullptr, false);
    if (training.is_discarded() || !training.is_object())
      throw Failure("the training table is not a JSON object");
  }
  if (batch > 0 && batch % options_.dataReplicas != 0)
    throw Failure(path_ + ": the batch of " + std::to_string(batch) +
                  " does not split over " +
                  std::to_string(options_.dataReplicas) + " data replicas");
  if (!training.contains("batch_size") && batch > 0)
    training["batch_size"] = batch / options_.dataReplicas;
  if (!training.contains("seq_len") && seq > 0)
    training["seq_len"] = seq;
  model["training"] = training;
  writeWeights();
  // One parameter, input or node per line, as examples/ writes them.
  std::string text = "{\n";
  size_t k = 0;
  for (auto it = model.begin(); it != model.end(); ++it, ++k) {
    text += "  \"" + it.key() + "\": ";
    const Json &value = it.value();
    if (value.is_array() && !value.empty() && value[0].is_object()) {
      text += "[\n";
      for (size_t i = 0; i < value.size(); ++i)
        text +=
            "    " + value[i].dump() + (i + 1 < value.size() ? ",\n" : "\n");
      text += "  ]";
    } else {
      text += value.dump();
    }
    text += k + 1 < model.size() ? ",\n" : "\n";
  }
  result_.modelJson = spellSpecialFloats(text + "}");
  return result_;
}

} // namespace

Translation translateOnnxFile(const std::string &path,
                              const TranslateOptions &options) {
  try {
    Translator translator(path, options);
    return translator.run();
  } catch (const Failure &failure) {
    Translation out;
    out.error = failure.what();
    return out;
  } catch (const std::exception &e) {
    Translation out;
    out.error = path + ": " + e.what();
    return out;
  }
}

} // namespace tgc::onnx
