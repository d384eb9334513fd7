//===- Cbc.cpp - Integer programs solved by CBC ---------------------------===//

#include "planning/lp/Cbc.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <optional>

using namespace tg::lp;

namespace {

/// A temporary file removed when it goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// Writes `write`'s text to a new temporary file.
llvm::Error writeTemp(TempFile &file, const std::string &prefix,
                      llvm::StringRef suffix,
                      llvm::function_ref<void(llvm::raw_ostream &)> write) {
  if (llvm::sys::fs::createTemporaryFile(prefix, suffix, file.path))
    return fail("cannot create a temporary file for CBC");
  std::error_code ec;
  llvm::raw_fd_ostream os(file.path, ec);
  if (ec)
    return fail("cannot write " + file.path + ": " + ec.message());
  write(os);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<CbcSolution>
tg::lp::runCbc(llvm::StringRef cbcProgram,
               llvm::function_ref<void(llvm::raw_ostream &)> writeProgram,
               const CbcRun &run) {
  auto cbc = llvm::sys::findProgramByName(cbcProgram);
  if (!cbc || !llvm::sys::fs::can_execute(*cbc))
    return fail("no CBC program '" + cbcProgram +
                "' (Debian package coinor-cbc)");
  TempFile program, solution, log, start;
  if (llvm::Error e = writeTemp(program, run.tempPrefix, "lp", writeProgram))
    return std::move(e);
  if (!run.start.empty())
    if (llvm::Error e =
            writeTemp(start, run.tempPrefix, "start",
                      [&](llvm::raw_ostream &os) { os << run.start; }))
      return std::move(e);
  if (llvm::sys::fs::createTemporaryFile(run.tempPrefix, "sol",
                                         solution.path) ||
      llvm::sys::fs::createTemporaryFile(run.tempPrefix, "log", log.path))
    return fail("cannot create a temporary file for CBC");

  std::string limit = llvm::formatv("{0}", run.seconds).str();
  llvm::SmallVector<llvm::StringRef> args{*cbc, program.path};
  if (!run.start.empty())
    args.append({"mips", start.path});
  for (const std::string &option : run.options)
    args.push_back(option);
  if (run.elapsed)
    args.append({"timeMode", "elapsed"});
  args.append({"sec", limit, "solve", "solu", solution.path});
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log.path.str(),
                                                log.path.str()};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*cbc, args, std::nullopt, redirects,
                                     run.hardStopSeconds, /*MemoryLimit=*/0,
                                     &message);
  if (rc != 0)
    return fail("cbc failed (exit " + llvm::Twine(rc) + ")" +
                (message.empty() ? "" : ": " + message));
  auto text = llvm::MemoryBuffer::getFile(solution.path);
  if (!text || (*text)->getBufferSize() == 0)
    return fail("cbc wrote no solution");

  CbcSolution out;
  auto [status, lines] = (*text)->getBuffer().split('\n');
  out.statusLine = status.str();
  if (status.starts_with("Optimal"))
    out.status = CbcSolution::Status::Optimal;
  else if (status.starts_with("Infeasible"))
    out.status = CbcSolution::Status::Infeasible;
  else if (status.contains_insensitive("infeasible") ||
           status.contains("no integer solution"))
    out.status = CbcSolution::Status::NoSolution;
  else
    out.status = CbcSolution::Status::Stopped;
  if (out.status == CbcSolution::Status::Infeasible ||
      out.status == CbcSolution::Status::NoSolution)
    return out;
  while (!lines.empty()) {
    llvm::StringRef line;
    std::tie(line, lines) = lines.split('\n');
    llvm::SmallVector<llvm::StringRef> fields;
    line.split(fields, ' ', -1, /*KeepEmpty=*/false);
    // An "**" before the index marks a value CBC thinks is off a bound.
    if (!fields.empty() && fields[0] == "**")
      fields.erase(fields.begin());
    double value;
    if (fields.size() < 3 || fields[2].getAsDouble(value))
      continue;
    out.values.emplace_back(fields[1].str(), value);
  }
  return out;
}
