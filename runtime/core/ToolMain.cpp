//===- ToolMain.cpp - The main of a tool with subcommands -------*- C++ -*-===//

#include "runtime/core/ToolMain.h"

#include "runtime/core/Error.h"

#include <cstdio>
#include <new>

namespace tgc {

int runSubcommands(
    const char *tool, const char *usage, int argc, char **argv,
    const std::vector<std::pair<std::string, Subcommand>> &subcommands) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(usage, stderr);
    return 1;
  }
  std::string command = args[0];
  args.erase(args.begin());
  std::string failure;
  try {
    if (command == "-h" || command == "--help" || command == "help") {
      std::fputs(usage, stdout);
      return 0;
    }
    std::string known;
    for (size_t i = 0; i < subcommands.size(); ++i) {
      if (subcommands[i].first == command)
        return subcommands[i].second(args);
      known += (i == 0                        ? ""
                : i + 1 == subcommands.size() ? " or "
                                              : ", ") +
               subcommands[i].first;
    }
    throw Error("unknown subcommand '" + command + "' (expected " + known +
                "; see " + tool + " --help)");
  } catch (const Error &e) {
    failure = e.what();
  } catch (const std::bad_alloc &) {
    failure = "out of memory";
  }
  std::fflush(stdout);
  std::fprintf(stderr, "%s: error: %s\n", tool, failure.c_str());
  return 1;
}

} // namespace tgc
