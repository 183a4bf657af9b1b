//===- HumanBytes.h - byte counts as people read them ----------*- C++ -*-===//
//
// "128 B", "69.50 KiB", "1.25 GiB": the one way the report's text forms
// (full and summary) print sizes.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_LIB_REPORT_HUMANBYTES_H
#define DISTOPT_LIB_REPORT_HUMANBYTES_H

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace distopt {

inline std::string humanBytes(double b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(u ? "%.2f %s" : "%.0f %s", b, units[u]);
  return s;
}

} // namespace distopt

#endif // DISTOPT_LIB_REPORT_HUMANBYTES_H
