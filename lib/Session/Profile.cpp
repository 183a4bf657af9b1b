//===- Profile.cpp - where a rank's run time goes -------------------------===//
#include "distopt/Session/Profile.h"

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
  // Where each op ran, when not everything ran on the host; and the rate of
  // the ops whose kernels count their floating-point operations.
  bool devices = false, rates = false;
  for (const distrt::OpTime &t : rows) {
    devices = devices || t.device != "cpu";
    rates = rates || t.flops > 0;
  }
  os << "profile of rank " << rank << " (" << stats.profiled_runs << " run(s); "
     << format("%.1f", total / runs * 1e3) << " ms per run in instructions):\n";
  os << format("  %-22s %10s %12s %7s", "op", "calls/run", "ms/run", "share");
  if (devices)
    os << format(" %-8s", "on");
  if (rates)
    os << format(" %9s", "GFLOP/s");
  os << "\n";
  for (const distrt::OpTime &t : rows) {
    os << format("  %-22s %10.1f %12.3f %6.1f%%", t.op.c_str(), t.calls / runs,
                 t.seconds / runs * 1e3,
                 total > 0 ? 100.0 * t.seconds / total : 0.0);
    if (devices)
      os << format(" %-8s", t.device.c_str());
    if (rates && t.flops > 0 && t.seconds > 0)
      os << format(" %9.1f", t.flops / t.seconds * 1e-9);
    os << "\n";
  }
}
