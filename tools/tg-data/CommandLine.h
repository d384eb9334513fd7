//===- CommandLine.h - Arguments of a tg-data subcommand --------*- C++ -*-===//
//
// A small parser for "tg-data SUB [operands] [options]": options are
// "--name value", "--name=value" or a one-letter alias ("-o value"), bare
// "--name" for switches, options and operands in any order, "--" ends the
// options. Values are kept as text (so --help shows the defaults as a user
// types them) and converted by the parse* functions, whose errors name the
// option and the bad value.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGDATA_COMMANDLINE_H
#define TGC_TOOLS_TGDATA_COMMANDLINE_H

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {
namespace data {

class CommandLine {
public:
  /// `command` is "tg-data text"; `usage` the synopsis after it; `about` a
  /// paragraph printed by --help before the options.
  CommandLine(std::string command, std::string usage, std::string about);

  /// An option taking a value; `value` holds the default.
  void addOption(const std::string &name, char alias, const std::string &meta,
                 std::string *value, const std::string &help);
  /// An option that may be given several times; every value is kept.
  void addList(const std::string &name, const std::string &meta,
               std::vector<std::string> *values, const std::string &help);
  /// An option without a value.
  void addSwitch(const std::string &name, bool *value, const std::string &help);
  /// The operands: between `min` and `max` of them (max < 0: any number).
  void setOperands(const std::string &meta, std::vector<std::string> *values,
                   int min, int max);
  /// Text printed by --help after the options.
  void setEpilogue(std::string text) { epilogue_ = std::move(text); }

  /// Parses `args`. Returns false after printing the help when -h/--help is
  /// among them; throws tgc::Error on an unknown option, a missing value or
  /// a wrong number of operands.
  bool parse(const std::vector<std::string> &args);

  /// Whether an option was on the command line.
  bool given(const std::string &name) const;

  std::string help() const;
  const std::string &command() const { return command_; }

private:
  enum class Kind { Value, List, Switch };
  struct Option {
    std::string name;
    char alias;
    std::string meta, help, defaultText;
    Kind kind;
    void *target;
    bool given = false;
  };
  Option *find(const std::string &name);
  Option *findAlias(char alias);

  std::string command_, usage_, about_, epilogue_;
  std::vector<Option> options_;
  std::string operandMeta_;
  std::vector<std::string> *operands_ = nullptr;
  int minOperands_ = 0, maxOperands_ = 0;
};

/// "--name" values: each throws tgc::Error "--name takes ..., got 'text'".
double parseFraction(const std::string &name, const std::string &text);
int64_t parsePositive(const std::string &name, const std::string &text);
uint64_t parseSeed(const std::string &name, const std::string &text);
/// One of `choices`, or an error listing them.
const std::string &parseChoice(const std::string &name, const std::string &text,
                               const std::vector<std::string> &choices);

} // namespace data
} // namespace tgc

#endif // TGC_TOOLS_TGDATA_COMMANDLINE_H
