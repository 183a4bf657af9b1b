//===- Passes.h - pipeline stages as passes ---------------------*- C++ -*-===//
//
// dist-cut-pipeline-stages, dist-order-pipeline-stages and dist-select-stage:
// thin pass wrappers over StageCut.h and StageOrder.h. See Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PIPELINESTAGES_PASSES_H
#define DISTOPT_PIPELINESTAGES_PASSES_H

#include "distopt/Plan/Plan.h"

#include "mlir/Pass/Pass.h"

#include <memory>

namespace distopt {

#define GEN_PASS_DECL
#include "distopt/PipelineStages/Passes.h.inc"

/// dist-cut-pipeline-stages for a plan's parsed pipeline section (whose
/// location diagnostics point at).
std::unique_ptr<mlir::Pass>
createDistCutPipelineStages(const PipelineSpec &pipeline);

#define GEN_PASS_REGISTRATION
#include "distopt/PipelineStages/Passes.h.inc"

} // namespace distopt

#endif // DISTOPT_PIPELINESTAGES_PASSES_H
