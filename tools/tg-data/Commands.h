//===- Commands.h - The subcommands of tg-data ------------------*- C++ -*-===//
//
// Each subcommand takes the arguments after its name, prints what it did on
// stdout and returns the exit status; bad input is a tgc::Error naming the
// file and the problem, which main prints.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_TOOLS_TGDATA_COMMANDS_H
#define TGC_TOOLS_TGDATA_COMMANDS_H

#include <string>
#include <vector>

namespace tgc {
namespace data {

/// tg-data text: text files to llm.c token shards.
int runTextCommand(const std::vector<std::string> &args);
/// tg-data csv: a CSV table to .tgcls classification files.
int runCsvCommand(const std::vector<std::string> &args);
/// tg-data info: what a token shard or classification file holds.
int runInfoCommand(const std::vector<std::string> &args);

} // namespace data
} // namespace tgc

#endif // TGC_TOOLS_TGDATA_COMMANDS_H
