//===- Ilp.cpp - The problem as an integer program for CBC ------*- C++ -*-===//
//
// Writes the program in CPLEX LP format and has CBC solve it with a time
// limit in wall-clock seconds (planning/lp's runCbc).
// Memory rows: with non-negative usages only segments that begin where some
// node starts and end where some node ends can hold a peak (any other is
// contained in a neighbour's live set), and each node's least usage moves to
// the right-hand side.
//
//===----------------------------------------------------------------------===//

#include "planning/shardsolve/Ilp.h"
#include "planning/lp/Cbc.h"
#include "planning/shardsolve/TiedGroups.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

using namespace tg::shardsolve;

namespace {

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

/// The program over tied groups: x{g}_{k} picks strategy k of group g;
/// costs inside a group are linear, edges between two groups are merged
/// into one matrix linearised by y{p}_{c}.
class ProgramWriter {
public:
  ProgramWriter(const SearchGraph &graph, const TiedGroups &groups)
      : graph(graph), groups(groups) {}
  /// False when some group has no consistent strategy left.
  bool prepare();
  void write(llvm::raw_ostream &os);
  /// Variables plus the terms of the memory rows (counted up to a little
  /// past `countUpTo`).
  size_t size(size_t countUpTo);

private:
  size_t writeMemoryRows(llvm::raw_ostream *os,
                         size_t countUpTo = std::numeric_limits<size_t>::max());

