//===- Runner.h - compile a model for a mesh, run it, check it --*- C++ -*-===//
//
// What dist-run does, as a library: compile a model into one program per
// rank, make or read inputs, run the programs on a communicator backend,
// reassemble the outputs, and compare them with a single-device run or with
// expected outputs.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_RUNNER_RUNNER_H
#define DISTOPT_RUNNER_RUNNER_H

#include "distopt/Driver/Compilation.h"

#include "distrt/launcher.h"
#include "distrt/program.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace distopt {

using Programs = std::vector<std::shared_ptr<const distrt::Program>>;

/// One program per rank of a (sharded) compilation, exported to distrt's
/// format and checked: every send has its receive.
llvm::Expected<Programs> exportPrograms(Compilation &compilation);

/// Compiles `modelPath` into one program per rank of the mesh in `options`
/// (one program without a mesh). Weights without a file (hand-written .mlir)
/// get deterministic synthetic values written under `options.workDir`.
llvm::Expected<Programs> compilePrograms(mlir::MLIRContext &ctx,
                                         llvm::StringRef modelPath,
                                         const CompileOptions &options);

/// Model inputs (every input any rank's program takes): read from
/// `input_<i>.pb` files (ONNX TensorProto) in `dir`, in the order of the
/// programs' inputs, or, with an empty `dir`, generated from `seed` (integer
/// inputs that index a table stay inside it).
llvm::Expected<std::vector<distrt::NamedTensor>>
makeInputs(const Programs &programs, llvm::StringRef dir, uint64_t seed);

/// Writes `programs` as a package into `dir` (created if needed):
/// `rank-<N>.pb` per rank and `package.pb` naming them with the mesh and
/// the global inputs and outputs (docs/rank-program.md).
llvm::Error savePackage(const Programs &programs, llvm::StringRef dir);

/// Microbatches the programs' pipeline schedule runs (1 without one).
int64_t microbatchesOf(const Programs &programs);

/// Checks, before anything runs, that every send has its receive: for each
/// pair of ranks the tags (and sizes) sent, in program order, equal those
/// received. A mismatch would deadlock or mix messages.
llvm::Error checkPointToPoint(const Programs &programs);

/// Splits every tensor along dimension 0 into `parts` equal pieces.
llvm::Expected<std::vector<std::vector<distrt::NamedTensor>>>
splitBatch(const std::vector<distrt::NamedTensor> &tensors, int64_t parts);

/// Joins microbatches' tensors along dimension 0.
llvm::Expected<std::vector<distrt::NamedTensor>>
concatBatch(const std::vector<std::vector<distrt::NamedTensor>> &parts);

/// Reads an ONNX TensorProto file; `name` (if given) receives the tensor's
/// name field.
llvm::Expected<distrt::Tensor> readTensorProto(llvm::StringRef path,
                                                   std::string *name = nullptr);

/// Runs every rank once on the in-process backend and reassembles the
/// outputs (a one-step local Session; see Session.h).
llvm::Expected<std::vector<distrt::NamedTensor>>
runLocal(const Programs &programs,
         const std::vector<distrt::NamedTensor> &inputs, int threadsPerRank);

struct Comparison {
  bool ok = true;
  double maxAbs = 0, maxRel = 0;
  std::string message; // first mismatch or problem
};

/// Element-wise |a - b| <= atol + rtol * |b| (exact for integers and bools).
Comparison compareTensors(const distrt::Tensor &actual,
                          const distrt::Tensor &expected, double rtol,
                          double atol);

} // namespace distopt

#endif // DISTOPT_RUNNER_RUNNER_H
