//===- ReshardToCollectives.cpp - dist-reshard-to-collectives ---*- C++ -*-===//
//
// Replaces each partitioned dist.reshard by the collectives of its cheapest
// plan (ReshardPlanner). Every emitted op carries the sharding it produces and
// the reshard's reason, so reports can explain it.
//
//===----------------------------------------------------------------------===//
#include "FactorChoice.h"
#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/IR/PartitionContext.h"
#include "distopt/Dialect/Dist/IR/Pieces.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Dist/Transforms/ReshardPlanner.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

namespace distopt::dist {
#define GEN_PASS_DEF_DISTRESHARDTOCOLLECTIVES
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace distopt::dist

using namespace mlir;
using namespace distopt::dist;
namespace cost = distopt::cost;

namespace {

class Lowering {
public:
  Lowering(MeshOp mesh, std::optional<SmallVector<int64_t>> coords,
           const cost::MeshCost &links)
      : b(mesh.getContext()), ctx(b, mesh, std::move(coords)),
        meshRef(FlatSymbolRefAttr::get(mesh.getSymNameAttr())), links(links) {}

  LogicalResult lower(ReshardOp op);
  /// No collective may run along `axisName` (a pipeline stage's axis).
  void freezeAxis(StringRef axisName) {
    frozen.assign(ctx.meshSizes.size(), false);
    for (int64_t a = 0; a < static_cast<int64_t>(ctx.meshSizes.size()); ++a)
      if (ctx.mesh.getAxisName(a) == axisName)
        frozen[a] = true;
  }

private:
  DenseI64ArrayAttr pieceSizes(RankedTensorType global, ShardingAttr s,
                               int64_t dim, int64_t axis) {
    if (!ctx.coords)
      return {};
    int64_t extent = global.getDimSize(dim);
    if (splitsEvenly(extent, dim, s, ctx.meshSizes))
      return {};
    return b.getDenseI64ArrayAttr(
        groupPieceSizes(extent, dim, s, axis, ctx.meshSizes, *ctx.coords));
  }

