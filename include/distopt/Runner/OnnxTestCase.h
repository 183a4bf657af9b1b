//===- OnnxTestCase.h - run one ONNX backend test case ----------*- C++ -*-===//
//
// An ONNX backend test case is a directory with model.onnx and
// test_data_set_<k>/{input_<i>.pb, output_<j>.pb}. Each data set compiles
// with its own dimension bindings (the shapes of its inputs), runs on the
// chosen backend and mesh, and is compared with its expected outputs.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_RUNNER_ONNXTESTCASE_H
#define DISTOPT_RUNNER_ONNXTESTCASE_H

#include "distopt/Runner/Session.h"

namespace distopt {

struct RunSettings {
  Backend backend = Backend::Local;
  int threadsPerRank = 1;
  /// Time every instruction (ExecutorOptions::profile).
  bool profile = false;
  /// --device and --no-host-fallback.
  DeviceSettings device;
  double rtol = 1e-4, atol = 1e-5;
};

struct OnnxTestOutcome {
  bool passed = true;
  int dataSets = 0;
  int outputs = 0;
  double maxAbsDiff = 0;
  /// The first mismatch: which output of which data set, and how.
  std::string failure;
};

/// Runs every data set of the case in `caseDir`. Errors (a case that cannot
/// compile or run) are errors; a wrong output is a failed outcome. Under
/// MPI only the root process compares.
llvm::Expected<OnnxTestOutcome> runOnnxTestCase(mlir::MLIRContext &ctx,
                                                llvm::StringRef caseDir,
                                                const CompileOptions &base,
                                                const RunSettings &settings);

} // namespace distopt

#endif // DISTOPT_RUNNER_ONNXTESTCASE_H
