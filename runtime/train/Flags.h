//===- Flags.h - Command-line flags of a training executable ------*- C++ -*-===//
//
// A small, dependency-free flag parser: "--name value" or "--name=value",
// booleans as bare "--name". Every flag has a default (shown by --help) and a
// one-line description. Unknown flags and malformed values are errors that
// name the flag and suggest --help.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_TRAIN_FLAGS_H
#define TGC_RUNTIME_TRAIN_FLAGS_H

#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

class FlagParser {
public:
  explicit FlagParser(std::string program) : program_(std::move(program)) {}

  void addString(const std::string &name, std::string *value,
                 const std::string &meta, const std::string &help);
  void addInt(const std::string &name, int64_t *value, const std::string &help);
  void addFloat(const std::string &name, double *value,
                const std::string &help);
  void addBool(const std::string &name, bool *value, const std::string &help);

  /// Parses argv[1..argc); throws tgc::Error on an unknown flag, a missing
  /// or malformed value.
  void parse(int argc, char **argv);

  /// Whether a flag was given on the command line (not just defaulted).
  bool given(const std::string &name) const;

  std::string help(const std::string &header) const;

private:
  enum class Kind { String, Int, Float, Bool };
  struct Flag {
    std::string name, meta, help, defaultText;
    Kind kind;
    void *value;
    bool given = false;
  };
  Flag *find(const std::string &name);

  std::string program_;
  std::vector<Flag> flags_;
};

} // namespace tgc

#endif // TGC_RUNTIME_TRAIN_FLAGS_H