  const SearchGraph &graph;
  const TiedGroups &groups;
  /// Per group, per group strategy: the linear cost (infinite when dead).
  std::vector<std::vector<double>> linear;
  struct Between {
    int32_t g, h;
    std::vector<double> costs; // |K_g| x |K_h|
  };
  std::vector<Between> between;
};

bool ProgramWriter::prepare() {
  int32_t numGroups = groups.numGroups();
  linear.resize(numGroups);
  for (int32_t g = 0; g < numGroups; ++g) {
    linear[g].assign(groups.numStrategies(g), 0);
    for (int32_t k = 0; k < groups.numStrategies(g); ++k)
      if (!groups.alive[g][k])
        linear[g][k] = kForbidden;
    for (int32_t node : groups.members[g])
      for (int32_t k = 0; k < groups.numStrategies(g); ++k)
        linear[g][k] += graph.cost[node][groups.strategyOf[node][k]];
  }
  std::map<std::pair<int32_t, int32_t>, int32_t> pairIndex;
  for (const SearchGraph::PairCosts &pair : graph.edges) {
    int32_t g = groups.groupOf[pair.u], h = groups.groupOf[pair.v];
    int32_t columns = graph.numStrategies(pair.v);
    const auto &mapU = groups.strategyOf[pair.u];
    const auto &mapV = groups.strategyOf[pair.v];
    if (g == h) {
      for (int32_t k = 0; k < groups.numStrategies(g); ++k)
        linear[g][k] += pair.costs[mapU[k] * columns + mapV[k]];
      continue;
    }
    bool swap = g > h;
    auto [it, inserted] =
        pairIndex.insert({{std::min(g, h), std::max(g, h)},
                          static_cast<int32_t>(between.size())});
    if (inserted)
      between.push_back({std::min(g, h), std::max(g, h),
                         std::vector<double>(groups.numStrategies(g) *
                                             groups.numStrategies(h))});
    Between &merged = between[it->second];
    int32_t kh = groups.numStrategies(merged.h);
    for (int32_t k = 0; k < groups.numStrategies(g); ++k)
      for (int32_t l = 0; l < groups.numStrategies(h); ++l) {
        double c = pair.costs[mapU[k] * columns + mapV[l]];
        merged.costs[swap ? l * kh + k : k * kh + l] += c;
      }
  }
  for (int32_t g = 0; g < numGroups; ++g)
    if (std::none_of(linear[g].begin(), linear[g].end(),
                     [](double c) { return c < kForbidden; }))
      return false;
  return true;
}

size_t ProgramWriter::size(size_t countUpTo) {
  size_t count = graph.limit && graph.numSegments > 0
                     ? writeMemoryRows(nullptr, countUpTo)
                     : 0;
  for (const auto &costs : linear)
    count += costs.size();
  for (const Between &pair : between)
    count += pair.costs.size();
  return count;
}

void ProgramWriter::write(llvm::raw_ostream &os) {
  int32_t numGroups = groups.numGroups();
  auto usable = [&](int32_t g, int32_t k) { return linear[g][k] < kForbidden; };
  os << "Minimize\n obj:";
  {
    RowWriter row(os);
    for (int32_t g = 0; g < numGroups; ++g)
      for (int32_t k = 0; k < groups.numStrategies(g); ++k)
        if (usable(g, k))
          row.term(linear[g][k], llvm::formatv("x{0}_{1}", g, k));
    for (size_t p = 0; p < between.size(); ++p)
      for (size_t c = 0; c < between[p].costs.size(); ++c)
        if (between[p].costs[c] < kForbidden)
          row.term(between[p].costs[c], llvm::formatv("y{0}_{1}", p, c));
    if (row.empty())
      os << " 0 x0_0";
  }
  os << "\nSubject To\n";
  for (int32_t g = 0; g < numGroups; ++g) {
    os << " one" << g << ":";
    for (int32_t k = 0; k < groups.numStrategies(g); ++k)
      if (usable(g, k))
        os << " + x" << g << "_" << k;
    os << " = 1\n";
  }
  for (size_t p = 0; p < between.size(); ++p) {
    const Between &pair = between[p];
    int32_t rows = groups.numStrategies(pair.g);
    int32_t columns = groups.numStrategies(pair.h);
    for (int32_t k = 0; k < rows; ++k) {
      if (!usable(pair.g, k))
        continue;
      os << " r" << p << "_" << k << ": - x" << pair.g << "_" << k;
      for (int32_t l = 0; l < columns; ++l)
        if (usable(pair.h, l) && pair.costs[k * columns + l] < kForbidden)
          os << " + y" << p << "_" << k * columns + l;
      os << " = 0\n";
    }
    for (int32_t l = 0; l < columns; ++l) {
      if (!usable(pair.h, l))
        continue;
      os << " c" << p << "_" << l << ": - x" << pair.h << "_" << l;
      for (int32_t k = 0; k < rows; ++k)
        if (usable(pair.g, k) && pair.costs[k * columns + l] < kForbidden)
          os << " + y" << p << "_" << k * columns + l;
      os << " = 0\n";
    }
  }
  if (graph.limit && graph.numSegments > 0)
    writeMemoryRows(&os);
  os << "Binaries\n";
  for (int32_t g = 0; g < numGroups; ++g)
    for (int32_t k = 0; k < groups.numStrategies(g); ++k)
      if (usable(g, k))
        os << " x" << g << "_" << k << "\n";
  os << "End\n";
}

/// One row per segment where the live set can peak: with one limit and
/// non-negative usages, a segment that begins where a node starts and ends
/// where one ends; with a limit per segment, each run of segments with the
/// same live set, at its least limit. Each group's usage per strategy is
/// kept up to date as nodes start and end. Returns the number of terms
/// written (only counted when `os` is null).
size_t ProgramWriter::writeMemoryRows(llvm::raw_ostream *os, size_t countUpTo) {
  int32_t n = graph.numNodes, segments = graph.numSegments;
  bool uniform = graph.segmentLimit.empty();
  bool nonNegative = true;
  for (const auto &usages : graph.usage)
    for (int64_t usage : usages)
      nonNegative &= usage >= 0;
  std::vector<std::vector<int32_t>> startingAt(segments + 1),
      endingAt(segments + 1);
  for (int32_t i = 0; i < n; ++i) {
    auto [first, last] = graph.span[i];
    if (first == last)
      continue;
    startingAt[first].push_back(i);
    endingAt[last].push_back(i);
  }
  int32_t numGroups = groups.numGroups();
  std::vector<std::vector<double>> usageOf(numGroups);
  std::vector<int32_t> liveMembers(numGroups, 0), position(numGroups, -1);
  std::vector<int32_t> active;
  auto change = [&](int32_t node, double sign) {
    int32_t g = groups.groupOf[node];
    auto &usages = usageOf[g];
    usages.resize(groups.numStrategies(g), 0);
    for (int32_t k = 0; k < groups.numStrategies(g); ++k)
      usages[k] += sign * graph.usage[node][groups.strategyOf[node][k]];
    liveMembers[g] += sign > 0 ? 1 : -1;
    if (liveMembers[g] > 0 && position[g] < 0) {
      position[g] = active.size();
      active.push_back(g);
    } else if (liveMembers[g] == 0) {
      position[active.back()] = position[g];
      active[position[g]] = active.back();
      active.pop_back();
      position[g] = -1;
      std::fill(usages.begin(), usages.end(), 0.0);
    }
  };
  size_t terms = 0;
  for (int32_t t = 0; t < segments; ++t) {
    for (int32_t node : endingAt[t])
      change(node, -1);
    for (int32_t node : startingAt[t])
      change(node, +1);
    bool starts = !startingAt[t].empty(), ends = !endingAt[t].empty();
    bool endsNext = !endingAt[t + 1].empty();
    int64_t limit = *graph.limit;
    if (uniform) {
      if (nonNegative && !(starts && endsNext))
        continue;
    } else {
      if (t > 0 && !starts && !ends)
        continue; // the run began earlier
      limit = graph.segmentLimit[t];
      for (int32_t u = t + 1;
           u < segments && startingAt[u].empty() && endingAt[u].empty(); ++u)
        limit = std::min(limit, graph.segmentLimit[u]);
    }
    double least = 0, most = 0;
    size_t rowTerms = 0;
    for (int32_t g : active) {
      double low = std::numeric_limits<double>::infinity(), high = -low;
      for (int32_t k = 0; k < groups.numStrategies(g); ++k)
        if (linear[g][k] < kForbidden) {
          low = std::min(low, usageOf[g][k]);
          high = std::max(high, usageOf[g][k]);
          ++rowTerms;
        }
      least += low;
      most += high;
    }
    if (most <= limit)
      continue; // cannot bind
    terms += rowTerms;
    if (!os) {
      if (terms > countUpTo)
        return terms;
      continue;
    }
    *os << " m" << t << ":";
    RowWriter row(*os);
    for (int32_t g : active) {
      double low = std::numeric_limits<double>::infinity();
      for (int32_t k = 0; k < groups.numStrategies(g); ++k)
        if (linear[g][k] < kForbidden)
          low = std::min(low, usageOf[g][k]);
      for (int32_t k = 0; k < groups.numStrategies(g); ++k)
        if (linear[g][k] < kForbidden)
          row.term(usageOf[g][k] - low, llvm::formatv("x{0}_{1}", g, k));
    }
    if (row.empty())
      *os << " 0 x0_0";
    *os << " <= " << number(limit - least) << "\n";
  }
  return terms;
}

} // namespace

