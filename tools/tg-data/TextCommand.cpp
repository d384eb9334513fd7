//===- TextCommand.cpp - tg-data text: text to token shards -----*- C++ -*-===//
//
// Reads the documents (one per file) in a deterministic order, tokenizes them
// into one token stream, and writes its first part as the training split and
// the last --val-fraction of it as the validation split, each as one llm.c
// shard or, with --shard-tokens, as numbered shards. The split is a cut of
// the token stream (as nanoGPT's prepare.py does), so it works for a single
// document too. Everything is tokenized and checked before the first file
// is written.
//
//===----------------------------------------------------------------------===//

#include "tools/tg-data/Commands.h"

#include "runtime/core/Error.h"
#include "runtime/data/TokenData.h"
#include "tools/tg-data/CommandLine.h"
#include "tools/tg-data/Gpt2Tokenizer.h"
#include "tools/tg-data/InputFiles.h"
#include "tools/tg-data/OutputFiles.h"
#include "tools/tg-data/Utf8.h"

#include <cmath>
#include <cstdio>
#include <memory>

namespace tgc {
namespace data {

namespace {

const char *const kTextAbout =
    "Tokenizes text files into llm.c token shards (256 int32 header, uint16\n"
    "tokens) for training a language model: PREFIX_train.bin and\n"
    "PREFIX_val.bin, or PREFIX_train_000000.bin, ... with --shard-tokens.\n"
    "\n"
    "Each file is one document. Directories are read recursively in sorted\n"
    "path order, skipping hidden entries (names starting with '.') and links\n"
    "to directories; --glob filters the files found in directories (files\n"
    "named on the command line are always read). Gzipped files are\n"
    "decompressed. The validation split is the last ceil(tokens * fraction)\n"
    "tokens of the stream (a cut that may fall inside a document, as in\n"
    "nanoGPT's prepare.py), the training split the rest.\n"
    "\n"
    "Tokenizers:\n"
    "  byte  one token per byte, token = byte value (vocabulary 256). Byte\n"
    "        level has no spare id for a separator, so documents are simply\n"
    "        concatenated: the tokens are exactly the bytes of the files.\n"
    "  gpt2  GPT-2's byte-level BPE from --vocab encoder.json and --merges\n"
    "        vocab.bpe; each document is preceded by <|endoftext|> (50256 in\n"
    "        GPT-2's vocabulary), as llm.c's data scripts do, and\n"
    "        \"<|endoftext|>\" inside a file is ordinary text. Input must be\n"
    "        UTF-8: a file that is not is an error naming the byte, unless\n"
    "        --utf8-errors replace reads each invalid sequence as U+FFFD\n"
    "        (as Python's errors=\"replace\").\n";

const char *const kTextExamples =
    "examples:\n"
    "  tg-data text input.txt -o data/shakespeare_char\n"
    "  tg-data text corpus/ --glob '*.txt' -o data/corpus --tokenizer gpt2 \\\n"
    "      --vocab encoder.json --merges vocab.bpe --shard-tokens 100000000\n";

struct Split {
  std::string name;
  const uint16_t *tokens;
  int64_t count;
  std::vector<std::string> paths;
};

} // namespace

int runTextCommand(const std::vector<std::string> &args) {
  std::vector<std::string> inputs, globs;
  std::string prefix, valFractionText = "0.1", tokenizerName, vocabPath,
                      mergesPath, shardTokensText, maxBytesText,
                      utf8ErrorsText = "error";
  CommandLine cl("tg-data text", "FILE_OR_DIR... -o PREFIX [options]",
                 kTextAbout);
  cl.setOperands("FILE_OR_DIR", &inputs, 1, -1);
  cl.addOption("output", 'o', "PREFIX", &prefix,
               "write PREFIX_train.bin and PREFIX_val.bin (the directory is\n"
               "created when missing); required");
  cl.addOption("val-fraction", 0, "X", &valFractionText,
               "fraction of the tokens, from the end, for validation;\n"
               "0 writes no validation split");
  cl.addOption("tokenizer", 0, "byte|gpt2", &tokenizerName,
               "byte or gpt2 (see above) [default: gpt2 when --vocab is\n"
               "given, else byte]");
  cl.addOption("vocab", 0, "encoder.json", &vocabPath,
               "GPT-2's token -> id file (for --tokenizer gpt2)");
  cl.addOption("merges", 0, "vocab.bpe", &mergesPath,
               "GPT-2's merges file (for --tokenizer gpt2)");
  cl.addOption("shard-tokens", 0, "N", &shardTokensText,
               "cut each split into shards of at most N tokens,\n"
               "PREFIX_train_000000.bin, ... (llm.c's layout) [default: one\n"
               "file per split]");
  cl.addList("glob", "PATTERN", &globs,
             "read only files whose name matches PATTERN ('*.py') when\n"
             "walking directories; may be repeated");
  cl.addOption("max-bytes", 0, "N", &maxBytesText,
               "read at most N bytes of input in all (the document that\n"
               "crosses the limit is cut, at a character boundary for gpt2)");
  cl.addOption("utf8-errors", 0, "error|replace", &utf8ErrorsText,
               "what gpt2 does with a file that is not valid UTF-8");
  cl.setEpilogue(kTextExamples);
  if (!cl.parse(args))
    return 0;

  // Options.
  if (!cl.given("output"))
    throw Error("tg-data text needs -o PREFIX (see tg-data text --help)");
  checkOutputPrefix(prefix);
  double valFraction = parseFraction("val-fraction", valFractionText);
  bool gpt2;
  if (cl.given("tokenizer"))
    gpt2 = parseChoice("tokenizer", tokenizerName, {"byte", "gpt2"}) == "gpt2";
  else
    gpt2 = cl.given("vocab") || cl.given("merges");
  if (gpt2 && (!cl.given("vocab") || !cl.given("merges")))
    throw Error(std::string("--tokenizer gpt2 needs ") +
                (cl.given("vocab")    ? "--merges vocab.bpe"
                 : cl.given("merges") ? "--vocab encoder.json"
                                      : "--vocab encoder.json "
                                        "and --merges "
                                        "vocab.bpe"));
  if (!gpt2 && (cl.given("vocab") || cl.given("merges")))
    throw Error("--vocab and --merges are for --tokenizer gpt2, not byte");
  int64_t shardTokens = cl.given("shard-tokens")
                            ? parsePositive("shard-tokens", shardTokensText)
                            : 0;
  if (shardTokens > INT32_MAX)
    throw Error("--shard-tokens " + shardTokensText +
                " is more than a shard holds (2147483647 tokens)");
  int64_t maxBytes =
      cl.given("max-bytes") ? parsePositive("max-bytes", maxBytesText) : -1;
  Utf8Errors utf8Errors = parseChoice("utf8-errors", utf8ErrorsText,
                                      {"error", "replace"}) == "replace"
                              ? Utf8Errors::Replace
                              : Utf8Errors::Error;

  // Inputs.
  std::vector<std::string> files = listInputFiles(inputs, globs);
  if (files.empty()) {
    std::string named;
    for (const std::string &input : inputs)
      named += (named.empty() ? "" : ", ") + input;
    std::string filter;
    for (const std::string &glob : globs)
      filter += (filter.empty() ? " matching '" : "' or '") + glob;
    if (!filter.empty())
      filter += "'";
    throw Error(named + ": empty corpus: no files" + filter + " to read");
  }
  std::unique_ptr<Gpt2Tokenizer> tokenizer;
  if (gpt2)
    tokenizer = std::make_unique<Gpt2Tokenizer>(vocabPath, mergesPath);

  // Tokenize.
  std::vector<uint16_t> tokens;
  int64_t documents = 0, emptyFiles = 0, bytesRead = 0, replaced = 0;
  bool cut = false;
  for (const std::string &path : files) {
    if (maxBytes >= 0 && bytesRead >= maxBytes) {
      cut = true;
      break;
    }
    std::string text = readInputFile(path);
    if (maxBytes >= 0 &&
        bytesRead + static_cast<int64_t>(text.size()) > maxBytes) {
      size_t keep = static_cast<size_t>(maxBytes - bytesRead);
      if (gpt2) // back up to the start of a character
        while (keep > 0 && (static_cast<uint8_t>(text[keep]) & 0xC0) == 0x80)
          --keep;
      text.resize(keep);
      cut = true;
    }
    bytesRead += static_cast<int64_t>(text.size());
    if (text.empty()) {
      ++emptyFiles;
      continue;
    }
    ++documents;
    if (!gpt2) {
      for (char c : text)
        tokens.push_back(static_cast<uint8_t>(c)); // not sign-extended
      continue;
    }
    int64_t fileReplaced = 0;
    text = makeValidUtf8(std::move(text), path, utf8Errors, fileReplaced);
    replaced += fileReplaced;
    tokens.push_back(tokenizer->endOfText());
    tokenizer->encode(text, tokens, path);
  }
  std::string named;
  for (const std::string &input : inputs)
    named += (named.empty() ? "" : ", ") + input;
  if (documents == 0)
    throw Error(named + ": empty corpus: " + std::to_string(files.size()) +
                (files.size() == 1 ? " file holds" : " files hold") +
                " no text");

  // Split.
  const int64_t total = static_cast<int64_t>(tokens.size());
  const int64_t valCount =
      static_cast<int64_t>(std::ceil(static_cast<double>(total) * valFraction));
  if (valCount >= total)
    throw Error(named + ": the corpus has only " + std::to_string(total) +
                (total == 1 ? " token" : " tokens") + ": --val-fraction " +
                valFractionText + " leaves none for training");
  std::vector<Split> splits = {{"train", tokens.data(), total - valCount, {}}};
  if (valCount > 0)
    splits.push_back({"val", tokens.data() + total - valCount, valCount, {}});

  // Outputs: all checked before the first is written.
  std::vector<std::string> outputs;
  for (Split &split : splits) {
    if (shardTokens == 0) {
      split.paths.push_back(prefix + "_" + split.name + ".bin");
    } else {
      int64_t shards = (split.count + shardTokens - 1) / shardTokens;
      for (int64_t k = 0; k < shards; ++k)
        split.paths.push_back(shardPath(prefix, split.name, k));
    }
    outputs.insert(outputs.end(), split.paths.begin(), split.paths.end());
  }
  std::vector<std::string> readPaths = files;
  if (gpt2) {
    readPaths.push_back(vocabPath);
    readPaths.push_back(mergesPath);
  }
  checkOutputs(outputs, readPaths);
  prepareOutputDirectory(prefix);

  // Report what was read, then write.
  std::string note;
  if (emptyFiles > 0)
    note += ", " + std::to_string(emptyFiles) + " empty file" +
            (emptyFiles == 1 ? "" : "s") + " skipped";
  if (cut)
    note += ", input cut at --max-bytes " + std::to_string(maxBytes);
  std::printf("documents: %lld (%lld bytes%s)\n",
              static_cast<long long>(documents),
              static_cast<long long>(bytesRead), note.c_str());
  if (gpt2) {
    std::printf("tokenizer: gpt2 (vocabulary %lld, %lld merges, "
                "<|endoftext|> = %d before each document)\n",
                static_cast<long long>(tokenizer->vocabSize()),
                static_cast<long long>(tokenizer->numMerges()),
                tokenizer->endOfText());
    if (replaced > 0)
      std::printf("replaced %lld invalid UTF-8 sequence%s with U+FFFD\n",
                  static_cast<long long>(replaced), replaced == 1 ? "" : "s");
  } else {
    std::printf("tokenizer: byte (vocabulary 256, no separator between "
                "documents)\n");
  }
  for (const Split &split : splits) {
    for (size_t k = 0; k < split.paths.size(); ++k) {
      int64_t begin = static_cast<int64_t>(k) * shardTokens;
      int64_t count = shardTokens == 0
                          ? split.count
                          : std::min(shardTokens, split.count - begin);
      writeTokenShard(split.paths[k],
                      std::vector<uint16_t>(split.tokens + begin,
                                            split.tokens + begin + count));
    }
    std::string where = split.paths.front();
    if (split.paths.size() > 1)
      where += " ... " + split.paths.back();
    std::printf("%s: %lld tokens, %zu shard%s: %s\n", split.name.c_str(),
                static_cast<long long>(split.count), split.paths.size(),
                split.paths.size() == 1 ? "" : "s", where.c_str());
  }
  if (valCount == 0)
    std::printf("val: none (--val-fraction 0)\n");
  if (shardTokens > 0) {
    std::fflush(stdout); // the warning follows the report
    for (const Split &split : splits) {
      std::vector<std::string> stale = staleShards(
          prefix, split.name, static_cast<int64_t>(split.paths.size()));
      if (!stale.empty())
        std::fprintf(
            stderr,
            "tg-data: warning: %s%s from an earlier run %s left as "
            "is; a glob over the shards would read %s\n",
            stale.front().c_str(),
            stale.size() > 1 ? (" and " + std::to_string(stale.size() - 1) +
                                " more shard" + (stale.size() > 2 ? "s" : ""))
                                   .c_str()
                             : "",
            stale.size() > 1 ? "are" : "is", stale.size() > 1 ? "them" : "it");
    }
  }
  return 0;
}

} // namespace data
} // namespace tgc
