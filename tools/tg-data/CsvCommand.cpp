//===- CsvCommand.cpp - tg-data csv: CSV to .tgcls --------------*- C++ -*-===//
//
// Reads a table of numeric features and one integer class label per row
// (plain or gzipped), splits its rows into train and validation with a
// seeded shuffle, normalizes the features with statistics of the train split
// only (so nothing about the validation rows leaks into training), and
// writes PREFIX_train.tgcls and PREFIX_val.tgcls (ClassData.h's layout).
//
//===----------------------------------------------------------------------===//

#include "tools/tg-data/Commands.h"

#include "runtime/core/Error.h"
#include "runtime/core/FloatFormat.h"
#include "runtime/core/Rng.h"
#include "runtime/data/ClassData.h"
#include "tools/tg-data/CommandLine.h"
#include "tools/tg-data/InputFiles.h"
#include "tools/tg-data/OutputFiles.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tgc {
namespace data {

namespace {

const char *const kCsvAbout =
    "Converts a CSV table of numeric features and an integer class label per\n"
    "row into classification files for training a classifier:\n"
    "PREFIX_train.tgcls and PREFIX_val.tgcls (float32 features, int32\n"
    "labels; see runtime/data/ClassData.h).\n"
    "\n"
    "The file may be gzipped (detected by its first bytes). Blank lines are\n"
    "skipped; fields may be double-quoted. Labels must be non-negative\n"
    "integers (3 and 3.0 are both class 3); the number of classes is the\n"
    "largest label plus one. A seeded shuffle picks ceil(rows * fraction)\n"
    "rows for validation (as sklearn's train_test_split counts them); both\n"
    "splits keep their rows in file order.\n"
    "\n"
    "Normalization, with statistics from the train split only, applied to\n"
    "both splits:\n"
    "  maxabs    divide every feature by the largest |value| in the train\n"
    "            split, one number for all columns (the default: pixel data\n"
    "            such as sklearn's digits, 0..16, becomes value/16 in [0, 1],\n"
    "            and the relative intensities of the columns are kept)\n"
    "  minmax    per column, (x - min) / (max - min)\n"
    "  standard  per column, (x - mean) / std (population std)\n"
    "  scale=X   divide every feature by X\n"
    "  none      keep the values\n"
    "A column that is constant in the train split is only shifted by minmax\n"
    "and standard (to 0), not divided.\n";

const char *const kCsvExamples =
    "examples:\n"
    "  tg-data csv /usr/lib/python3/dist-packages/sklearn/datasets/data/"
    "digits.csv.gz \\\n"
    "      -o data/digits\n"
    "  tg-data csv iris.csv -o data/iris --label-column species "
    "--normalize standard\n";

struct Table {
  std::vector<std::string> header; ///< empty when the file has none
  int64_t columns = 0;
  std::vector<double> cells;  ///< rows x columns
  std::vector<int64_t> lines; ///< the line of each row
};

/// Splits one line into fields: `delimiter`-separated, surrounding spaces
/// trimmed, "double quoted" fields with "" for a quote.
std::vector<std::string> splitFields(const std::string &line, char delimiter,
                                     const std::string &where) {
  std::vector<std::string> fields;
  size_t pos = 0;
  auto isBlank = [&](char c) {
    return c != delimiter && (c == ' ' || c == '\t');
  };
  while (true) {
    while (pos < line.size() && isBlank(line[pos]))
      ++pos;
    std::string field;
    if (pos < line.size() && line[pos] == '"') {
      ++pos;
      while (true) {
        if (pos >= line.size())
          throw Error(where + "column " + std::to_string(fields.size() + 1) +
                      ": unterminated quoted field");
        if (line[pos] == '"') {
          if (pos + 1 < line.size() && line[pos + 1] == '"') {
            field += '"';
            pos += 2;
            continue;
          }
          ++pos;
          break;
        }
        field += line[pos++];
      }
      while (pos < line.size() && isBlank(line[pos]))
        ++pos;
      if (pos < line.size() && line[pos] != delimiter)
        throw Error(where + "column " + std::to_string(fields.size() + 1) +
                    ": text after the closing quote");
    } else {
      size_t end = line.find(delimiter, pos);
      if (end == std::string::npos)
        end = line.size();
      field = line.substr(pos, end - pos);
      while (!field.empty() && isBlank(field.back()))
        field.pop_back();
      pos = end;
    }
    fields.push_back(std::move(field));
    if (pos >= line.size())
      break;
    ++pos; // the delimiter
  }
  return fields;
}

bool parseNumber(const std::string &text, double &value) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  return *end == '\0' && std::isfinite(value);
}

std::string columnName(const Table &table, int64_t column) {
  std::string name = "column " + std::to_string(column + 1);
  if (!table.header.empty() && !table.header[column].empty())
    name += " ('" + table.header[column] + "')";
  return name;
}

Table readTable(const std::string &path, const std::string &text,
                char delimiter, const std::string &headerMode) {
  Table table;
  size_t start = 0;
  // A UTF-8 byte order mark (spreadsheets write one) is not data.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    start = 3;
  int64_t lineNumber = 0;
  bool first = true;
  while (start < text.size()) {
    size_t newline = text.find('\n', start);
    if (newline == std::string::npos)
      newline = text.size();
    std::string line = text.substr(start, newline - start);
    start = newline + 1;
    ++lineNumber;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos)
      continue;
    std::string where = path + ":" + std::to_string(lineNumber) + ": ";
    std::vector<std::string> fields = splitFields(line, delimiter, where);
    if (first) {
      first = false;
      table.columns = static_cast<int64_t>(fields.size());
      bool header = headerMode == "yes";
      if (headerMode == "auto") {
        double unused;
        for (const std::string &field : fields)
          header = header || !parseNumber(field, unused);
      }
      if (header) {
        table.header = fields;
        continue;
      }
    }
    if (static_cast<int64_t>(fields.size()) != table.columns)
      throw Error(where + "expected " + std::to_string(table.columns) +
                  " columns (as the first line), got " +
                  std::to_string(fields.size()));
    for (int64_t c = 0; c < table.columns; ++c) {
      double value;
      if (!parseNumber(fields[c], value))
        throw Error(where + columnName(table, c) + ": " +
                    (fields[c].empty()
                         ? std::string("empty field")
                         : "'" + fields[c] + "' is not a " +
                               (errno == ERANGE ? "finite " : "") + "number"));
      table.cells.push_back(value);
    }
    table.lines.push_back(lineNumber);
  }
  return table;
}

