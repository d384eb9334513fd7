//===- Error.cpp - The runtime's error type -----------------------*- C++ -*-===//

#include "runtime/core/Error.h"

#include <cstring>

namespace tgc {

std::string errnoText(int errnum) {
  char buffer[256];
  // GNU strerror_r returns the message, which may or may not be `buffer`.
  return ::strerror_r(errnum, buffer, sizeof(buffer));
}

void throwErrno(const std::string &path, const std::string &what, int errnum) {
  throw Error(path + ": " + what + ": " + errnoText(errnum));
}

} // namespace tgc
