//===- RegatherParameters.cpp - parameters gathered again for backward ----===//
#include "distopt/Training/RegatherParameters.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

/// Backward and optimizer ops run after every forward op of the step.
static bool afterForward(Operation *op) {
  auto phase = op->getAttrOfType<StringAttr>(distopt::nn::kPhaseAttr);
  return phase &&
         (phase.getValue() == "backward" || phase.getValue() == "optimizer");
}

int64_t distopt::regatherParametersForBackward(ModuleOp module) {
  SmallVector<dist::ReshardOp> reshards;
  module.walk([&](dist::ReshardOp r) {
    if (r.getInput().getDefiningOp<nn::WeightOp>())
      reshards.push_back(r);
  });
  int64_t copied = 0;
  for (dist::ReshardOp r : reshards) {
    SmallVector<OpOperand *> late;
    bool forwardUse = false;
    Operation *first = nullptr;
    for (OpOperand &use : r.getResult().getUses()) {
      Operation *user = use.getOwner();
      if (!afterForward(user)) {
        forwardUse = true;
        continue;
      }
      late.push_back(&use);
      if (user->getBlock() != r->getBlock())
        return copied; // not a straight-line step; leave it as it is
      if (!first || user->isBeforeInBlock(first))
        first = user;
    }
    if (!forwardUse || late.empty())
      continue;
    OpBuilder b(first);
    auto again = cast<dist::ReshardOp>(b.clone(*r));
    std::string reason = r.getReason().value_or("").str();
    again.setReason(reason + "; gathered again for backward (the forward "
                             "copy is freed after forward)");
    for (OpOperand *use : late)
      use->set(again.getResult());
    ++copied;
  }
  return copied;
}
