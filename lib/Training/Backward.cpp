//===- Backward.cpp - reverse-mode differentiation of nn IR -----*- C++ -*-===//
#include "distopt/Training/Backward.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/NN/IR/GradientBuilder.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace distopt;

static bool isFloatTensor(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

/// The sum of two gradients of one value when one of them is a gather's
/// (an embedding's rows scattered into zeros): the rows scattered straight
/// into the other gradient. A tied embedding then costs no zero table and
/// no add over the whole vocabulary. Null when neither is such a scatter.
static Value scatterInto(Value a, Value b, nn::GradientBuilder &g) {
  for (int k = 0; k < 2; ++k, std::swap(a, b)) {
    auto scatter = b.getDefiningOp<nn::ScatterAddOp>();
    if (!scatter || !b.use_empty() || a.getType() != b.getType() ||
        !nn::isZeroConstant(scatter.getBase()))
      continue;
    Value sum = g.create<nn::ScatterAddOp>(
        a, scatter.getIndices(), scatter.getUpdates(), scatter.getAxisAttr());
    Operation *zeros = scatter.getBase().getDefiningOp();
    scatter.erase();
    if (zeros->use_empty())
      zeros->erase();
    return sum;
  }
  return Value();
}

/// The ops the seeds may depend on, in program order: those of `block`, after
/// those before each op enclosing it up to the function (a microbatch loop's
/// body reads the weights' transposes computed before the loop).
static SmallVector<Operation *> opsInScope(Block *block) {
  SmallVector<SmallVector<Operation *>> levels;
  Operation *end = nullptr; // the enclosing op: the level stops before it
  for (Block *b = block; b;) {
    SmallVector<Operation *> &level = levels.emplace_back();
    for (Operation &op : *b) {
      if (&op == end)
        break;
      level.push_back(&op);
    }
    end = b->getParentOp();
    if (!end || end->hasTrait<OpTrait::IsIsolatedFromAbove>())
      break;
    b = end->getBlock();
  }
  SmallVector<Operation *> ops;
  for (SmallVector<Operation *> &level : llvm::reverse(levels))
    ops.append(level);
  return ops;
}

/// `ops` (in scope order) with each op outside `block` (a weight's
/// transpose or cast hoisted before a microbatch loop) moved to just
/// before its first reader: differentiated in reverse, its gradient is then
/// made as soon as its readers' are complete, not after the whole backward.
/// A weight gradient made at the end of a loop body would keep every
/// layer's activations and output gradients alive until then.
static SmallVector<Operation *>
withOuterOpsAtFirstUse(ArrayRef<Operation *> ops, Block *block) {
  DenseMap<Operation *, size_t> position;
  for (auto [i, op] : llvm::enumerate(ops))
    if (op->getBlock() == block)
      position[op] = i;
  if (position.size() == ops.size())
    return SmallVector<Operation *>(ops);
  // An outer op's anchor: the earliest position of a reader in `block`,
  // through outer readers' anchors (readers come later in scope order, so
  // they are anchored first going backwards).
  DenseMap<Operation *, size_t> anchor;
  for (Operation *op : llvm::reverse(ops)) {
    if (op->getBlock() == block)
      continue;
    size_t first = ops.size();
    for (Operation *user : op->getUsers()) {
      if (Operation *inBlock = block->findAncestorOpInBlock(*user)) {
        if (auto it = position.find(inBlock); it != position.end())
          first = std::min(first, it->second);
      } else if (auto it = anchor.find(user); it != anchor.end()) {
        first = std::min(first, it->second);
      }
    }
    anchor[op] = first;
  }
  // Stable: outer ops keep their order before the same reader.
  std::vector<std::pair<size_t, Operation *>> keyed;
  for (auto [i, op] : llvm::enumerate(ops)) {
    auto it = anchor.find(op);
    // An outer op nothing in the block reads stays first.
    size_t key =
        it == anchor.end() ? i : (it->second == ops.size() ? 0 : it->second);
    keyed.push_back({key, op});
  }
  std::stable_sort(
      keyed.begin(), keyed.end(), [&](const auto &x, const auto &y) {
        if (x.first != y.first)
          return x.first < y.first;
        // Before the reader at the same key: outer ops first.
        return x.second->getBlock() != block && y.second->getBlock() == block;
      });
  SmallVector<Operation *> out;
  for (auto &[key, op] : keyed)
    out.push_back(op);
  return out;
}

FailureOr<SmallVector<Value>>
distopt::buildGradients(OpBuilder &builder,
                        ArrayRef<std::pair<Value, Value>> seeds,
                        ArrayRef<Value> wrt, bool scatterLookups) {
  if (seeds.empty())
    return SmallVector<Value>(wrt.size());
  SmallVector<Operation *> scope =
      opsInScope(Value(seeds.front().first).getParentBlock());

  // Values that depend on a `wrt` value through float ops...
  DenseSet<Value> fromParams(wrt.begin(), wrt.end());
  for (Operation *op : scope)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return fromParams.contains(v); }))
      for (Value r : op->getResults())
        if (isFloatTensor(r))
          fromParams.insert(r);
  // ... and that the seeds depend on: the ops between are differentiated.
  DenseSet<Value> toSeeds;
  SmallVector<Value> work;
  for (auto &[v, g] : seeds)
    work.push_back(v);
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!fromParams.contains(v) || !toSeeds.insert(v).second)
      continue;
    if (Operation *def = v.getDefiningOp())
      for (Value operand : def->getOperands())
        work.push_back(operand);
  }

  DenseMap<Value, Value> grads;
  auto accumulate = [&](Value v, Value g, nn::GradientBuilder &gb) {
    auto it = grads.find(v);
    if (it == grads.end())
      grads[v] = g;
    else if (Value sum =
                 scatterLookups ? scatterInto(it->second, g, gb) : Value())
      it->second = sum;
    else
      it->second = gb.create<nn::AddOp>(it->second, g);
  };
  nn::GradientBuilder seedBuilder(builder, builder.getUnknownLoc());
  for (auto &[v, g] : seeds)
    accumulate(v, g, seedBuilder);

  // An op is differentiated when it reads a value that depends on the
  // parameters and produces one the seeds depend on (the parameters' own
  // definitions read nothing).
  SmallVector<Operation *> ops;
  for (Operation *op : scope)
    if (llvm::any_of(op->getResults(),
                     [&](Value r) { return toSeeds.contains(r); }) &&
        llvm::any_of(op->getOperands(),
                     [&](Value v) { return fromParams.contains(v); }))
      ops.push_back(op);
  ops =
      withOuterOpsAtFirstUse(ops, Value(seeds.front().first).getParentBlock());
  for (Operation *op : llvm::reverse(ops)) {
    nn::GradientBuilder g(builder, op->getLoc());
    SmallVector<Value> resultGrads;
    for (Value r : op->getResults()) {
      auto it = grads.find(r);
      resultGrads.push_back(it != grads.end()  ? it->second
                            : isFloatTensor(r) ? g.zerosLike(r)
                                               : Value());
    }
    SmallVector<Value> operandGrads(op->getNumOperands());
    if (isa<dist::AnnotateOp>(op)) {
      operandGrads[0] = resultGrads[0];
    } else if (auto rule = dyn_cast<nn::GradientOpInterface>(op)) {
      if (failed(rule.buildGradient(g, resultGrads, operandGrads)))
        return failure();
    } else {
      std::string node = nn::getNodeName(op);
      return op->emitError()
             << (node.empty() ? std::string() : "node '" + node + "' (")
             << op->getName() << (node.empty() ? "" : ")")
             << " has no gradient rule, and it lies between trainable "
                "parameters and the loss; freeze the parameters before it, "
                "or add the rule (GradientOpInterface)";
    }
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
      if (grad && fromParams.contains(operand))
        accumulate(operand, grad, g);
  }
  SmallVector<Value> out;
  for (Value v : wrt)
    out.push_back(grads.lookup(v));
  return out;
}
