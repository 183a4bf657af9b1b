//===- StripDistribution.cpp - dist-strip-distribution ----------*- C++ -*-===//
#include "distopt/Plan/Passes.h"

#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"

namespace distopt {
#define GEN_PASS_DEF_DISTSTRIPDISTRIBUTION
#include "distopt/Plan/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

void distopt::stripDistribution(ModuleOp module) {
  module.walk([](dist::AnnotateOp op) {
    op.getResult().replaceAllUsesWith(op.getInput());
    op.erase();
  });
  for (dist::MeshOp mesh :
       llvm::make_early_inc_range(module.getOps<dist::MeshOp>()))
    mesh.erase();
  module.walk([](Operation *op) {
    op->removeAttr(dist::kShardingAttr);
    op->removeAttr(dist::kCauseAttr);
  });
}

namespace {
struct StripDistributionPass
    : public distopt::impl::DistStripDistributionBase<StripDistributionPass> {
  void runOnOperation() override { stripDistribution(getOperation()); }
};
} // namespace
