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

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t blocks = size;
    if (blocks == 0) {
      // The module's own mesh; without one (or without the axis) there is
      // nothing to rewrite for: dist-apply-plan says what is missing.
      for (auto mesh : module.getOps<dist::MeshOp>())
        for (auto [i, name] : llvm::enumerate(mesh.getAxisNames()))
          if (cast<StringAttr>(name).getValue() == axis)
            blocks = mesh.getAxisSizes()[i];
    }
    if (failed(plan::applyRingAttention(module, axis, blocks, balance)))
      signalPassFailure();
  }
};
} // namespace
