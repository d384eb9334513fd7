//===- tg-data.cpp - Prepare data for tgc training --------------*- C++ -*-===//
//
// tg-data SUBCOMMAND ...: `text` tokenizes text into llm.c token shards,
// `csv` turns a CSV table into classification files, `info` describes either
// kind of file. It is plain C++ on the runtime's data writers and readers,
// so the files it writes are the files training reads.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "tools/tg-data/Commands.h"

#include <cstdio>
#include <new>
#include <string>
#include <vector>

namespace {

const char *const kUsage =
    "usage: tg-data SUBCOMMAND [ARGS...]\n"
    "\n"
    "Prepares training data in the formats tgc's training executables read.\n"
    "\n"
    "subcommands:\n"
    "  text   tokenize text files into llm.c token shards (.bin): byte-level\n"
    "         or GPT-2 BPE, a train and a validation split\n"
    "  csv    convert a CSV table (features and an integer label per row,\n"
    "         plain or gzipped) into classification files (.tgcls)\n"
    "  info   describe a token shard or a classification file\n"
    "\n"
    "Run 'tg-data SUBCOMMAND --help' for the options of each.\n";

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 1;
  }
  std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "-h" || command == "--help" || command == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (command == "text")
      return tgc::data::runTextCommand(args);
    if (command == "csv")
      return tgc::data::runCsvCommand(args);
    if (command == "info")
      return tgc::data::runInfoCommand(args);
    throw tgc::Error("unknown subcommand '" + command +
                     "' (expected text, csv or info; see tg-data --help)");
  } catch (const tgc::Error &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tg-data: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc &) {
    std::fflush(stdout);
    std::fprintf(stderr, "tg-data: error: out of memory\n");
    return 1;
  }
}
