//===- Passes.h - plans become annotations ----------------------*- C++ -*-===//
//
// dist-apply-plan, dist-ring-attention and dist-strip-distribution: thin
// pass wrappers over applyPlan, the ring rewrite and stripDistribution
// (Plan.h). See Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PLAN_PASSES_H
#define DISTOPT_PLAN_PASSES_H

#include "distopt/Plan/Plan.h"

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace distopt {

#define GEN_PASS_DECL
#include "distopt/Plan/Passes.h.inc"

/// dist-apply-plan with plans already parsed (the tools parse `--plan` once,
/// with their other flags, and keep each plan's locations for diagnostics).
/// Mesh errors name `--mesh`. `findings`, when given, receives what applying
/// the plan noticed (for the report).
std::unique_ptr<mlir::Pass> createDistApplyPlan(
    std::string mesh, Plan plan, PlanFindings *findings,
    std::shared_ptr<const cost::MachineProfile> machine = nullptr);

/// dist-ring-attention on `machine`'s links (null: its `machine` option);
/// with attention=auto, `decisions` (when given) receives each choice, for
/// the report.
std::unique_ptr<mlir::Pass>
createDistRingAttention(const DistRingAttentionOptions &options,
                        std::shared_ptr<const cost::MachineProfile> machine,
                        std::vector<AttentionDecision> *decisions);

#define GEN_PASS_REGISTRATION
#include "distopt/Plan/Passes.h.inc"

} // namespace distopt

#endif // DISTOPT_PLAN_PASSES_H
