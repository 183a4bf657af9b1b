//===- ApplyPlanPass.cpp - dist-apply-plan ----------------------*- C++ -*-===//
#include "distopt/Plan/Passes.h"

#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/NN/IR/NNDialect.h"

namespace distopt {
#define GEN_PASS_DEF_DISTAPPLYPLAN
#include "distopt/Plan/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {
struct ApplyPlanPass : public distopt::impl::DistApplyPlanBase<ApplyPlanPass> {
  using Base::Base;

  ApplyPlanPass(std::string meshSpec, Plan plan, PlanFindings *findings,
                std::shared_ptr<const cost::MachineProfile> machineProfile)
      : parsed(std::move(plan)), findings(findings), fromFlags(true),
        profile(std::move(machineProfile)) {
    // The options say what the parsed plan holds, so the pass prints as the
    // textual pipeline that does the same.
    mesh = meshSpec;
    std::vector<std::string> args;
    for (const PlanSpec &spec : parsed->specs) {
      if (spec.source != "--plan")
        args.push_back(spec.source); // a plan file
      else
        llvm::append_range(args, spec.presets);
    }
    plans = args;
    strict = parsed->strict;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<Plan> plan = parsed;
    if (!plan) {
      FailureOr<Plan> p = parsePlans(&getContext(), *plans);
      if (failed(p))
        return signalPassFailure();
      plan = std::move(*p);
      plan->strict |= strict;
    }
    if (failed(declareMesh(module, mesh, fromFlags ? "--mesh" : "mesh")))
      return signalPassFailure();
    std::shared_ptr<const cost::MachineProfile> links = profile;
    if (!links) {
      auto loaded = cost::loadSharedMachineProfile(machine);
      if (!loaded) {
        module.emitError("machine=")
            << machine << ": " << llvm::toString(loaded.takeError());
        return signalPassFailure();
      }
      links = std::move(*loaded);
    }
    // dist-ring-attention's choices come first, in the same findings.
    std::vector<AttentionDecision> chosen;
    if (findings)
      chosen = std::move(findings->attention);
    FailureOr<PlanFindings> found =
        applyPlan(module, *plan, links, std::move(chosen));
    if (failed(found))
      return signalPassFailure();
    if (findings)
      *findings = std::move(*found);
  }

  std::optional<Plan> parsed;
  PlanFindings *findings = nullptr;
  bool fromFlags = false;
  std::shared_ptr<const cost::MachineProfile> profile;
};
} // namespace

std::unique_ptr<mlir::Pass>
distopt::createDistApplyPlan(
    std::string mesh, Plan plan, PlanFindings *findings,
    std::shared_ptr<const cost::MachineProfile> machine) {
  return std::make_unique<ApplyPlanPass>(std::move(mesh), std::move(plan),
                                         findings, std::move(machine));
}