  /// Placed at the reshard being lowered; `ctx` gives the local types, as
  /// dist-partition's ops see them.
  OpBuilder b;
  PartitionContext ctx;
  FlatSymbolRefAttr meshRef;
  /// The axes' links under the machine profile: what each step costs.
  const cost::MeshCost &links;
  SmallVector<bool> frozen;
  /// Plans by (global type, from, to): a model repeats the same reshards in
  /// every layer, and the search is the costly part of lowering them.
  DenseMap<std::tuple<Type, Attribute, Attribute>, std::optional<ReshardPlan>>
      plans;
};

} // namespace

LogicalResult Lowering::lower(ReshardOp op) {
  auto globalAttr = op.getGlobalType();
  if (!globalAttr)
    return op.emitOpError("has no global_type: run dist-partition before "
                          "dist-reshard-to-collectives");
  auto global = cast<RankedTensorType>(*globalAttr);
  ReshardProblem problem;
  problem.globalShape.assign(global.getShape().begin(),
                             global.getShape().end());
  problem.elementBytes = elementBytes(global.getElementType());
  problem.meshSizes = ctx.meshSizes;
  problem.frozenAxes = frozen;
  useLinks(problem, links);
  if (!global.hasStaticShape())
    return op.emitOpError("needs a static global shape to plan collectives");
  auto key = std::make_tuple(Type(global), Attribute(op.getFrom()),
                             Attribute(op.getTo()));
  auto cached = plans.find(key);
  if (cached == plans.end())
    cached =
        plans
            .try_emplace(key, planReshard(problem, op.getFrom().getPlacements(),
                                          op.getTo().getPlacements()))
            .first;
  // The loop below adds nothing to `plans`, so the reference stays valid.
  const std::optional<ReshardPlan> &plan = cached->second;
  if (!plan)
    return op.emitOpError("no sequence of collectives turns ")
           << op.getFrom() << " into " << op.getTo();

  b.setInsertionPoint(op);
  MLIRContext *context = op.getContext();
  Value current = op.getInput();
  ShardingAttr state = op.getFrom();
  StringAttr reason = op.getReasonAttr();
  for (const ReshardStep &step : plan->steps) {
    ShardingAttr next = ShardingAttr::get(context, meshRef, step.after);
    RankedTensorType type = ctx.localType(global, next);
    SmallVector<StringRef, 2> axisNames{ctx.mesh.getAxisName(step.axis)};
    if (step.axis2 >= 0)
      axisNames.push_back(ctx.mesh.getAxisName(step.axis2));
    ArrayAttr axes = b.getStrArrayAttr(axisNames);
    auto reduction = ReductionKindAttr::get(context, step.reduction);
    Operation *created = nullptr;
    switch (step.kind) {
    case ReshardStep::Kind::AllGather:
      created =
          AllGatherOp::create(b, op.getLoc(), type, current, meshRef, axes,
                              b.getI64IntegerAttr(step.dim),
                              pieceSizes(global, state, step.dim, step.axis));
      break;
    case ReshardStep::Kind::AllReduce:
      created = AllReduceOp::create(b, op.getLoc(), current, meshRef, axes,
                                    reduction);
      break;
    case ReshardStep::Kind::ReduceScatter:
      created = ReduceScatterOp::create(
          b, op.getLoc(), type, current, meshRef, axes,
          b.getI64IntegerAttr(step.dim), reduction,
          pieceSizes(global, next, step.dim, step.axis));
      break;
    case ReshardStep::Kind::AllToAll:
      created = AllToAllOp::create(
          b, op.getLoc(), type, current, meshRef, axes,
          b.getI64IntegerAttr(step.dim2), b.getI64IntegerAttr(step.dim),
          pieceSizes(global, next, step.dim2, step.axis),
          pieceSizes(global, state, step.dim, step.axis));
      break;
    case ReshardStep::Kind::LocalSlice:
      created =
          LocalSliceOp::create(b, op.getLoc(), type, current, meshRef, axes,
                               b.getI64IntegerAttr(step.dim),
                               pieceSizes(global, next, step.dim, step.axis));
      break;
    case ReshardStep::Kind::Permute: {
      int64_t k = ctx.meshSizes[step.axis];
      SmallVector<int64_t> pairs;
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j) {
          pairs.push_back(i * k + j);
          pairs.push_back(j * k + i);
        }
      ArrayAttr twoAxes = b.getStrArrayAttr(
          {ctx.mesh.getAxisName(step.axis), ctx.mesh.getAxisName(step.axis2)});
      created =
          CollectivePermuteOp::create(b, op.getLoc(), current, meshRef, twoAxes,
                                      b.getDenseI64ArrayAttr(pairs));
      break;
    }
    case ReshardStep::Kind::ToPartial:
      created = ToPartialOp::create(b, op.getLoc(), current, meshRef, axes,
                                    reduction);
      break;
    }
    created->setAttr(kShardingAttr, b.getArrayAttr({next}));
    if (created->getResult(0).getType() != type)
      created->getResult(0).setType(type);
    if (reason)
      created->setAttr(kReasonAttr, reason);
    if (plan->gathersThenSlices)
      created->setAttr(kNoteAttr,
                       b.getStringAttr("cheapest plan gathers then slices"));
    current = created->getResult(0);
    state = next;
  }
  if (current.getType() != op.getResult().getType())
    return op.emitOpError("internal: planned result type ")
           << current.getType() << " differs from " << op.getResult().getType();
  op.getResult().replaceAllUsesWith(current);
  op.erase();
  return success();
}

namespace {
struct ReshardToCollectivesPass
    : public distopt::dist::impl::DistReshardToCollectivesBase<
          ReshardToCollectivesPass> {
  using DistReshardToCollectivesBase::DistReshardToCollectivesBase;
  ReshardToCollectivesPass(DistReshardToCollectivesOptions options,
                           std::shared_ptr<const cost::MachineProfile> machine)
      : DistReshardToCollectivesBase(std::move(options)),
        profile(std::move(machine)) {}

  std::shared_ptr<const cost::MachineProfile> profile;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<ReshardOp> reshards;
    module.walk([&](ReshardOp op) { reshards.push_back(op); });
    if (reshards.empty())
      return;
    FailureOr<MeshOp> mesh = getModuleMesh(module);
    if (failed(mesh))
      return signalPassFailure();
    int64_t r = rank;
    if (r < 0)
      if (auto attr = module->getAttrOfType<IntegerAttr>(kRankAttr))
        r = attr.getInt();
    std::optional<SmallVector<int64_t>> coords;
    if (r >= 0)
      coords = mesh->getCoords(r);
    FailureOr<cost::MeshCost> links =
        meshCostFor(module, *mesh, profile, machine);
    if (failed(links))
      return signalPassFailure();
    Lowering lowering(*mesh, coords, *links);
    if (auto axis = module->getAttrOfType<StringAttr>(kPipelineAxisAttr))
      lowering.freezeAxis(axis.getValue());
    for (ReshardOp op : reshards)
      if (failed(lowering.lower(op)))
        return signalPassFailure();
  }
};
} // namespace

std::unique_ptr<Pass> distopt::dist::createDistReshardToCollectives(
    DistReshardToCollectivesOptions options,
    std::shared_ptr<const cost::MachineProfile> machine) {
  return std::make_unique<ReshardToCollectivesPass>(std::move(options),
                                                    std::move(machine));
}
