//===- Calibrate.h - measure this machine for the cost model ----*- C++ -*-===//
//
// `dist-run --calibrate`: measures what the cost model needs through the
// runtime and fits a machine profile (docs/cost-model.md, "Calibrating"):
//
//   - GEMM rates per dtype the device runs (host: f32, f64; CUDA: f32,
//     bf16, f16) and shape class, timing the executor's matmul kernel on
//     square products of each class's size;
//   - memory bandwidth: a large copy within the device;
//   - per group size of the backend's communicator (local: 2 and 4 threads;
//     mpi, nccl: 2, 4, ... of the launched processes), each collective over
//     message sizes, fitted to alpha + bytes sent / beta by least squares
//     weighted by relative error, so small messages set alpha and large
//     ones beta.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_RUNNER_CALIBRATE_H
#define DISTOPT_RUNNER_CALIBRATE_H

#include "distopt/CostModel/MachineProfile.h"
#include "distopt/Session/Session.h"

namespace distopt {

struct CalibrationOptions {
  /// A smoke test: the same measurements at small sizes, one run each
  /// (seconds, not a usable profile).
  bool quick = false;
  Backend backend = Backend::Local;
  /// "cpu", "cuda" or "cuda:N".
  std::string device = "cpu";
  int threadsPerRank = 1;
};

struct GemmMeasurement {
  std::string dtype;
  cost::GemmClass gemmClass;
  int64_t size = 0; // m = n = k
  double tflops = 0;
};

struct CollectiveMeasurement {
  std::string kind; // "all_reduce", ...
  int64_t groupSize = 0;
  double bytes = 0;  // per member (all-gather: the gathered result)
  double sent = 0;   // bytes one member sends (cost::bytesSent)
  double us = 0;     // per call
};

struct LinkFit {
  cost::AlphaBeta alphaBeta;
  int points = 0;
  /// Largest |model - measured| / measured over the points.
  double maxRelativeError = 0;
};

struct CalibrationResult {
  cost::MachineProfile profile;
  std::vector<GemmMeasurement> gemms;
  double copyBytes = 0;
  /// Ranks computing at once while the products and kernels were timed,
  /// and the bytes of operands they took in turn (0: the same ones).
  int busyRanks = 1;
  int64_t coldBytes = 0;
  std::vector<CollectiveMeasurement> collectives;
  std::vector<LinkFit> fits;
  double seconds = 0;
  /// Whether this process holds the results (rank 0 under mpi/nccl).
  bool root = true;
};

/// Measures this machine (collectively over `group`'s processes under
/// mpi/nccl).
llvm::Expected<CalibrationResult> calibrate(const CalibrationOptions &options,
                                            const ProcessGroup &group);

/// alpha and beta of `points` (all of one group size) by weighted least
/// squares on time = alpha + sent / beta; alpha is kept non-negative.
LinkFit fitAlphaBeta(const std::vector<CollectiveMeasurement> &points);

/// The short table `dist-run --calibrate` prints.
void printCalibration(const CalibrationResult &result, llvm::raw_ostream &os);

} // namespace distopt

#endif // DISTOPT_RUNNER_CALIBRATE_H
