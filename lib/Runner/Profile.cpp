//===- Profile.cpp - where a rank's run time goes -------------------------===//
#include "distopt/Runner/Profile.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/Format.h"

#include <algorithm>

using namespace llvm;

void distopt::printProfile(raw_ostream &out, int rank,
                           const distrt::RunStats &stats) {
  // One write of the whole table: under mpirun the processes' tables do
  // not interleave line by line.
  std::string text;
  raw_string_ostream os(text);
  scope_exit write([&] {
    out << text;
    out.flush();
  });
  if (stats.profiled_runs == 0) {
    os << "profile of rank " << rank << ": no profiled run\n";
    return;
  }
  std::vector<distrt::OpTime> rows;
  double total = 0;
  for (const distrt::OpTime &t : stats.op_times)
    if (t.calls > 0) {
      rows.push_back(t);
      total += t.seconds;
    }
  std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.seconds > b.seconds;
  });
  const double runs = static_cast<double>(stats.profiled_runs);
  os << "profile of rank " << rank << " (" << stats.profiled_runs << " run(s); "
     << format("%.1f", total / runs * 1e3) << " ms per run in instructions):\n";
  os << format("  %-22s %10s %12s %7s\n", "op", "calls/run", "ms/run", "share");
  for (const distrt::OpTime &t : rows)
    os << format("  %-22s %10.1f %12.3f %6.1f%%\n", t.op.c_str(),
                 t.calls / runs, t.seconds / runs * 1e3,
                 total > 0 ? 100.0 * t.seconds / total : 0.0);
}
