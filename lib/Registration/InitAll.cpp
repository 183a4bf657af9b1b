//===- InitAll.cpp - register distopt with an MLIR context ------*- C++ -*-===//
#include "distopt/InitAll.h"

#include "distopt/Dialect/Dist/ExternalModels/ExternalModels.h"
#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/NN/IR/NNDialect.h"
#include "distopt/PipelineStages/Passes.h"
#include "distopt/Plan/Passes.h"
#include "distopt/Training/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void distopt::registerAllDialects(DialectRegistry &registry) {
  registry.insert<dist::DistDialect, nn::NNDialect, func::FuncDialect>();
  // Upstream dialects the sharding passes understand through external models.
  registry.insert<linalg::LinalgDialect, tosa::TosaDialect, arith::ArithDialect,
                  math::MathDialect, tensor::TensorDialect>();
  dist::registerExternalModels(registry);
}

void distopt::buildShardingPipeline(OpPassManager &pm,
                                    const PipelineOptions &options) {
  pm.addPass(dist::createDistPropagateSharding());
  pm.addPass(dist::createDistInsertReshards());
  pm.addPass(createCSEPass());
  dist::DistPartitionOptions partition;
  partition.rank = options.rank;
  pm.addPass(dist::createDistPartition(partition));
  dist::DistReshardToCollectivesOptions lower;
  lower.rank = options.rank;
  pm.addPass(dist::createDistReshardToCollectives(lower));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

namespace {
struct PipelineCLOptions : public PassPipelineOptions<PipelineCLOptions> {
  Option<int64_t> rank{*this, "rank",
                       llvm::cl::desc("partition for this rank (default: the "
                                      "SPMD program of all ranks)"),
                       llvm::cl::init(-1)};
};
} // namespace

void distopt::registerAllPasses() {
  registerPlanPasses();
  registerTrainingPasses();
  dist::registerDistPasses();
  registerPipelineStagesPasses();
  PassPipelineRegistration<PipelineCLOptions>(
      "dist-pipeline",
      "The whole sharding flow on annotated IR: propagate, insert reshards, "
      "partition, lower reshards to collectives, clean up",
      [](OpPassManager &pm, const PipelineCLOptions &cl) {
        PipelineOptions options;
        options.rank = cl.rank;
        buildShardingPipeline(pm, options);
      });
}
