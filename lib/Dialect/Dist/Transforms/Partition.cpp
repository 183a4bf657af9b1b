//===- Partition.cpp - dist-partition ---------------------------*- C++ -*-===//
//
// Rewrites each function from global tensors into what one device computes:
// arguments, results and values take local types, every op is replaced by
// its local form, and reshards keep their source/target shardings plus the
// global type for the collective lowering. Each local op keeps the
// `dist.sharding` of the global value it holds a piece of, so printed
// per-device IR still says what every value is.
//
//===----------------------------------------------------------------------===//
#include "FactorChoice.h"
#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Dist/Transforms/ValueSharding.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace distopt::dist {
#define GEN_PASS_DEF_DISTPARTITION
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace distopt::dist

using namespace mlir;
using namespace distopt::dist;

namespace {

class Partitioner {
public:
  Partitioner(MeshOp mesh, std::optional<SmallVector<int64_t>> coords)
      : mesh(mesh), coords(std::move(coords)),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())),
        replicated(ShardingAttr::getReplicated(mesh.getContext(), meshRef,
                                               mesh.getNumAxes())) {}

  LogicalResult run(FunctionOpInterface func);

private:
  ShardingAttr shardingOf(Value v) {
    auto it = argShardings.find(v);
    if (it != argShardings.end())
      return it->second;
    return getValueSharding(v, replicated);
  }
  LogicalResult partitionOp(Operation *op, OpBuilder &b, IRMapping &map);

  MeshOp mesh;
  std::optional<SmallVector<int64_t>> coords;
  FlatSymbolRefAttr meshRef;
  ShardingAttr replicated;
  /// Shardings of the original entry block's arguments, which stop being
  /// function arguments once the local entry block replaces them.
  DenseMap<Value, ShardingAttr> argShardings;
};

} // namespace

LogicalResult Partitioner::partitionOp(Operation *op, OpBuilder &b,
                                       IRMapping &map) {
  PartitionContext ctx(b, mesh, coords);
  SmallVector<Value> localOperands;
  for (Value v : op->getOperands())
    localOperands.push_back(map.lookupOrDefault(v));

  if (auto reshard = dyn_cast<ReshardOp>(op)) {
    auto global = reshard.getResult().getType();
    auto local = ReshardOp::create(
        b, op->getLoc(), ctx.localType(global, reshard.getTo()),
        localOperands[0], reshard.getFrom(), reshard.getTo(),
        reshard.getReasonAttr(), TypeAttr::get(global));
    map.map(reshard.getResult(), local.getResult());
    return success();
  }

  if (auto recv = dyn_cast<RecvOp>(op)) {
    // A value from another pipeline stage: this device's piece of it.
    auto global = recv.getResult().getType();
    auto local = RecvOp::create(
        b, op->getLoc(), ctx.localType(global, shardingOf(recv.getResult())),
        recv.getMeshAttr(), recv.getAxisAttr(), recv.getPeerAttr(),
        recv.getTagAttr());
    local->setAttrs(op->getDiscardableAttrDictionary());
    map.map(recv.getResult(), local.getResult());
    return success();
  }
  if (isa<SendOp>(op)) {
    b.clone(*op, map);
    return success();
  }

  if (op->getNumResults() && yieldedFor(op->getResult(0))) {
    // A loop over microbatches: its body partitioned in place, its sums the
    // local pieces of theirs.
    OperationState state(op->getLoc(), op->getName());
    state.addAttributes(op->getAttrs());
    for (Value r : op->getResults())
      state.addTypes(
          ctx.localType(cast<RankedTensorType>(r.getType()), shardingOf(r)));
    Block &oldBody = op->getRegion(0).front();
    auto *body = new Block();
    state.addRegion()->push_back(body);
    for (BlockArgument arg : oldBody.getArguments())
      map.map(arg, body->addArgument(arg.getType(), arg.getLoc()));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(body);
      for (Operation &inner : oldBody)
        if (inner.hasTrait<OpTrait::IsTerminator>())
          b.clone(inner, map);
        else if (failed(partitionOp(&inner, b, map)))
          return failure();
    }
    Operation *local = b.create(state);
    map.map(op->getResults(), local->getResults());
    return success();
  }

  SmallVector<ShardingAttr> operandShardings, resultShardings;
  for (Value v : op->getOperands())
    operandShardings.push_back(shardingOf(v));
  for (Value v : op->getResults())
    resultShardings.push_back(shardingOf(v));

  SmallVector<Value> localResults;
  if (auto iface = dyn_cast<ShardingRuleOpInterface>(op)) {
    if (failed(iface.partitionOp(ctx, localOperands, operandShardings,
                                 resultShardings, localResults)))
      return failure();
  } else {
    bool allReplicated =
        llvm::all_of(operandShardings,
                     [](ShardingAttr s) {
                       return !s.hasPartial() && s.isReplicated();
                     }) &&
        llvm::all_of(resultShardings,
                     [](ShardingAttr s) { return s.isReplicated(); });
    if (!allReplicated)
      return op->emitError("cannot partition ")
             << op->getName()
             << ": it has no sharding rule and its tensors are sharded";
    Operation *clone = b.clone(*op, map);
    llvm::append_range(localResults, clone->getResults());
  }
  if (localResults.size() != op->getNumResults())
    return op->emitError("internal: local form has ")
           << localResults.size() << " results, expected "
           << op->getNumResults();
  for (auto [global, local, sharding] :
       llvm::zip(op->getResults(), localResults, resultShardings)) {
    map.map(global, local);
    // Keep what each local value is a piece of, for readers and export
    // (tensors only: a scalar or unranked value has no placements).
    if (Operation *def = local.getDefiningOp())
      if (!def->hasAttr(kShardingAttr) && def->getNumResults() == 1 &&
          isa<RankedTensorType>(local.getType())) {
        def->setAttr(kShardingAttr,
                     ArrayAttr::get(op->getContext(), {sharding}));
        if (isa<RankedTensorType>(global.getType()) &&
            global.getType() != local.getType())
          def->setAttr(kGlobalTypeAttr, TypeAttr::get(global.getType()));
      }
  }
  return success();
}

