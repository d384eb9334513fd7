//===- ToolMain.h - The main of a tool with subcommands ---------*- C++ -*-===//
//
// tg-data and tg-ckpt are `TOOL SUBCOMMAND ARGS...`: no arguments print the
// usage and fail, `help`/`-h`/`--help` print it, an unknown subcommand is
// an error naming the known ones, and a tgc::Error (or running out of
// memory) becomes one line "TOOL: error: ..." on stderr and exit status 1.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_TOOLMAIN_H
#define TGC_RUNTIME_CORE_TOOLMAIN_H

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tgc {

using Subcommand = std::function<int(const std::vector<std::string> &)>;

/// Runs the subcommand argv[1] names with the arguments after it and
/// returns the exit status.
int runSubcommands(
    const char *tool, const char *usage, int argc, char **argv,
    const std::vector<std::pair<std::string, Subcommand>> &subcommands);

} // namespace tgc

#endif // TGC_RUNTIME_CORE_TOOLMAIN_H
