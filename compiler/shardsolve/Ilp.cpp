//===- Ilp.cpp - The problem as an integer program for CBC ------*- C++ -*-===//
//
// Writes the program in CPLEX LP format to a temporary file, runs CBC on it
// with a time limit in wall-clock seconds, and reads the solution file
// (a status line, then `index name value reduced-cost` per nonzero).
// Memory rows: with non-negative usages only segments that begin where some
// node starts and end where some node ends can hold a peak (any other is
// contained in a neighbour's live set), and each node's least usage moves to
// the right-hand side.
//
//===----------------------------------------------------------------------===//

#include "compiler/shardsolve/Ilp.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>

using namespace tg::shardsolve;

size_t tg::shardsolve::ilpVariables(const SearchGraph &graph) {
  size_t count = 0;
  for (const auto &costs : graph.cost)
    count += costs.size();
  for (const SearchGraph::PairCosts &pair : graph.edges)
    count += pair.costs.size();
  return count;
}

namespace {

/// Removes the temporary files when CBC is done.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

std::string number(double value) {
  char text[32];
  snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

/// Writes `terms` (coefficient, variable) a few per line.
class RowWriter {
public:
  explicit RowWriter(llvm::raw_ostream &os) : os(os) {}
  void term(double coefficient, const llvm::Twine &variable) {
    if (coefficient == 0)
      return;
    os << (coefficient < 0 ? " - " : " + ") << number(std::abs(coefficient))
       << " " << variable;
    if (++count % 8 == 0)
      os << "\n";
  }
  bool empty() const { return count == 0; }

private:
  llvm::raw_ostream &os;
  size_t count = 0;
};

/// One row per segment where the live set can peak: with one limit and
/// non-negative usages, a segment that begins where a node starts and ends
/// where one ends; with a limit per segment, each run of segments with the
/// same live set, at its least limit.
void writeMemoryRows(const SearchGraph &graph, llvm::raw_ostream &os) {
  int32_t n = graph.numNodes, segments = graph.numSegments;
  bool uniform = graph.segmentLimit.empty();
  bool nonNegative = true;
  for (const auto &usages : graph.usage)
    for (int64_t usage : usages)
      nonNegative &= usage >= 0;
  // Which segment boundaries some node starts at / ends at.
  std::vector<char> starts(segments + 1, 0), ends(segments + 1, 0);
  std::vector<std::vector<int32_t>> startingAt(segments);
  for (int32_t i = 0; i < n; ++i) {
    auto [first, last] = graph.span[i];
    if (first == last)
      continue;
    starts[first] = ends[last] = 1;
    startingAt[first].push_back(i);
  }
  std::vector<int32_t> live;
  for (int32_t t = 0; t < segments; ++t) {
    live.erase(
        std::remove_if(live.begin(), live.end(),
                       [&](int32_t i) { return graph.span[i].second <= t; }),
        live.end());
    live.insert(live.end(), startingAt[t].begin(), startingAt[t].end());
    int64_t limit = *graph.limit;
    if (uniform) {
      if (nonNegative && !(starts[t] && ends[t + 1]))
        continue;
    } else {
      if (t > 0 && !starts[t] && !ends[t])
        continue; // the run began earlier
      limit = graph.segmentLimit[t];
      for (int32_t u = t + 1; u < segments && !starts[u] && !ends[u]; ++u)
        limit = std::min(limit, graph.segmentLimit[u]);
    }
    double least = 0, most = 0;
    for (int32_t i : live) {
      auto [low, high] =
          std::minmax_element(graph.usage[i].begin(), graph.usage[i].end());
      least += *low;
      most += *high;
    }
    if (most <= limit)
      continue; // cannot bind
    os << " m" << t << ":";
    RowWriter row(os);
    for (int32_t i : live) {
      int64_t low =
          *std::min_element(graph.usage[i].begin(), graph.usage[i].end());
      for (int32_t s = 0; s < graph.numStrategies(i); ++s)
        row.term(graph.usage[i][s] - low, llvm::formatv("x{0}_{1}", i, s));
    }
    if (row.empty())
      os << " 0 x0_0";
    os << " <= " << number(limit - least) << "\n";
  }
}

void writeProgram(const SearchGraph &graph, llvm::raw_ostream &os) {
  int32_t n = graph.numNodes;
  os << "Minimize\n obj:";
  {
    RowWriter row(os);
    for (int32_t i = 0; i < n; ++i)
      for (int32_t s = 0; s < graph.numStrategies(i); ++s)
        row.term(graph.cost[i][s], llvm::formatv("x{0}_{1}", i, s));
    for (size_t k = 0; k < graph.edges.size(); ++k)
      for (size_t c = 0; c < graph.edges[k].costs.size(); ++c)
        if (graph.edges[k].costs[c] < kForbidden)
          row.term(graph.edges[k].costs[c], llvm::formatv("y{0}_{1}", k, c));
    if (row.empty())
      os << " 0 x0_0";
  }
  os << "\nSubject To\n";
  for (int32_t i = 0; i < n; ++i) {
    os << " one" << i << ":";
    for (int32_t s = 0; s < graph.numStrategies(i); ++s)
      os << " + x" << i << "_" << s;
    os << " = 1\n";
  }
  for (size_t k = 0; k < graph.edges.size(); ++k) {
    const SearchGraph::PairCosts &pair = graph.edges[k];
    int32_t rows = graph.numStrategies(pair.u);
    int32_t columns = graph.numStrategies(pair.v);
    for (int32_t a = 0; a < rows; ++a) {
      os << " r" << k << "_" << a << ": - x" << pair.u << "_" << a;
      for (int32_t b = 0; b < columns; ++b)
        if (pair.costs[a * columns + b] < kForbidden)
          os << " + y" << k << "_" << a * columns + b;
      os << " = 0\n";
    }
    for (int32_t b = 0; b < columns; ++b) {
      os << " c" << k << "_" << b << ": - x" << pair.v << "_" << b;
      for (int32_t a = 0; a < rows; ++a)
        if (pair.costs[a * columns + b] < kForbidden)
          os << " + y" << k << "_" << a * columns + b;
      os << " = 0\n";
    }
  }
  if (graph.limit && graph.numSegments > 0)
    writeMemoryRows(graph, os);
  os << "Binaries\n";
  for (int32_t i = 0; i < n; ++i)
    for (int32_t s = 0; s < graph.numStrategies(i); ++s)
      os << " x" << i << "_" << s << "\n";
  os << "End\n";
}

llvm::Error cbcError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The region's own search graph: its kept strategies are those allowed
/// with the fixed neighbours, whose edge costs join the node costs.
SearchGraph regionGraph(const SearchGraph &graph,
                        llvm::ArrayRef<int32_t> choice,
                        llvm::ArrayRef<int32_t> region) {
  SearchGraph sub;
  sub.numNodes = region.size();
  sub.numSegments = graph.numSegments;
  sub.limit = graph.limit;
  sub.costScale = graph.costScale;
  std::vector<int32_t> index(graph.numNodes, -1);
  for (size_t r = 0; r < region.size(); ++r)
    index[region[r]] = r;
  sub.kept.resize(region.size());
  sub.cost.resize(region.size());
  sub.usage.resize(region.size());
  sub.span.resize(region.size());
  sub.arcs.resize(region.size());
  for (size_t r = 0; r < region.size(); ++r) {
    int32_t node = region[r];
    sub.span[r] = graph.span[node];
    for (int32_t s = 0; s < graph.numStrategies(node); ++s) {
      double cost = graph.cost[node][s];
      for (const SearchGraph::Arc &arc : graph.arcs[node])
        if (index[arc.other] < 0)
          cost += graph.arcCost(arc, s, choice[arc.other]);
      if (cost >= kForbidden)
        continue;
      sub.kept[r].push_back(s);
      sub.cost[r].push_back(cost);
      sub.usage[r].push_back(graph.usage[node][s]);
    }
  }
  for (size_t r = 0; r < region.size(); ++r)
    for (const SearchGraph::Arc &arc : graph.arcs[region[r]]) {
      int32_t other = index[arc.other];
      if (other <= static_cast<int32_t>(r))
        continue; // outside, or seen from the other end
      SearchGraph::PairCosts pair{static_cast<int32_t>(r), other, {}};
      for (int32_t a : sub.kept[r])
        for (int32_t b : sub.kept[other])
          pair.costs.push_back(graph.arcCost(arc, a, b));
      sub.edges.push_back(std::move(pair));
    }
  if (graph.limit) {
    // What the fixed nodes leave in each segment.
    std::vector<int64_t> fixed(graph.numSegments + 1, 0);
    for (int32_t i = 0; i < graph.numNodes; ++i) {
      if (index[i] >= 0)
        continue;
      fixed[graph.span[i].first] += graph.usage[i][choice[i]];
      fixed[graph.span[i].second] -= graph.usage[i][choice[i]];
    }
    sub.segmentLimit.resize(graph.numSegments);
    int64_t load = 0;
    for (int32_t t = 0; t < graph.numSegments; ++t) {
      load += fixed[t];
      sub.segmentLimit[t] = *graph.limit - load;
    }
  }
  return sub;
}

} // namespace

llvm::Expected<IlpResult> tg::shardsolve::solveRegionWithCbc(
    const SearchGraph &graph, llvm::ArrayRef<int32_t> choice,
    llvm::ArrayRef<int32_t> region, llvm::StringRef cbcPath, double seconds) {
  SearchGraph sub = regionGraph(graph, choice, region);
  for (size_t r = 0; r < region.size(); ++r)
    if (sub.kept[r].empty())
      return cbcError("the region's node " + llvm::Twine(region[r]) +
                      " has no strategy allowed with its fixed neighbours");
  auto result = solveWithCbc(sub, cbcPath, seconds);
  if (!result || result->choice.empty())
    return result;
  std::vector<int32_t> full(choice.begin(), choice.end());
  for (size_t r = 0; r < region.size(); ++r)
    full[region[r]] = sub.kept[r][result->choice[r]];
  result->choice = std::move(full);
  return result;
}

llvm::Expected<IlpResult> tg::shardsolve::solveWithCbc(const SearchGraph &graph,
                                                       llvm::StringRef cbcPath,
                                                       double seconds) {
  auto cbc = llvm::sys::findProgramByName(cbcPath);
  if (!cbc || !llvm::sys::fs::can_execute(*cbc))
    return cbcError("no CBC program '" + cbcPath +
                    "' (Debian package coinor-cbc)");
  TempFile program, solution, log;
  if (llvm::sys::fs::createTemporaryFile("tg-shard-solve", "lp",
                                         program.path) ||
      llvm::sys::fs::createTemporaryFile("tg-shard-solve", "sol",
                                         solution.path) ||
      llvm::sys::fs::createTemporaryFile("tg-shard-solve", "log", log.path))
    return cbcError("cannot create a temporary file for CBC");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(program.path, ec);
    if (ec)
      return cbcError("cannot write " + program.path + ": " + ec.message());
    writeProgram(graph, os);
  }
  std::string limit = number(std::max(seconds, 1.0));
  llvm::SmallVector<llvm::StringRef> args{
      *cbc,  program.path, "timeMode", "elapsed",    "sec",
      limit, "solve",      "solu",     solution.path};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.path.str(),
                                                log.path.str()};
  std::string message;
  // CBC stops itself at `sec`; the hard stop is for a CBC that hangs.
  int rc = llvm::sys::ExecuteAndWait(
      *cbc, args, std::nullopt, redirects,
      /*SecondsToWait=*/static_cast<unsigned>(std::ceil(seconds)) + 3,
      /*MemoryLimit=*/0, &message);
  if (rc != 0)
    return cbcError("cbc failed (exit " + llvm::Twine(rc) + ")" +
                    (message.empty() ? "" : ": " + message));
  auto text = llvm::MemoryBuffer::getFile(solution.path);
  if (!text || (*text)->getBufferSize() == 0)
    return cbcError("cbc wrote no solution");
  IlpResult result;
  auto [status, lines] = (*text)->getBuffer().split('\n');
  if (status.contains_insensitive("infeasible")) {
    result.infeasible = status.starts_with("Infeasible");
    return result;
  }
  result.optimal = status.starts_with("Optimal");
  std::vector<int32_t> choice(graph.numNodes, -1);
  while (!lines.empty()) {
    llvm::StringRef line;
    std::tie(line, lines) = lines.split('\n');
    llvm::SmallVector<llvm::StringRef> fields;
    line.split(fields, ' ', -1, /*KeepEmpty=*/false);
    // An "**" before the index marks a value CBC thinks is off a bound.
    if (!fields.empty() && fields[0] == "**")
      fields.erase(fields.begin());
    if (fields.size() < 3 || !fields[1].consume_front("x"))
      continue;
    auto [node, strategy] = fields[1].split('_');
    int32_t i, s;
    double value;
    if (node.getAsInteger(10, i) || strategy.getAsInteger(10, s) ||
        fields[2].getAsDouble(value) || i < 0 || i >= graph.numNodes || s < 0 ||
        s >= graph.numStrategies(i))
      continue;
    if (value > 0.5)
      choice[i] = s;
  }
  if (std::find(choice.begin(), choice.end(), -1) != choice.end())
    return result; // no integer solution (stopped before finding one)
  result.choice = std::move(choice);
  return result;
}
