//===- PersistComputeCopies.cpp - dist-persist-compute-copies -------------===//
//
// A mixed-precision step casts each f32 master to the compute dtype where
// forward reads it: one pass over every parameter per step (4 bytes read,
// 2 written) before forward can start. As Megatron keeps bf16 model
// weights beside its f32 main params, the copy here is state instead: a
// variable `<key>/compute_copy` that forward reads, whose next value the
// step computes from the updated master, beside the master's update (where
// the cpu target rounds it in the update's own pass, dist-fuse-for-target).
//
//===----------------------------------------------------------------------===//
#include "distopt/Training/PersistComputeCopies.h"
#include "distopt/Training/Passes.h"

#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/Transforms/ValueSharding.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <map>
#include <set>

namespace distopt {
#define GEN_PASS_DEF_DISTPERSISTCOMPUTECOPIES
#include "distopt/Training/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

/// A cast of a float tensor to a narrower float type.
static bool narrows(nn::CastOp c) {
  auto from = dyn_cast<FloatType>(c.getInput().getType().getElementType());
  auto to = dyn_cast<FloatType>(c.getType().getElementType());
  return from && to && to.getWidth() < from.getWidth();
}

static int64_t persistInFunction(func::FuncOp func) {
  std::map<std::string, unsigned> updateOf;
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (auto key = func.getResultAttrOfType<StringAttr>(i, nn::kUpdatesAttr))
      updateOf.emplace(key.str(), i);
  if (updateOf.empty())
    return 0;
  Block &body = func.getBody().front();
  std::set<std::string> names;
  body.walk([&](nn::VariableOp v) { names.insert(v.getName().str()); });
  // The casts forward reads (at the top of the step, before any loop over
  // microbatches): one per trained parameter, the first.
  SmallVector<std::pair<nn::CastOp, std::string>> casts;
  std::set<std::string> seen;
  for (Operation &op : body) {
    auto c = dyn_cast<nn::CastOp>(op);
    if (!c || c->use_empty() || !narrows(c))
      continue;
    auto w = c.getInput().getDefiningOp<nn::WeightOp>();
    if (!w)
      continue;
    std::string key = nn::getPersistentKey(w);
    if (!updateOf.count(key) || names.count(key + "/compute_copy") ||
        !seen.insert(key).second)
      continue;
    casts.push_back({c, key});
  }
  if (casts.empty())
    return 0;
  Operation *ret = body.getTerminator();
  OpBuilder b(func.getContext());
  SmallVector<unsigned> indices;
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  SmallVector<Value> next;
  for (auto &[c, key] : casts) {
    std::string name = key + "/compute_copy";
    b.setInsertionPoint(c);
    auto copy = nn::VariableOp::create(b, c.getLoc(), c.getType(),
                                       b.getStringAttr(name));
    // The cast's layout (and ZeRO-1/2's dist.gathered_once) carry over, so
    // forward reads the copy as it read the cast.
    copy->setDiscardableAttrs(c->getDiscardableAttrDictionary());
    copy->setAttr(nn::kCopyOfAttr, b.getStringAttr(key));
    c.getResult().replaceAllUsesWith(copy.getResult());
    Type element = c.getType().getElementType();
    c.erase();

    // The master's next value (after the update, clipping and any skip of
    // a non-finite step), rounded where it is made.
    Value master = ret->getOperand(updateOf[key]);
    b.setInsertionPoint(ret);
    auto rounded = nn::CastOp::create(
        b, master.getLoc(),
        cast<RankedTensorType>(master.getType()).clone(element), master);
    rounded->setAttr(nn::kPhaseAttr, b.getStringAttr("optimizer"));
    if (dist::ShardingAttr s = dist::getValueSharding(master, {}))
      dist::setValueSharding(rounded.getResult(), s);

    SmallVector<NamedAttribute> resultAttrs = {
        b.getNamedAttr(nn::kNameAttr, b.getStringAttr("update:" + name)),
        b.getNamedAttr(nn::kUpdatesAttr, b.getStringAttr(name))};
    // Written back in place: laid out as the variable is (as
    // dist-tie-updates-to-state does for the other updates).
    if (dist::ShardingAttr s = dist::getValueSharding(copy.getResult(), {}))
      resultAttrs.push_back(b.getNamedAttr(dist::kShardingAttr, s));
    indices.push_back(func.getNumResults());
    types.push_back(rounded.getType());
    attrs.push_back(b.getDictionaryAttr(resultAttrs));
    next.push_back(rounded.getResult());
  }
  func.insertResults(indices, types, attrs);
  ret->insertOperands(ret->getNumOperands(), next);
  return static_cast<int64_t>(casts.size());
}

int64_t distopt::persistComputeCopies(ModuleOp module) {
  int64_t made = 0;
  module.walk([&](func::FuncOp func) {
    if (!func.isExternal())
      made += persistInFunction(func);
  });
  return made;
}

namespace {
struct PersistComputeCopiesPass
    : public distopt::impl::DistPersistComputeCopiesBase<
          PersistComputeCopiesPass> {
  void runOnOperation() override {
    if (isTrainingStep(getOperation()))
      persistComputeCopies(getOperation());
  }
};
} // namespace
