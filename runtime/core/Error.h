//===- Error.h - The runtime's error type -------------------------*- C++ -*-===//
//
// Every failure the runtime can report on bad input (a missing or corrupt data
// file, a checkpoint of another model, an unwritable directory, a bad flag) is
// a tgc::Error whose message names the file and the problem, lowercase, with
// the values that disagree. runTraining catches it, prints it and exits 1.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_ERROR_H
#define TGC_RUNTIME_CORE_ERROR_H

#include <stdexcept>
#include <string>

namespace tgc {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message) : std::runtime_error(message) {}
};

/// strerror(errnum) as a std::string (thread safe).
std::string errnoText(int errnum);

/// "<path>: <what>: <strerror(errno)>", for failed system calls.
[[noreturn]] void throwErrno(const std::string &path, const std::string &what,
                             int errnum);

} // namespace tgc

#endif // TGC_RUNTIME_CORE_ERROR_H
