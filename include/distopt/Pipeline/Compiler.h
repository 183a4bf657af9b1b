//===- Compiler.h - from a model file to per-rank modules -------*- C++ -*-===//
//
// The steps every tool shares: load a model (.onnx or .mlir), declare the
// mesh, apply plans, shard the global module once, then partition a copy for
// each rank.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PIPELINE_COMPILER_H
#define DISTOPT_PIPELINE_COMPILER_H

#include "distopt/Import/OnnxImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace distopt {

struct MeshAxis {
  std::string name;
  int64_t size;
};

struct CompileOptions {
  /// "dp=2,tp=4"; empty means a single device.
  std::string meshSpec;
  /// Preset names and plan files, applied in order.
  std::vector<std::string> plans;
  /// Bindings of symbolic input dimensions ("batch" -> 2).
  llvm::StringMap<int64_t> dims;
  /// Drop every mesh, annotation and sharding the model carries: compile it
  /// for one device (the reference a distributed run is checked against).
  bool singleDevice = false;
  /// Values of ONNX graph inputs the importer may read where it needs them
  /// (a test-harness specialisation; see ImportOptions::inputValues).
  llvm::StringMap<InputValues> inputValues;
};

/// Parses a mesh spec "name=size,..."; returns an error message on failure.
llvm::Expected<std::vector<MeshAxis>> parseMeshSpec(llvm::StringRef spec);

/// Parses "name=value,..." dimension bindings.
llvm::Expected<llvm::StringMap<int64_t>> parseDimSpec(llvm::StringRef spec);

/// Loads `.onnx` through the importer, anything else as MLIR.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(mlir::MLIRContext &ctx,
                                            llvm::StringRef path,
                                            const CompileOptions &options);

/// Removes meshes, annotations and sharding attributes: the single-device
/// program of the same model.
void stripDistribution(mlir::ModuleOp module);

/// Declares `dist.mesh @mesh` from the spec, or checks that the module's own
/// mesh agrees with it.
mlir::LogicalResult setMesh(mlir::ModuleOp module, llvm::StringRef spec);

/// Number of devices of the module's mesh (1 without a mesh).
int64_t numDevices(mlir::ModuleOp module);

/// Applies the plans (presets and plan files) as dist.annotate constraints.
mlir::LogicalResult applyPlans(mlir::ModuleOp module,
                               const std::vector<std::string> &plans);

/// Propagates shardings and inserts reshards on the global module.
mlir::LogicalResult shardModule(mlir::ModuleOp module);

/// A copy of a sharded module, partitioned for `rank`, with collectives.
mlir::OwningOpRef<mlir::ModuleOp> partitionForRank(mlir::ModuleOp sharded,
                                                   int64_t rank);

/// Directory relative weight paths resolve against (the model's directory).
std::string weightDirectory(mlir::ModuleOp module, llvm::StringRef modelPath);

} // namespace distopt

#endif // DISTOPT_PIPELINE_COMPILER_H