size_t tg::shardsolve::ilpSize(const SearchGraph &graph, size_t countUpTo) {
  TiedGroups groups = findTiedGroups(graph);
  ProgramWriter writer(graph, groups);
  writer.prepare();
  return writer.size(countUpTo);
}

namespace {

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
  // The current choice is valid: CBC starts from it.
  std::vector<int32_t> start(region.size(), 0);
  for (size_t r = 0; r < region.size(); ++r)
    for (size_t k = 0; k < sub.kept[r].size(); ++k)
      if (sub.kept[r][k] == choice[region[r]])
        start[r] = k;
  auto result = solveWithCbc(sub, cbcPath, seconds, start);
  if (!result || result->choice.empty())
    return result;
  std::vector<int32_t> full(choice.begin(), choice.end());
  for (size_t r = 0; r < region.size(); ++r)
    full[region[r]] = sub.kept[r][result->choice[r]];
  result->choice = std::move(full);
  return result;
}

llvm::Expected<IlpResult>
tg::shardsolve::solveWithCbc(const SearchGraph &graph, llvm::StringRef cbcPath,
                             double seconds, llvm::ArrayRef<int32_t> start) {
  TiedGroups groups = findTiedGroups(graph);
  ProgramWriter writer(graph, groups);
  if (!writer.prepare()) {
    IlpResult result;
    result.infeasible = true;
    return result;
  }
  tg::lp::CbcRun run;
  run.seconds = std::max(seconds, 1.0);
  run.elapsed = true;
  // CBC stops itself at `sec`; the hard stop is for a CBC that hangs.
  run.hardStopSeconds = static_cast<unsigned>(std::ceil(seconds)) + 3;
  run.tempPrefix = "tg-shard-solve";
  if (!start.empty()) {
    // A solution file as CBC writes one, naming each group's strategy.
    llvm::raw_string_ostream os(run.start);
    os << "Stopped on time - objective value 0\n";
    for (int32_t g = 0; g < groups.numGroups(); ++g) {
      int32_t node = groups.members[g][0];
      for (int32_t k = 0; k < groups.numStrategies(g); ++k)
        if (groups.strategyOf[node][k] == start[node])
          os << "  " << g << " x" << g << "_" << k << " 1 0\n";
    }
  }
  llvm::Expected<tg::lp::CbcSolution> solution = tg::lp::runCbc(
      cbcPath, [&](llvm::raw_ostream &os) { writer.write(os); }, run);
  if (!solution)
    return solution.takeError();
  IlpResult result;
  using Status = tg::lp::CbcSolution::Status;
  if (solution->status == Status::Infeasible ||
      solution->status == Status::NoSolution) {
    result.infeasible = solution->status == Status::Infeasible;
    return result;
  }
  result.optimal = solution->status == Status::Optimal;
  std::vector<int32_t> choice(graph.numNodes, -1);
  for (const auto &[name, value] : solution->values) {
    llvm::StringRef variable = name;
    if (!variable.consume_front("x"))
      continue;
    auto [group, strategy] = variable.split('_');
    int32_t g, k;
    if (group.getAsInteger(10, g) || strategy.getAsInteger(10, k) || g < 0 ||
        g >= groups.numGroups() || k < 0 || k >= groups.numStrategies(g))
      continue;
    if (value > 0.5)
      for (int32_t node : groups.members[g])
        choice[node] = groups.strategyOf[node][k];
  }
  if (std::find(choice.begin(), choice.end(), -1) != choice.end())
    return result; // no integer solution (stopped before finding one)
  result.choice = std::move(choice);
  return result;
}
