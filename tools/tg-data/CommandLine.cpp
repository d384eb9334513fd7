//===- CommandLine.cpp - Arguments of a tg-data subcommand ------*- C++ -*-===//

#include "tools/tg-data/CommandLine.h"

#include "runtime/core/Error.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tgc {
namespace data {

CommandLine::CommandLine(std::string command, std::string usage,
                         std::string about)
    : command_(std::move(command)), usage_(std::move(usage)),
      about_(std::move(about)) {}

void CommandLine::addOption(const std::string &name, char alias,
                            const std::string &meta, std::string *value,
                            const std::string &help) {
  options_.push_back({name, alias, meta, help, *value, Kind::Value, value});
}

void CommandLine::addList(const std::string &name, const std::string &meta,
                          std::vector<std::string> *values,
                          const std::string &help) {
  options_.push_back({name, 0, meta, help, "", Kind::List, values});
}

void CommandLine::addSwitch(const std::string &name, bool *value,
                            const std::string &help) {
  options_.push_back({name, 0, "", help, "", Kind::Switch, value});
}

void CommandLine::setOperands(const std::string &meta,
                              std::vector<std::string> *values, int min,
                              int max) {
  operandMeta_ = meta;
  operands_ = values;
  minOperands_ = min;
  maxOperands_ = max;
}

CommandLine::Option *CommandLine::find(const std::string &name) {
  for (Option &option : options_)
    if (option.name == name)
      return &option;
  return nullptr;
}

CommandLine::Option *CommandLine::findAlias(char alias) {
  for (Option &option : options_)
    if (alias != 0 && option.alias == alias)
      return &option;
  return nullptr;
}

bool CommandLine::given(const std::string &name) const {
  for (const Option &option : options_)
    if (option.name == name)
      return option.given;
  return false;
}

bool CommandLine::parse(const std::vector<std::string> &args) {
  std::string seeHelp = " (see " + command_ + " --help)";
  std::vector<std::string> operands;
  bool optionsEnded = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (optionsEnded || arg.size() < 2 || arg[0] != '-') {
      operands.push_back(arg);
      continue;
    }
    if (arg == "--") {
      optionsEnded = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    Option *option = nullptr;
    std::string spelled, text;
    bool hasText = false;
    if (arg[1] == '-') {
      std::string name = arg.substr(2);
      size_t equals = name.find('=');
      if (equals != std::string::npos) {
        text = name.substr(equals + 1);
        name = name.substr(0, equals);
        hasText = true;
      }
      spelled = "--" + name;
      option = find(name);
    } else {
      spelled = arg.substr(0, 2);
      option = arg.size() == 2 ? findAlias(arg[1]) : nullptr;
      if (arg.size() != 2)
        spelled = arg;
    }
    if (!option)
      throw Error("unknown option " + spelled + " for " + command_ + seeHelp);
    option->given = true;
    if (option->kind == Kind::Switch) {
      if (hasText)
        throw Error(spelled + " takes no value, got '" + text + "'");
      *static_cast<bool *>(option->target) = true;
      continue;
    }
    if (!hasText) {
      if (i + 1 >= args.size())
        throw Error(spelled + " needs a value (" + option->meta + ")" +
                    seeHelp);
      text = args[++i];
    }
    if (option->kind == Kind::List)
      static_cast<std::vector<std::string> *>(option->target)->push_back(text);
    else
      *static_cast<std::string *>(option->target) = text;
  }
  int count = static_cast<int>(operands.size());
  if (count < minOperands_)
    throw Error(command_ + " needs " +
                (minOperands_ == 1 ? std::string("an input ")
                                   : std::to_string(minOperands_) + " ") +
                operandMeta_ + seeHelp);
  if (maxOperands_ >= 0 && count > maxOperands_)
    throw Error(command_ + " takes " +
                (maxOperands_ == 1
                     ? std::string("one ")
                     : "at most " + std::to_string(maxOperands_) + " ") +
                operandMeta_ + ", got " + std::to_string(count) + " ('" +
                operands[maxOperands_] + "' is one too many)" + seeHelp);
  if (operands_)
    *operands_ = std::move(operands);
  return true;
}

/// `left` then `text` word-wrapped in a column from kHelpIndent to 79.
static std::string wrapHelp(const std::string &left, const std::string &text) {
  constexpr size_t kHelpIndent = 30, kWidth = 79;
  std::string out = left;
  if (out.size() + 2 > kHelpIndent)
    out += "\n" + std::string(kHelpIndent, ' ');
  else
    out.append(kHelpIndent - out.size(), ' ');
  size_t column = kHelpIndent;
  size_t pos = 0;
  bool firstWord = true;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(" \n", pos);
    if (start == std::string::npos)
      break;
    size_t end = text.find_first_of(" \n", start);
    if (end == std::string::npos)
      end = text.size();
    std::string word = text.substr(start, end - start);
    if (!firstWord && column + 1 + word.size() > kWidth) {
      out += "\n" + std::string(kHelpIndent, ' ');
      column = kHelpIndent;
    } else if (!firstWord) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    firstWord = false;
    pos = end;
  }
  return out + "\n";
}

std::string CommandLine::help() const {
  std::string out = "usage: " + command_ + " " + usage_ + "\n\n" + about_;
  if (!about_.empty() && about_.back() != '\n')
    out += "\n";
  out += "\noptions:\n";
  for (const Option &option : options_) {
    std::string left = "  ";
    left += option.alias ? std::string("-") + option.alias + ", " : "    ";
    left += "--" + option.name;
    if (!option.meta.empty())
      left += " " + option.meta;
    std::string text = option.help;
    if (!option.defaultText.empty())
      text += " [default: " + option.defaultText + "]";
    out += wrapHelp(left, text);
  }
  out += "  -h, --help                  show this help\n";
  if (!epilogue_.empty())
    out += "\n" + epilogue_;
  return out;
}

double parseFraction(const std::string &name, const std::string &text) {
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(value >= 0.0 && value < 1.0))
    throw Error("--" + name + " takes a fraction in [0, 1), got '" + text +
                "'");
  return value;
}

int64_t parsePositive(const std::string &name, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value <= 0)
    throw Error("--" + name + " takes a positive integer, got '" + text + "'");
  return value;
}

uint64_t parseSeed(const std::string &name, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0)
    throw Error("--" + name + " takes a non-negative integer, got '" + text +
                "'");
  return value;
}

const std::string &parseChoice(const std::string &name, const std::string &text,
                               const std::vector<std::string> &choices) {
  std::string list;
  for (size_t k = 0; k < choices.size(); ++k) {
    if (choices[k] == text)
      return choices[k];
    list += (k == 0                    ? ""
             : k + 1 == choices.size() ? " or "
                                       : ", ") +
            choices[k];
  }
  throw Error("--" + name + " takes " + list + ", got '" + text + "'");
}

} // namespace data
} // namespace tgc