/// The label column `spec` names: last, first, a 1-based number or a
/// header name.
int64_t resolveLabelColumn(const Table &table, const std::string &path,
                           const std::string &spec) {
  if (spec == "last")
    return table.columns - 1;
  if (spec == "first")
    return 0;
  char *end = nullptr;
  errno = 0;
  long long number = std::strtoll(spec.c_str(), &end, 10);
  if (!spec.empty() && *end == '\0' && errno == 0) {
    if (number < 1 || number > table.columns)
      throw Error("--label-column " + spec + ": " + path + " has columns 1.." +
                  std::to_string(table.columns));
    return number - 1;
  }
  for (size_t c = 0; c < table.header.size(); ++c)
    if (table.header[c] == spec)
      return static_cast<int64_t>(c);
  throw Error("--label-column takes last, first, a column number (from 1) " +
              std::string(table.header.empty()
                              ? "or, with a header, a column name"
                              : "or a name in " + path + "'s header") +
              ", got '" + spec + "'");
}

struct Normalization {
  std::string mode;
  double scale = 1;
  std::vector<double> shift, divide; ///< per column, for minmax/standard
};

Normalization parseNormalization(const std::string &text) {
  Normalization n;
  if (text == "none" || text == "maxabs" || text == "minmax" ||
      text == "standard") {
    n.mode = text;
    return n;
  }
  if (text.compare(0, 6, "scale=") == 0) {
    std::string number = text.substr(6);
    double value;
    if (!parseNumber(number, value) || value == 0)
      throw Error("--normalize scale=X needs a non-zero number X, got '" +
                  number + "'");
    n.mode = "scale";
    n.scale = value;
    return n;
  }
  throw Error("--normalize takes none, maxabs, minmax, standard or scale=X, "
              "got '" +
              text + "'");
}

} // namespace

