//===- Flags.cpp - Command-line flags of a training executable ----*- C++ -*-===//

#include "runtime/train/Flags.h"

#include "runtime/core/Error.h"
#include "runtime/core/FloatFormat.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace tgc {

void FlagParser::addString(const std::string &name, std::string *value,
                           const std::string &meta, const std::string &help) {
  flags_.push_back({name, meta, help, value->empty() ? "" : *value,
                    Kind::String, value});
}

void FlagParser::addInt(const std::string &name, int64_t *value,
                        const std::string &help) {
  flags_.push_back({name, "N", help, std::to_string(*value), Kind::Int, value});
}

void FlagParser::addFloat(const std::string &name, double *value,
                          const std::string &help) {
  flags_.push_back({name, "X", help, formatDouble(*value), Kind::Float, value});
}

void FlagParser::addBool(const std::string &name, bool *value,
                         const std::string &help) {
  flags_.push_back({name, "", help, *value ? "on" : "", Kind::Bool, value});
}

FlagParser::Flag *FlagParser::find(const std::string &name) {
  for (Flag &flag : flags_)
    if (flag.name == name)
      return &flag;
  return nullptr;
}

bool FlagParser::given(const std::string &name) const {
  for (const Flag &flag : flags_)
    if (flag.name == name)
      return flag.given;
  return false;
}

void FlagParser::parse(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0)
      throw Error("unexpected argument '" + arg +
                  "' (flags start with --; see --help)");
    std::string name = arg.substr(2), text;
    bool hasText = false;
    size_t equals = name.find('=');
    if (equals != std::string::npos) {
      text = name.substr(equals + 1);
      name = name.substr(0, equals);
      hasText = true;
    }
    Flag *flag = find(name);
    if (!flag)
      throw Error("unknown flag --" + name + " (see --help)");
    flag->given = true;
    if (flag->kind == Kind::Bool) {
      if (!hasText || text == "true" || text == "1") {
        *static_cast<bool *>(flag->value) = true;
      } else if (text == "false" || text == "0") {
        *static_cast<bool *>(flag->value) = false;
      } else {
        throw Error("--" + name + " takes no value or true/false, got '" +
                    text + "'");
      }
      continue;
    }
    if (!hasText) {
      if (i + 1 >= argc)
        throw Error("--" + name + " needs a value (" + flag->meta + ")");
      text = argv[++i];
    }
    switch (flag->kind) {
    case Kind::String:
      *static_cast<std::string *>(flag->value) = text;
      break;
    case Kind::Int: {
      char *end = nullptr;
      errno = 0;
      long long value = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || errno != 0)
        throw Error("--" + name + " takes an integer, got '" + text + "'");
      *static_cast<int64_t *>(flag->value) = value;
      break;
    }
    case Kind::Float: {
      char *end = nullptr;
      double value = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(value))
        throw Error("--" + name + " takes a number, got '" + text + "'");
      *static_cast<double *>(flag->value) = value;
      break;
    }
    case Kind::Bool:
      break;
    }
  }
}

std::string FlagParser::help(const std::string &header) const {
  std::string out = header;
  for (const Flag &flag : flags_) {
    std::string left = "  --" + flag.name;
    if (!flag.meta.empty())
      left += " " + flag.meta;
    std::string line = left;
    if (line.size() < 28)
      line.append(28 - line.size(), ' ');
    else
      line += "  ";
    line += flag.help;
    if (!flag.defaultText.empty())
      line += " [" + flag.defaultText + "]";
    out += line + "\n";
  }
  return out;
}

} // namespace tgc
