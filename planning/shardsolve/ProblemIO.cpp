//===- ProblemIO.cpp - The contest's JSON files -----------------*- C++ -*-===//
//
// Reads and writes problems in the IOPDDL contest's JSON format, plain or
// gzip'd, and writes solutions as the JSON list evaluate.py reads. Errors
// name the file and the JSON path of the value that is wrong, e.g.
// `p.json: problem.edges.costs[3]: expected 12 costs, got 11`.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/Problem.h"
#include "planning/shardsolve/Solver.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <zlib.h>

using namespace tg::shardsolve;

static llvm::Error fileError(llvm::StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + message);
}

//===----------------------------------------------------------------------===//
// gzip
//===----------------------------------------------------------------------===//

static bool isGzip(llvm::StringRef bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

/// Inflates every gzip member of `bytes` (zlib's own gunzip framing).
static llvm::Expected<std::string> gunzip(llvm::StringRef path,
                                          llvm::StringRef bytes) {
  std::string out;
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK)
    return fileError(path, "cannot start zlib");
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data()));
  stream.avail_in = bytes.size();
  char chunk[1 << 16];
  int rc = Z_OK;
  while (true) {
    stream.next_out = reinterpret_cast<Bytef *>(chunk);
    stream.avail_out = sizeof(chunk);
    rc = inflate(&stream, Z_NO_FLUSH);
    out.append(chunk, sizeof(chunk) - stream.avail_out);
    if (rc == Z_STREAM_END) {
      if (stream.avail_in == 0)
        break;
      inflateReset(&stream); // another gzip member follows
      continue;
    }
    if (rc != Z_OK) {
      std::string why = stream.msg ? stream.msg : "truncated data";
      inflateEnd(&stream);
      return fileError(path, "corrupt gzip data: " + why);
    }
    if (stream.avail_in == 0 && stream.avail_out != 0) {
      inflateEnd(&stream);
      return fileError(path, "corrupt gzip data: truncated");
    }
  }
  inflateEnd(&stream);
  return out;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// Walks the JSON document; the first mismatch becomes an error naming the
/// file and the JSON path.
class ProblemDecoder {
public:
  explicit ProblemDecoder(llvm::StringRef path) : path(path) {}

  llvm::Expected<Problem> decode(const llvm::json::Value &root);

private:
  llvm::Error fail(const std::string &where, const llvm::Twine &message) {
    return fileError(path, where + ": " + message);
  }
  llvm::Expected<const llvm::json::Object *>
  object(const llvm::json::Value *value, const std::string &where);
  llvm::Expected<const llvm::json::Array *>
  array(const llvm::json::Value *value, const std::string &where);
  llvm::Expected<double> number(const llvm::json::Value &value,
                                const std::string &where);
  llvm::Expected<int64_t> integer(const llvm::json::Value &value,
                                  const std::string &where);
  template <typename T, typename Element>
  llvm::Error rows(const llvm::json::Array &array, const std::string &where,
                   std::vector<std::vector<T>> &out, Element element);

  llvm::StringRef path;
};

} // namespace

llvm::Expected<const llvm::json::Object *>
ProblemDecoder::object(const llvm::json::Value *value,
                       const std::string &where) {
  if (!value)
    return fail(where, "missing");
  if (const llvm::json::Object *result = value->getAsObject())
    return result;
  return fail(where, "expected an object");
}

llvm::Expected<const llvm::json::Array *>
ProblemDecoder::array(const llvm::json::Value *value,
                      const std::string &where) {
  if (!value)
    return fail(where, "missing");
  if (const llvm::json::Array *result = value->getAsArray())
    return result;
  return fail(where, "expected a list");
}

llvm::Expected<double> ProblemDecoder::number(const llvm::json::Value &value,
                                              const std::string &where) {
  if (std::optional<double> result = value.getAsNumber())
    return *result;
  return fail(where, "expected a number");
}

llvm::Expected<int64_t> ProblemDecoder::integer(const llvm::json::Value &value,
                                                const std::string &where) {
  if (std::optional<int64_t> result = value.getAsInteger())
    return *result;
  // Writers that print every number as a double: 4096.0 is 4096.
  if (std::optional<double> real = value.getAsNumber())
    if (std::floor(*real) == *real && std::fabs(*real) < 9.2e18)
      return static_cast<int64_t>(*real);
  return fail(where, "expected an integer");
}