int runCsvCommand(const std::vector<std::string> &args) {
  std::vector<std::string> inputs;
  std::string prefix, labelColumnText = "last", valFractionText = "0.2",
                      seedText = "1337", headerText = "auto",
                      normalizeText = "maxabs", delimiterText = ",";
  bool noShuffle = false;
  CommandLine cl("tg-data csv", "FILE.csv[.gz] -o PREFIX [options]", kCsvAbout);
  cl.setOperands("FILE.csv", &inputs, 1, 1);
  cl.addOption("output", 'o', "PREFIX", &prefix,
               "write PREFIX_train.tgcls and PREFIX_val.tgcls (the\n"
               "directory is created when missing); required");
  cl.addOption("label-column", 0, "COL", &labelColumnText,
               "the label column: last, first, a number from 1, or a\n"
               "header name");
  cl.addOption("val-fraction", 0, "X", &valFractionText,
               "fraction of the rows for validation; 0 writes no\n"
               "validation split");
  cl.addOption("shuffle-seed", 0, "S", &seedText,
               "seed of the shuffle that picks the validation rows");
  cl.addSwitch("no-shuffle", &noShuffle,
               "take the last rows of the file for validation instead");
  cl.addOption("header", 0, "auto|yes|no", &headerText,
               "whether the first line names the columns; auto: when a\n"
               "field of it is not a number");
  cl.addOption("normalize", 0, "MODE", &normalizeText,
               "none, maxabs, minmax, standard or scale=X (see above)");
  cl.addOption("delimiter", 0, "C", &delimiterText,
               "the field separator: one character, or 'tab'");
  cl.setEpilogue(kCsvExamples);
  if (!cl.parse(args))
    return 0;

  if (!cl.given("output"))
    throw Error("tg-data csv needs -o PREFIX (see tg-data csv --help)");
  checkOutputPrefix(prefix);
  double valFraction = parseFraction("val-fraction", valFractionText);
  uint64_t seed = parseSeed("shuffle-seed", seedText);
  parseChoice("header", headerText, {"auto", "yes", "no"});
  Normalization norm = parseNormalization(normalizeText);
  char delimiter;
  if (delimiterText == "tab" || delimiterText == "\\t")
    delimiter = '\t';
  else if (delimiterText.size() == 1 && delimiterText != "\"" &&
           delimiterText != "\n")
    delimiter = delimiterText[0];
  else
    throw Error("--delimiter takes one character or 'tab', got '" +
                delimiterText + "'");

  // Read and check the table.
  const std::string &path = inputs[0];
  std::vector<std::string> files = listInputFiles(inputs, {});
  if (files.size() != 1 || files[0] != path)
    throw Error(path + ": a directory; tg-data csv reads one CSV file");
  Table table = readTable(path, readInputFile(path), delimiter, headerText);
  const int64_t rows = static_cast<int64_t>(table.lines.size());
  if (rows == 0)
    throw Error(path + ": no data rows" +
                (table.header.empty() ? "" : " after the header"));
  if (table.columns < 2)
    throw Error(path + ": " + std::to_string(table.columns) +
                " column: a row needs at least one feature and a label");
  const int64_t labelColumn = resolveLabelColumn(table, path, labelColumnText);
  const int64_t features = table.columns - 1;

  std::vector<int64_t> labels(rows);
  int64_t maxLabel = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double value = table.cells[r * table.columns + labelColumn];
    std::string where = path + ":" + std::to_string(table.lines[r]) + ": " +
                        columnName(table, labelColumn) + ": label " +
                        (value == std::floor(value) && std::fabs(value) < 1e18
                             ? std::to_string(static_cast<long long>(value))
                             : formatDouble(value));
    if (value < 0)
      throw Error(where + " is negative: labels are classes 0, 1, ...");
    if (value != std::floor(value))
      throw Error(where + " is not an integer");
    if (value >= 2147483647.0)
      throw Error(where + " is too large for an int32 class");
    labels[r] = static_cast<int64_t>(value);
    maxLabel = std::max(maxLabel, labels[r]);
  }
  const int64_t classes = maxLabel + 1;

  // Split.
  const int64_t valRows =
      static_cast<int64_t>(std::ceil(static_cast<double>(rows) * valFraction));
  if (valRows >= rows)
    throw Error(path + ": " + std::to_string(rows) + " rows: --val-fraction " +
                valFractionText + " leaves none for training");
  std::vector<int64_t> order(rows);
  for (int64_t r = 0; r < rows; ++r)
    order[r] = r;
  if (!noShuffle) {
    Rng rng(seed);
    for (int64_t i = rows - 1; i > 0; --i)
      std::swap(order[i], order[rng.below(static_cast<uint64_t>(i) + 1)]);
  }
  std::vector<int64_t> trainRows(order.begin(), order.end() - valRows);
  std::vector<int64_t> valRowList(order.end() - valRows, order.end());
  std::sort(trainRows.begin(), trainRows.end());
  std::sort(valRowList.begin(), valRowList.end());

  // Features without the label column, and normalization from train only.
  std::vector<int64_t> featureColumns;
  for (int64_t c = 0; c < table.columns; ++c)
    if (c != labelColumn)
      featureColumns.push_back(c);
  auto cell = [&](int64_t row, int64_t f) {
    return table.cells[row * table.columns + featureColumns[f]];
  };
  const double trainCount = static_cast<double>(trainRows.size());
  std::string normNote;
  if (norm.mode == "maxabs") {
    double largest = 0;
    for (int64_t r : trainRows)
      for (int64_t f = 0; f < features; ++f)
        largest = std::max(largest, std::fabs(cell(r, f)));
    norm.scale = largest > 0 ? largest : 1;
    normNote = "maxabs, every feature divided by " + formatDouble(norm.scale) +
               " (the largest |value| in the train split)";
  } else if (norm.mode == "minmax" || norm.mode == "standard") {
    norm.shift.assign(features, 0);
    norm.divide.assign(features, 1);
    int64_t constant = 0;
    for (int64_t f = 0; f < features; ++f) {
      double shift, spread;
      if (norm.mode == "minmax") {
        double lo = cell(trainRows[0], f), hi = lo;
        for (int64_t r : trainRows) {
          lo = std::min(lo, cell(r, f));
          hi = std::max(hi, cell(r, f));
        }
        shift = lo;
        spread = hi - lo;
      } else {
        double sum = 0;
        for (int64_t r : trainRows)
          sum += cell(r, f);
        double mean = sum / trainCount, squares = 0;
        for (int64_t r : trainRows)
          squares += (cell(r, f) - mean) * (cell(r, f) - mean);
        shift = mean;
        spread = std::sqrt(squares / trainCount);
      }
      norm.shift[f] = shift;
      if (spread > 0)
        norm.divide[f] = spread;
      else
        ++constant;
    }
    normNote = norm.mode == "minmax"
                   ? "minmax, each feature to [0, 1] by the train split's "
                     "min and max"
                   : "standard, each feature to mean 0 and std 1 over the "
                     "train split";
    if (constant > 0)
      normNote += " (" + std::to_string(constant) + " constant feature" +
                  (constant == 1 ? "" : "s") + " shifted only)";
  } else if (norm.mode == "scale") {
    normNote = "every feature divided by " + formatDouble(norm.scale);
  } else {
    normNote = "none";
  }
  auto normalized = [&](int64_t row, int64_t f) {
    double x = cell(row, f);
    if (norm.mode == "maxabs" || norm.mode == "scale")
      return static_cast<float>(x / norm.scale);
    if (norm.mode == "minmax" || norm.mode == "standard")
      return static_cast<float>((x - norm.shift[f]) / norm.divide[f]);
    return static_cast<float>(x);
  };

  struct Split {
    std::string name;
    const std::vector<int64_t> *rows;
    std::string path;
  };
  std::vector<Split> splits = {{"train", &trainRows, prefix + "_train.tgcls"}};
  if (valRows > 0)
    splits.push_back({"val", &valRowList, prefix + "_val.tgcls"});
  std::vector<std::string> outputs;
  for (const Split &split : splits)
    outputs.push_back(split.path);
  checkOutputs(outputs, files);
  prepareOutputDirectory(prefix);

  // Report and write.
  std::string headerNote =
      table.header.empty() ? "no header" : "header on the first line";
  std::printf("rows: %lld, %lld feature%s + label (%s; %s)\n",
              static_cast<long long>(rows), static_cast<long long>(features),
              features == 1 ? "" : "s", columnName(table, labelColumn).c_str(),
              headerNote.c_str());
  std::vector<int64_t> histogram(classes, 0);
  for (int64_t label : labels)
    ++histogram[label];
  std::string empty;
  int64_t emptyClasses = 0;
  for (int64_t c = 0; c < classes; ++c)
    if (histogram[c] == 0 && ++emptyClasses <= 5)
      empty += (empty.empty() ? "" : ", ") + std::to_string(c);
  std::printf("classes: %lld (labels 0..%lld)\n",
              static_cast<long long>(classes),
              static_cast<long long>(maxLabel));
  std::fflush(stdout); // a warning follows the lines before it
  if (emptyClasses > 0)
    std::fprintf(stderr,
                 "tg-data: warning: %s: %lld of the %lld classes have no "
                 "rows (%s%s); are the labels numbered from 1?\n",
                 path.c_str(), static_cast<long long>(emptyClasses),
                 static_cast<long long>(classes), empty.c_str(),
                 emptyClasses > 5 ? ", ..." : "");
  std::printf("normalize: %s\n", normNote.c_str());
  for (const Split &split : splits) {
    const std::vector<int64_t> &rowList = *split.rows;
    std::vector<float> x;
    x.reserve(rowList.size() * features);
    std::vector<int64_t> y;
    y.reserve(rowList.size());
    for (int64_t r : rowList) {
      for (int64_t f = 0; f < features; ++f)
        x.push_back(normalized(r, f));
      y.push_back(labels[r]);
    }
    writeClassData(split.path, static_cast<int64_t>(rowList.size()), features,
                   classes, x, y);
    std::printf("%s: %zu row%s: %s\n", split.name.c_str(), rowList.size(),
                rowList.size() == 1 ? "" : "s", split.path.c_str());
  }
  if (valRows == 0)
    std::printf("val: none (--val-fraction 0)\n");
  return 0;
}

} // namespace data
} // namespace tgc
