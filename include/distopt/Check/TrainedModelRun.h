//===- TrainedModelRun.h - run a model with trained weights -----*- C++ -*-===//
//
// A training case checks the trained model the way PyTorch's was checked:
// the forward model, on one device, with the trained parameters in place of
// its initializers, on the case's probe inputs.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_CHECK_TRAINEDMODELRUN_H
#define DISTOPT_CHECK_TRAINEDMODELRUN_H

#include "distrt/launcher.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace distopt {

/// Runs the forward model with `trained` weights (global tensors by
/// initializer name; others read from the model) on one device, on the
/// inputs in `inputDir`; its outputs.
llvm::Expected<std::vector<distrt::NamedTensor>>
runTrainedModel(mlir::MLIRContext &ctx, llvm::StringRef modelPath,
                const std::vector<distrt::NamedTensor> &trained,
                llvm::StringRef inputDir, llvm::StringRef workDir, int threads);

} // namespace distopt

#endif // DISTOPT_CHECK_TRAINEDMODELRUN_H
