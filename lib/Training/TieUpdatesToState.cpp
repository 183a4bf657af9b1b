//===- TieUpdatesToState.cpp - dist-tie-updates-to-state --------*- C++ -*-===//
#include "distopt/Training/Passes.h"

#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/Transforms/ValueSharding.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

namespace distopt {
#define GEN_PASS_DEF_DISTTIEUPDATESTOSTATE
#include "distopt/Training/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

void distopt::tieUpdatesToState(ModuleOp module) {
  std::map<std::string, Value> state;
  module.walk([&](Operation *op) {
    if (isa<nn::WeightOp, nn::VariableOp>(op))
      state.emplace(nn::getPersistentKey(op), op->getResult(0));
  });
  module.walk([&](func::FuncOp func) {
    SmallVector<Attribute> shardings(func.getNumResults());
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto key = func.getResultAttrOfType<StringAttr>(i, nn::kUpdatesAttr);
      if (!key)
        continue;
      auto it = state.find(key.str());
      if (it != state.end())
        shardings[i] = dist::getValueSharding(it->second, {});
    }
    dist::setResultAttrs(func, dist::kShardingAttr, shardings);
  });
}

namespace {
struct TieUpdatesToStatePass
    : public distopt::impl::DistTieUpdatesToStateBase<TieUpdatesToStatePass> {
  void runOnOperation() override {
    if (isTrainingStep(getOperation()))
      tieUpdatesToState(getOperation());
  }
};
} // namespace
