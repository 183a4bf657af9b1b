//===- SelectStage.cpp - dist-select-stage ----------------------*- C++ -*-===//
#include "distopt/PipelineStages/Passes.h"
#include "distopt/PipelineStages/StageCut.h"

#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"

namespace distopt {
#define GEN_PASS_DEF_DISTSELECTSTAGE
#include "distopt/PipelineStages/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

namespace {
struct SelectStagePass
    : public distopt::impl::DistSelectStageBase<SelectStagePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (rank < 0) {
      module.emitError("dist-select-stage needs rank=<the rank whose stage "
                       "to keep>");
      return signalPassFailure();
    }
    SmallVector<ModuleOp> stages = stageModulesOf(module);
    if (stages.empty()) {
      module.emitError("dist-select-stage: the module has no pipeline stages "
                       "(dist-cut-pipeline-stages makes them)");
      return signalPassFailure();
    }
    ModuleOp first = stages.front();
    auto meshes = first.getOps<dist::MeshOp>();
    auto axis = first->getAttrOfType<StringAttr>(dist::kPipelineAxisAttr);
    if (meshes.empty() || !axis) {
      first.emitError("dist-select-stage: a pipeline stage without its mesh "
                      "or dist.pipeline_axis");
      return signalPassFailure();
    }
    dist::MeshOp mesh = *meshes.begin();
    int64_t axisIndex = mesh.getAxisIndex(axis.getValue());
    if (rank >= mesh.getNumDevices() || axisIndex < 0) {
      mesh.emitError("dist-select-stage: rank ")
          << static_cast<int64_t>(rank) << " is outside mesh @"
          << mesh.getSymName() << " of " << mesh.getNumDevices() << " devices";
      return signalPassFailure();
    }
    int64_t stage = mesh.getCoords(rank)[axisIndex];
    ModuleOp chosen;
    for (ModuleOp m : stages)
      if (m->getAttrOfType<IntegerAttr>(dist::kStageAttr).getInt() == stage)
        chosen = m;
    if (!chosen) {
      module.emitError("dist-select-stage: rank ")
          << static_cast<int64_t>(rank) << " runs stage " << stage
          << ", which the module lacks";
      return signalPassFailure();
    }
    // The stage's attributes (but not its name) and ops become the module's.
    NamedAttrList attrs(chosen->getAttrDictionary());
    attrs.erase(SymbolTable::getSymbolAttrName());
    attrs.erase(SymbolTable::getVisibilityAttrName());
    for (ModuleOp m : stages)
      if (m != chosen)
        m.erase();
    Block *body = module.getBody();
    body->getOperations().splice(body->end(),
                                 chosen.getBody()->getOperations());
    chosen.erase();
    module->setAttrs(attrs.getDictionary(&getContext()));
  }
};
} // namespace
