//===- RegatherParameters.cpp - parameters gathered again for backward ----===//
#include "distopt/Training/RegatherParameters.h"
#include "distopt/Training/Passes.h"

#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"

namespace distopt {
#define GEN_PASS_DEF_DISTREGATHERPARAMETERS
#include "distopt/Training/Passes.h.inc"
} // namespace distopt

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
    // A parameter, or its cast to a mixed-precision policy's compute dtype
    // (gathered in bf16).
    // A copy ZeRO-1/2 gathers once per step stays whole for backward.
    // The copy may be kept as state (dist-persist-compute-copies).
    Value in = r.getInput();
    Operation *def = in.getDefiningOp();
    if (def && def->hasAttr(dist::kGatheredOnceAttr))
      return;
    if (auto c = dyn_cast_or_null<nn::CastOp>(def))
      def = c.getInput().getDefiningOp();
    if (isa_and_nonnull<nn::WeightOp>(def) ||
        (isa_and_nonnull<nn::VariableOp>(def) && def->hasAttr(nn::kCopyOfAttr)))
      reshards.push_back(r);
  });
  int64_t copied = 0;
  for (dist::ReshardOp r : reshards) {
    // Readers in program order, cut into runs of one phase (forward or
    // backward): with gradient accumulation forward and backward alternate
    // per microbatch. Each run after the first reads its own copy.
    SmallVector<Operation *> readers;
    bool straight = true;
    for (Operation *user : r.getResult().getUsers()) {
      straight = straight && user->getBlock() == r->getBlock();
      if (!llvm::is_contained(readers, user))
        readers.push_back(user);
    }
    if (!straight || readers.size() < 2)
      continue;
    llvm::sort(readers, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    std::string reason = r.getReason().value_or("").str();
    Value current = r.getResult();
    for (size_t i = 1; i < readers.size(); ++i) {
      if (afterForward(readers[i]) != afterForward(readers[i - 1])) {
        OpBuilder b(readers[i]);
        auto again = cast<dist::ReshardOp>(b.clone(*r));
        again.setReason(reason + (afterForward(readers[i])
                                      ? "; gathered again for backward (the "
                                        "forward copy is freed after forward)"
                                      : "; gathered again for the next "
                                        "microbatch's forward"));
        current = again.getResult();
        ++copied;
      }
      readers[i]->replaceUsesOfWith(r.getResult(), current);
    }
  }
  return copied;
}

namespace {
struct RegatherParametersPass
    : public distopt::impl::DistRegatherParametersBase<RegatherParametersPass> {
  void runOnOperation() override {
    distopt::regatherParametersForBackward(getOperation());
  }
};
} // namespace