template <typename T, typename Element>
llvm::Error
ProblemDecoder::rows(const llvm::json::Array &list, const std::string &where,
                     std::vector<std::vector<T>> &out, Element element) {
  out.resize(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    std::string rowWhere = where + "[" + std::to_string(i) + "]";
    auto row = array(&list[i], rowWhere);
    if (!row)
      return row.takeError();
    out[i].reserve((*row)->size());
    for (size_t j = 0; j < (*row)->size(); ++j) {
      auto value = (this->*element)((**row)[j],
                                    rowWhere + "[" + std::to_string(j) + "]");
      if (!value)
        return value.takeError();
      out[i].push_back(*value);
    }
  }
  return llvm::Error::success();
}

llvm::Expected<Problem> ProblemDecoder::decode(const llvm::json::Value &root) {
  Problem problem;
  auto top = object(&root, "(top level)");
  if (!top)
    return top.takeError();
  auto body = object((*top)->get("problem"), "problem");
  if (!body)
    return body.takeError();
  if (const llvm::json::Value *name = (*body)->get("name")) {
    if (std::optional<llvm::StringRef> text = name->getAsString())
      problem.name = text->str();
    else
      return fail("problem.name", "expected a string");
  }
  auto nodes = object((*body)->get("nodes"), "problem.nodes");
  if (!nodes)
    return nodes.takeError();
  auto intervals = array((**nodes).get("intervals"), "problem.nodes.intervals");
  if (!intervals)
    return intervals.takeError();
  std::vector<std::vector<int64_t>> intervalRows;
  if (llvm::Error error = rows(**intervals, "problem.nodes.intervals",
                               intervalRows, &ProblemDecoder::integer))
    return std::move(error);
  for (size_t i = 0; i < intervalRows.size(); ++i) {
    if (intervalRows[i].size() != 2)
      return fail("problem.nodes.intervals[" + std::to_string(i) + "]",
                  "expected [start, end]");
    problem.intervals.push_back({intervalRows[i][0], intervalRows[i][1]});
  }
  auto costs = array((**nodes).get("costs"), "problem.nodes.costs");
  if (!costs)
    return costs.takeError();
  if (llvm::Error error = rows(**costs, "problem.nodes.costs",
                               problem.nodeCosts, &ProblemDecoder::number))
    return std::move(error);
  auto usages = array((**nodes).get("usages"), "problem.nodes.usages");
  if (!usages)
    return usages.takeError();
  if (llvm::Error error = rows(**usages, "problem.nodes.usages", problem.usages,
                               &ProblemDecoder::integer))
    return std::move(error);

  auto edges = object((*body)->get("edges"), "problem.edges");
  if (!edges)
    return edges.takeError();
  auto ends = array((**edges).get("nodes"), "problem.edges.nodes");
  if (!ends)
    return ends.takeError();
  std::vector<std::vector<int64_t>> endRows;
  if (llvm::Error error = rows(**ends, "problem.edges.nodes", endRows,
                               &ProblemDecoder::integer))
    return std::move(error);
  auto edgeCosts = array((**edges).get("costs"), "problem.edges.costs");
  if (!edgeCosts)
    return edgeCosts.takeError();
  std::vector<std::vector<double>> costRows;
  if (llvm::Error error = rows(**edgeCosts, "problem.edges.costs", costRows,
                               &ProblemDecoder::number))
    return std::move(error);
  if (endRows.size() != costRows.size())
    return fail("problem.edges",
                llvm::formatv("{0} node pairs but {1} cost lists",
                              endRows.size(), costRows.size()));
  for (size_t k = 0; k < endRows.size(); ++k) {
    if (endRows[k].size() != 2)
      return fail("problem.edges.nodes[" + std::to_string(k) + "]",
                  "expected [u, v]");
    problem.edges.push_back(
        {endRows[k][0], endRows[k][1], std::move(costRows[k])});
  }
  if (const llvm::json::Value *limit = (*body)->get("usage_limit")) {
    if (limit->kind() != llvm::json::Value::Null) {
      auto value = integer(*limit, "problem.usage_limit");
      if (!value)
        return value.takeError();
      problem.usageLimit = *value;
    }
  }
  if (llvm::Error error = verifyProblem(problem))
    return fileError(path, llvm::toString(std::move(error)));
  return problem;
}

