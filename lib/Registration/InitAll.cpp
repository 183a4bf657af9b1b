//===- InitAll.cpp - register distopt with an MLIR context ------*- C++ -*-===//
#include "distopt/InitAll.h"

#include "distopt/Dialect/Dist/ExternalModels/ExternalModels.h"
#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/NN/IR/NNDialect.h"
#include "distopt/Driver/CompilePipeline.h"
#include "distopt/Fusion/Passes.h"
#include "distopt/PipelineStages/Passes.h"
#include "distopt/Plan/Passes.h"
#include "distopt/Training/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"

using namespace mlir;

void distopt::registerAllDialects(DialectRegistry &registry) {
  registry.insert<dist::DistDialect, nn::NNDialect, func::FuncDialect>();
  // Upstream dialects the sharding passes understand through external models.
  registry.insert<linalg::LinalgDialect, tosa::TosaDialect, arith::ArithDialect,
                  math::MathDialect, tensor::TensorDialect>();
  dist::registerExternalModels(registry);
}

void distopt::registerAllPasses() {
  registerPlanPasses();
  registerTrainingPasses();
  dist::registerDistPasses();
  registerPipelineStagesPasses();
  registerFusionPasses();
  registerCompilePipelinePass();
}
