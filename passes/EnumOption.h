//===- EnumOption.h - Pass options whose values are enums -------*- C++ -*-===//
//
// A pass option typed by an enum (tg-fuse's fusion, tg-remat's remat, the
// pipeline schedule, ...) parses through llvm::cl::parser<E>, whose error
// for a name it does not know is "Cannot find option named 'x'!". This
// parser says which names the option takes instead:
//
//   for the --schedule option: 'pipedream' is not one of gpipe, 1f1b,
//   interleaved, zb-h1, auto
//
// TGC_ENUM_OPTION(E) makes it llvm::cl's parser for E; it stands once per
// enum, after the enum and before the passes' options (Passes.h.inc).
//
//===----------------------------------------------------------------------===//

#ifndef TGC_PASSES_ENUMOPTION_H
#define TGC_PASSES_ENUMOPTION_H

#include "planning/pipeline/PipelineSchedule.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace mlir::tg {

template <typename E>
class EnumOptionParser : public llvm::cl::generic_parser_base {
protected:
  class OptionInfo : public GenericOptionInfo {
  public:
    OptionInfo(llvm::StringRef name, E value, llvm::StringRef help)
        : GenericOptionInfo(name, help), V(value) {}
    llvm::cl::OptionValue<E> V;
  };
  llvm::SmallVector<OptionInfo, 8> Values;

public:
  EnumOptionParser(llvm::cl::Option &option) : generic_parser_base(option) {}

  using parser_data_type = E;

  unsigned getNumOptions() const override { return Values.size(); }
  llvm::StringRef getOption(unsigned n) const override {
    return Values[n].Name;
  }
  llvm::StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &
  getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// True on error, as llvm::cl's parsers answer.
  bool parse(llvm::cl::Option &option, llvm::StringRef argName,
             llvm::StringRef arg, E &value) {
    llvm::StringRef name = Owner.hasArgStr() ? arg : argName;
    for (const OptionInfo &info : Values)
      if (info.Name == name) {
        value = info.V.getValue();
        return false;
      }
    std::string names;
    for (const OptionInfo &info : Values)
      names += (names.empty() ? "" : ", ") + info.Name.str();
    return option.error("'" + name + "' is not one of " + names);
  }

  template <typename T>
  void addLiteralOption(llvm::StringRef name, const T &value,
                        llvm::StringRef help) {
    Values.emplace_back(name, static_cast<E>(value), help);
    AddLiteralOption(Owner, name);
  }

  void removeLiteralOption(llvm::StringRef name) {
    unsigned n = findOption(name);
    assert(n != ~0u && "option not found");
    Values.erase(Values.begin() + n);
  }
};

} // namespace mlir::tg

#define TGC_ENUM_OPTION(E)                                                     \
  template <>                                                                  \
  class llvm::cl::parser<E> : public ::mlir::tg::EnumOptionParser<E> {         \
  public:                                                                      \
    using ::mlir::tg::EnumOptionParser<E>::EnumOptionParser;                   \
  };

// The pipeline schedule is an option of two stages' passes (tg-auto-shard,
// tg-pipeline-schedule): its parser stands here, once.
TGC_ENUM_OPTION(::mlir::tg::pipeline::ScheduleChoice)

#endif // TGC_PASSES_ENUMOPTION_H