LogicalResult Partitioner::run(FunctionOpInterface func) {
  if (func.isExternal())
    return success();
  Region &body = func.getFunctionBody();
  Block &oldEntry = body.front();
  MLIRContext *ctx = func.getContext();
  OpBuilder b(ctx);
  PartitionContext types(b, mesh, coords);

  // Argument shardings are read before the new entry block takes over.
  for (BlockArgument arg : oldEntry.getArguments())
    argShardings[arg] = getValueSharding(arg, replicated);

  // A new entry block with local argument types; the global type and the
  // sharding stay as argument attributes.
  auto *entry = new Block();
  body.push_front(entry);
  IRMapping map;
  SmallVector<Type> argTypes;
  // All argument attributes at once (one by one is quadratic).
  SmallVector<DictionaryAttr> argAttrs;
  for (BlockArgument arg : oldEntry.getArguments()) {
    Type type = arg.getType();
    NamedAttrList attrs(func.getArgAttrs(arg.getArgNumber()));
    if (auto global = dyn_cast<RankedTensorType>(type)) {
      ShardingAttr s = argShardings[arg];
      attrs.set(kShardingAttr, s);
      type = types.localType(global, s);
      if (type != global)
        attrs.set(kGlobalTypeAttr, TypeAttr::get(global));
    }
    argAttrs.push_back(attrs.getDictionary(func->getContext()));
    argTypes.push_back(type);
    map.map(arg, entry->addArgument(type, arg.getLoc()));
  }
  func.setAllArgAttrs(argAttrs);

  b.setInsertionPointToEnd(entry);
  for (Operation &op : oldEntry.getOperations()) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      SmallVector<Type> resultTypes;
      SmallVector<Attribute> shardings(func.getNumResults()),
          globalTypes(func.getNumResults());
      for (auto [i, v] : llvm::enumerate(op.getOperands())) {
        Value local = map.lookupOrDefault(v);
        resultTypes.push_back(local.getType());
        auto global = dyn_cast<RankedTensorType>(v.getType());
        if (global && i < func.getNumResults()) {
          shardings[i] = shardingOf(v);
          if (global != local.getType())
            globalTypes[i] = TypeAttr::get(global);
        }
      }
      setResultAttrs(func, kShardingAttr, shardings);
      setResultAttrs(func, kGlobalTypeAttr, globalTypes);
      b.clone(op, map);
      func.setType(FunctionType::get(ctx, argTypes, resultTypes));
      continue;
    }
    if (failed(partitionOp(&op, b, map)))
      return failure();
  }
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(oldEntry))) {
    op.dropAllUses();
    op.erase();
  }
  oldEntry.dropAllUses();
  oldEntry.erase();
  return success();
}

namespace {
struct PartitionPass
    : public distopt::dist::impl::DistPartitionBase<PartitionPass> {
  using DistPartitionBase::DistPartitionBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module.getOps<MeshOp>().empty())
      return;
    FailureOr<MeshOp> mesh = getModuleMesh(module);
    if (failed(mesh))
      return signalPassFailure();
    std::optional<SmallVector<int64_t>> coords;
    if (rank >= 0) {
      if (rank >= mesh->getNumDevices()) {
        mesh->emitError("rank ")
            << static_cast<int64_t>(rank) << " is outside mesh @"
            << mesh->getSymName() << " of " << mesh->getNumDevices()
            << " devices";
        return signalPassFailure();
      }
      coords = mesh->getCoords(rank);
      module->setAttr(
          kRankAttr,
          IntegerAttr::get(IntegerType::get(&getContext(), 64), rank));
    }
    for (auto func : module.getOps<FunctionOpInterface>()) {
      Partitioner partitioner(*mesh, coords);
      if (failed(partitioner.run(func)))
        return signalPassFailure();
    }
  }
};
} // namespace
