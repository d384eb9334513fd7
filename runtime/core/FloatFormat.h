//===- FloatFormat.h - The shortest decimal text of a number ----*- C++ -*-===//
//
// Messages, flag help and the JSON writer (JsonText.h) print numbers with the
// fewest digits that read back to the same value, in printf's %g style
// ("0.001", "1e-05", "2"): a float32 loss prints as the float it is, not as
// the 17 digits of the double it widens to.
//
//===----------------------------------------------------------------------===//

#ifndef TGC_RUNTIME_CORE_FLOATFORMAT_H
#define TGC_RUNTIME_CORE_FLOATFORMAT_H

#include <string>

namespace tgc {

/// The shortest "%.Ng" text that strtod reads back to `value`.
std::string formatDouble(double value);

/// The shortest "%.Ng" text that strtof reads back to `value`; a NaN is
/// "nan" whatever its sign bit.
std::string formatFloat(float value);

} // namespace tgc

#endif // TGC_RUNTIME_CORE_FLOATFORMAT_H
