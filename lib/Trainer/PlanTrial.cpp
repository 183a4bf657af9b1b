//===- PlanTrial.cpp - measure a plan by training it briefly ----*- C++ -*-===//
#include "distopt/Trainer/PlanTrial.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/xxhash.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>

using namespace llvm;
using namespace distopt;

/// The rank programs' serialised bytes, hashed: plans that compile alike
/// (zero1 and zero2 on two ranks) have the same digest.
static std::string programsDigest(const Programs &programs) {
  std::string digest;
  for (const auto &program : programs) {
    std::string bytes;
    {
      google::protobuf::io::StringOutputStream stream(&bytes);
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.SetSerializationDeterministic(true);
      program->proto().SerializeToCodedStream(&coded);
    }
    digest += utohexstr(xxh3_64bits(arrayRefFromStringRef(bytes))) + ".";
  }
  return digest;
}

Expected<autoplan::TrialMeasurement>
distopt::measureTrainingStep(mlir::MLIRContext &ctx, StringRef model,
                             const CompileOptions &options,
                             const TrainerOptions &trainer, int64_t steps,
                             function_ref<bool(StringRef)> seen) {
  // The trial's warnings and remarks would repeat the final compile's.
  std::string firstError;
  mlir::ScopedDiagnosticHandler quiet(&ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error &&
        firstError.empty())
      firstError = d.str();
    return mlir::success();
  });
  auto created = Trainer::create(ctx, model, options, trainer);
  if (!created) {
    std::string message = toString(created.takeError());
    if (!firstError.empty())
      message += ": " + firstError;
    return createStringError(inconvertibleErrorCode(), message);
  }
  Trainer &t = **created;
  autoplan::TrialMeasurement m;
  m.programs = programsDigest(t.programs());
  if (seen(m.programs)) {
    m.ran = false;
    return m;
  }
  std::vector<double> times;
  int64_t peak = 0;
  // The second step is still about 10% slower than later ones (the
  // allocator's and the caches' first use of the step's buffers).
  constexpr int64_t kWarmUp = 2;
  for (int64_t i = 0; i < kWarmUp + steps; ++i) {
    // Batch 0 every time: every data source has it.
    auto r = t.step(0);
    if (!r)
      return r.takeError();
    if (i >= kWarmUp)
      times.push_back(r->ms);
    for (const auto &[rank, stats] : t.session().rankStats())
      peak = std::max(peak, stats.weight_bytes + stats.peak_live_bytes);
  }
  std::sort(times.begin(), times.end());
  // Every process takes the slowest process's times and the largest rank.
  auto all = t.session().allGather(
      formatv("{0:F6} {1:F6} {2}", times[times.size() / 2], times.front(), peak)
          .str());
  if (!all)
    return all.takeError();
  for (const std::string &line : *all) {
    SmallVector<StringRef> fields;
    StringRef(line).split(fields, ' ');
    double median = 0, fastest = 0;
    long long bytes = 0;
    if (fields.size() != 3 || fields[0].getAsDouble(median) ||
        fields[1].getAsDouble(fastest) || fields[2].getAsInteger(10, bytes))
      return createStringError(inconvertibleErrorCode(),
                               "a trial's measurement did not reach every "
                               "process: '" +
                                   line + "'");
    m.medianMs = std::max(m.medianMs, median);
    m.minMs = std::max(m.minMs, fastest);
    m.peakBytes = std::max<int64_t>(m.peakBytes, bytes);
  }
  return m;
}
