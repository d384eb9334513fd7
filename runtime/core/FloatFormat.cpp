//===- FloatFormat.cpp - The shortest decimal text of a number --*- C++ -*-===//

#include "runtime/core/FloatFormat.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tgc {

std::string formatDouble(double value) {
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

std::string formatFloat(float value) {
  // printf spells a NaN with its sign bit as "-nan"; a NaN has no sign to
  // tell a reader.
  if (std::isnan(value))
    return "nan";
  char buffer[40];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision,
                  static_cast<double>(value));
    if (std::strtof(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

} // namespace tgc
