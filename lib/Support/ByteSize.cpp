//===- ByteSize.cpp - memory sizes as users write them ----------*- C++ -*-===//
#include "distopt/Support/ByteSize.h"

#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstdlib>
#include <string>

using namespace llvm;

Expected<int64_t> distopt::parseByteSize(StringRef text) {
  auto bad = [&] {
    return createStringError("'" + text.str() +
                             "' is not a memory size; expected a number and "
                             "a unit, e.g. 80GiB, 512MiB or 1.5GB");
  };
  StringRef s = text.trim();
  size_t digits = s.find_first_not_of("0123456789.");
  StringRef number = s.take_front(digits), unit = s.drop_front(number.size());
  if (number.empty() || number.count('.') > 1)
    return bad();
  double value = std::strtod(number.str().c_str(), nullptr);
  double scale = StringSwitch<double>(unit.trim().lower())
                     .Cases({"", "b"}, 1)
                     .Case("kib", 1024.0)
                     .Case("mib", 1024.0 * 1024)
                     .Case("gib", 1024.0 * 1024 * 1024)
                     .Case("tib", 1024.0 * 1024 * 1024 * 1024)
                     .Case("kb", 1e3)
                     .Case("mb", 1e6)
                     .Case("gb", 1e9)
                     .Case("tb", 1e12)
                     .Default(-1);
  if (scale < 0)
    return bad();
  double bytes = value * scale;
  if (!(bytes >= 1) || bytes > 9e18)
    return createStringError("memory size '" + text.str() +
                             "' must be at least one byte and below 8 EiB");
  return static_cast<int64_t>(std::llround(bytes));
}