llvm::Expected<Problem> tg::shardsolve::readProblem(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return fileError(path, "cannot read: " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  std::string inflated;
  if (isGzip(bytes)) {
    auto text = gunzip(path, bytes);
    if (!text)
      return text.takeError();
    inflated = std::move(*text);
    bytes = inflated;
  } else if (path.ends_with(".gz")) {
    return fileError(path, "corrupt gzip data: not a gzip file");
  }
  auto json = llvm::json::parse(bytes);
  if (!json)
    return fileError(path,
                     "malformed JSON: " + llvm::toString(json.takeError()));
  return ProblemDecoder(path).decode(*json);
}

llvm::Expected<std::vector<int64_t>>
tg::shardsolve::readSolution(llvm::StringRef path, size_t numNodes) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fileError(path, "cannot read: " + buffer.getError().message());
  auto json = llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return fileError(path,
                     "malformed JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Array *list = json->getAsArray();
  if (!list)
    return fileError(path, "expected a JSON list of strategy indices");
  if (list->size() != numNodes)
    return fileError(path, llvm::formatv("{0} strategies for a problem of {1} "
                                         "nodes",
                                         list->size(), numNodes));
  std::vector<int64_t> strategies;
  for (size_t i = 0; i < list->size(); ++i) {
    std::optional<int64_t> s = (*list)[i].getAsInteger();
    if (!s || *s < 0)
      return fileError(path, "[" + std::to_string(i) +
                                 "]: expected a strategy index (an integer "
                                 ">= 0)");
    strategies.push_back(*s);
  }
  return strategies;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

/// Integral costs print as integers (the contest's files hold integers),
/// others with all their digits.
static void writeNumber(llvm::json::OStream &json, double value) {
  if (std::floor(value) == value && std::fabs(value) < 9.2e18)
    json.value(static_cast<int64_t>(value));
  else
    json.value(value);
}

/// Writes `text` to `path`, gzip'd when the name ends in .gz.
static llvm::Error writeFile(llvm::StringRef path, llvm::StringRef text) {
  if (path.ends_with(".gz")) {
    gzFile file = gzopen(path.str().c_str(), "wb");
    if (!file)
      return fileError(path, "cannot write");
    bool ok = gzwrite(file, text.data(), text.size()) ==
              static_cast<int>(text.size());
    if (gzclose(file) != Z_OK || !ok)
      return fileError(path, "cannot write");
    return llvm::Error::success();
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return fileError(path, "cannot write: " + ec.message());
  os << text;
  os.close();
  if (os.has_error())
    return fileError(path, "cannot write: " + os.error().message());
  return llvm::Error::success();
}

llvm::Error tg::shardsolve::writeProblem(const Problem &problem,
                                         llvm::StringRef path) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os);
  auto rowsOf = [&](const auto &table) {
    json.array([&] {
      for (const auto &row : table)
        json.array([&] {
          for (auto value : row)
            writeNumber(json, value);
        });
    });
  };
  json.object([&] {
    json.attributeObject("problem", [&] {
      json.attribute("name", problem.name);
      json.attributeObject("nodes", [&] {
        json.attributeArray("intervals", [&] {
          for (auto [start, end] : problem.intervals)
            json.array([&] {
              json.value(start);
              json.value(end);
            });
        });
        json.attributeBegin("costs");
        rowsOf(problem.nodeCosts);
        json.attributeEnd();
        json.attributeBegin("usages");
        rowsOf(problem.usages);
        json.attributeEnd();
      });
      json.attributeObject("edges", [&] {
        json.attributeArray("nodes", [&] {
          for (const Edge &edge : problem.edges)
            json.array([&] {
              json.value(edge.u);
              json.value(edge.v);
            });
        });
        json.attributeArray("costs", [&] {
          for (const Edge &edge : problem.edges)
            json.array([&] {
              for (double cost : edge.costs)
                writeNumber(json, cost);
            });
        });
      });
      if (problem.usageLimit)
        json.attribute("usage_limit", *problem.usageLimit);
    });
  });
  os << "\n";
  return writeFile(path, text);
}

llvm::Error tg::shardsolve::writeSolution(const Solution &solution,
                                          llvm::StringRef path) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::json::OStream json(os);
  json.array([&] {
    for (int64_t s : solution.strategies)
      json.value(s);
  });
  os << "\n";
  return writeFile(path, text);
}
