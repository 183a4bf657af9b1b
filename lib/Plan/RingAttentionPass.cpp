//===- RingAttentionPass.cpp - dist-ring-attention --------------*- C++ -*-===//
#include "PlanUtils.h"
#include "distopt/Plan/Passes.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/NN/IR/NNDialect.h"

namespace distopt {
#define GEN_PASS_DEF_DISTRINGATTENTION
#include "distopt/Plan/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {
struct RingAttentionPass
    : public distopt::impl::DistRingAttentionBase<RingAttentionPass> {
  using Base::Base;

  RingAttentionPass(const DistRingAttentionOptions &options,
                    std::shared_ptr<const cost::MachineProfile> machineProfile,
                    std::vector<AttentionDecision> *decisions)
      : Base(options), profile(std::move(machineProfile)),
        decisions(decisions) {}

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (attention != "ring" && attention != "auto") {
      module.emitError("dist-ring-attention: attention=")
          << attention << "; expected ring or auto";
      return signalPassFailure();
    }
    // Balancing mirrors the chunks of the ring the plan names: it is no
    // part of a choice that may not pick ring.
    if (balance && attention != "ring") {
      module.emitError("dist-ring-attention: balance needs attention=ring");
      return signalPassFailure();
    }
    plan::RingAttentionOptions options;
    options.axis = axis;
    options.blocks = size;
    options.balance = balance;
    options.choose = attention == "auto";
    options.training = training;
    if (memoryBudget > 0)
      options.memoryBudget = memoryBudget;
    // The mesh: the option's, else the module's own. Without one (or
    // without the axis) there is nothing to rewrite for: dist-apply-plan
    // says what is missing.
    if (!mesh.empty()) {
      auto axes = parseMeshSpec(mesh, "mesh");
      if (!axes) {
        module.emitError(llvm::toString(axes.takeError()));
        return signalPassFailure();
      }
      for (const MeshAxis &a : *axes) {
        options.meshAxes.push_back(a.name);
        options.meshSizes.push_back(a.size);
      }
    } else {
      for (auto meshOp : module.getOps<dist::MeshOp>())
        for (auto [i, name] : llvm::enumerate(meshOp.getAxisNames())) {
          options.meshAxes.push_back(cast<StringAttr>(name).str());
          options.meshSizes.push_back(meshOp.getAxisSizes()[i]);
        }
    }
    for (auto [name, extent] :
         llvm::zip_equal(options.meshAxes, options.meshSizes))
      if (name == axis && options.blocks == 0)
        options.blocks = extent;
    options.machine = profile;
    if (!options.machine && options.choose) {
      auto loaded = cost::loadSharedMachineProfile(machine);
      if (!loaded) {
        module.emitError("machine=")
            << machine << ": " << llvm::toString(loaded.takeError());
        return signalPassFailure();
      }
      options.machine = std::move(*loaded);
    }
    if (decisions)
      decisions->clear();
    if (failed(plan::applyRingAttention(module, options, decisions)))
      signalPassFailure();
  }

  std::shared_ptr<const cost::MachineProfile> profile;
  std::vector<AttentionDecision> *decisions = nullptr;
};
} // namespace

std::unique_ptr<mlir::Pass> distopt::createDistRingAttention(
    const DistRingAttentionOptions &options,
    std::shared_ptr<const cost::MachineProfile> machine,
    std::vector<AttentionDecision> *decisions) {
  return std::make_unique<RingAttentionPass>(options, std::move(machine),
                                             decisions);
}
