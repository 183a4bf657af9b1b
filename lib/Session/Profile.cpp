//===- Profile.cpp - where a rank's run time goes -------------------------===//
#include "distopt/Session/Profile.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/Format.h"

#include <algorithm>

using namespace llvm;

/// The model node an instruction's location names (`loc("/h.0/attn/MatMul"
/// (...))` gives /h.0/attn/MatMul), or "" when it names only a file.
static std::string nodeName(StringRef location) {
  size_t open = location.find('"');
  if (open == StringRef::npos)
    return "";
  StringRef rest = location.drop_front(open + 1);
  StringRef name = rest.take_until([](char c) { return c == '"'; });
  if (rest.drop_front(name.size()).starts_with("\":"))  // loc("file":line:col)
    return "";
  return name.str();
}

void distopt::printProfile(raw_ostream &out, int rank,
                           const distrt::RunStats &stats,
                           size_t slowestShown) {
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
  // The instructions that take the most time: where a kernel or a fusion
  // would pay off.
  std::vector<const distrt::InstructionTime *> slowest;
  for (const distrt::InstructionTime &t : stats.instruction_times)
    if (t.calls > 0)
      slowest.push_back(&t);
  std::stable_sort(slowest.begin(), slowest.end(),
                   [](const auto *a, const auto *b) { return a->seconds > b->seconds; });
  if (slowest.size() > slowestShown)
    slowest.resize(slowestShown);
  if (slowest.empty())
    return;
  os << "  slowest instructions:\n";
  for (const distrt::InstructionTime *t : slowest) {
    os << format("  %12.3f ms %6.1f%%  #%-5d %-16s %s", t->seconds / runs * 1e3,
                 total > 0 ? 100.0 * t->seconds / total : 0.0, t->index, t->op.c_str(),
                 t->output.c_str());
    if (std::string node = nodeName(t->location); !node.empty())
      os << "  at " << node;
    os << "\n";
  }
}
