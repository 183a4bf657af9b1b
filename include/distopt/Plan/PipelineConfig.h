//===- PipelineConfig.h - the pipeline a plan asks for ----------*- C++ -*-===//
#ifndef DISTOPT_PLAN_PIPELINECONFIG_H
#define DISTOPT_PLAN_PIPELINECONFIG_H

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace distopt {

/// Recorded on the module as `dist.pipeline` by the plan's pipeline section.
struct PipelineConfig {
  std::string axis = "pp";
  std::string split;
  int64_t microbatches = 1;
  std::string schedule = "1f1b"; // or "gpipe"
};

std::optional<PipelineConfig> getPipelineConfig(mlir::ModuleOp module);
void setPipelineConfig(mlir::ModuleOp module, const PipelineConfig &config);

} // namespace distopt

#endif // DISTOPT_PLAN_PIPELINECONFIG_H
