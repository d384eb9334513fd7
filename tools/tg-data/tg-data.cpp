//===- tg-data.cpp - Prepare data for tgc training --------------*- C++ -*-===//
//
// tg-data SUBCOMMAND ...: `text` tokenizes text into llm.c token shards,
// `csv` turns a CSV table into classification files, `info` describes either
// kind of file. It is plain C++ on the runtime's data writers and readers,
// so the files it writes are the files training reads.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/ToolMain.h"
#include "tools/tg-data/Commands.h"

#include <cstdio>
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
  return tgc::runSubcommands("tg-data", kUsage, argc, argv,
                             {{"text", tgc::data::runTextCommand},
                              {"csv", tgc::data::runCsvCommand},
                              {"info", tgc::data::runInfoCommand}});
}
