//===- SplitBatch.cpp - a fixed-batch model at the microbatch size -*- C++
//-*-===//
//
// Exported models carry their batch in every shape (reshape targets are
// constants), so a pipeline cannot simply feed them smaller batches.
// Splitting the batch into m microbatches is data parallelism in time: the
// model is sharded along dimension 0 of every input over an m-way axis and
// partitioned for the first position, which rewrites every shape that
// follows the batch. If that needs communication, some op mixes rows of the
// batch (a batch norm, a mean over the batch) and the model cannot be
// microbatched without changing what it computes: that is an error naming
// the op.
//
//===----------------------------------------------------------------------===//
#include "PlanUtils.h"
#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNOps.h"
#include "distopt/Plan/Plan.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace distopt;

static std::string inputName(func::FuncOp func, unsigned i) {
  auto name = func.getArgAttrOfType<StringAttr>(i, nn::kNameAttr);
  return name ? name.str() : "input_" + std::to_string(i);
}

LogicalResult distopt::splitBatch(ModuleOp module, int64_t microbatches,
                                  Location loc, StringRef mixingHint) {
  if (microbatches <= 1)
    return success();
  func::FuncOp func = plan::mainFunction(module);
  if (!func)
    return failure();
  if (!module.getOps<dist::MeshOp>().empty())
    return emitError(loc) << "pipeline microbatches: the model declares its "
                             "own mesh; split its batch before annotating it";
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    int64_t rows = type && type.getRank() > 0 ? type.getDimSize(0) : 0;
    if (rows <= 0 || rows % microbatches != 0)
      return emitError(loc)
             << "pipeline: " << microbatches << " microbatches split the "
             << "batch (dimension 0 of every input), but input '"
             << inputName(func, arg.getArgNumber()) << "' is " << arg.getType()
             << (rows > 0 ? ", whose " + std::to_string(rows) +
                                " rows do not divide into " +
                                std::to_string(microbatches)
                          : std::string(", which has no batch dimension"));
  }

  // Shard every input's batch over an m-way axis; keep the first piece.
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  func::FuncOp copyFunc = plan::mainFunction(*copy);
  OpBuilder b(copy->getBodyRegion());
  b.setInsertionPointToStart(copy->getBody());
  auto mesh = dist::MeshOp::create(b, loc, "microbatches",
                                   b.getArrayAttr({b.getStringAttr("mb")}),
                                   b.getDenseI64ArrayAttr({microbatches}));
  for (BlockArgument arg : copyFunc.getArguments())
    plan::annotateValue(
        arg, plan::oneAxisSharding(mesh, 0, dist::Placement::shard(0)),
        /*priority=*/0, "pipeline microbatches");
  PassManager pm(module.getContext());
  pm.addPass(dist::createDistPropagateSharding());
  pm.addPass(dist::createDistInsertReshards());
  dist::DistPartitionOptions partition;
  partition.rank = 0;
  pm.addPass(dist::createDistPartition(partition));
  dist::DistReshardToCollectivesOptions lower;
  lower.rank = 0;
  pm.addPass(dist::createDistReshardToCollectives(lower));
  pm.addPass(createCanonicalizerPass());
  if (failed(pm.run(*copy)))
    return failure();

  // Anything of the dist dialect left means rows of the batch meet.
  Operation *mixing = nullptr;
  copyFunc.walk([&](Operation *op) {
    if (!mixing && isa<dist::DistDialect>(op->getDialect()))
      mixing = op;
    return mixing ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (mixing) {
    std::string node = nn::getNodeName(mixing);
    auto reason = mixing->getAttrOfType<StringAttr>(dist::kReasonAttr);
    InFlightDiagnostic d = emitError(loc)
                           << "pipeline: the model cannot be split into "
                           << microbatches << " microbatches: "
                           << (node.empty() ? std::string("an op")
                                            : "'" + node + "'")
                           << " combines rows of different microbatches (it "
                              "needs "
                           << mixing->getName() << " across the batch)";
    if (reason)
      d << "; " << reason.getValue();
    if (!mixingHint.empty())
      d << "; " << mixingHint;
    return failure();
  }

  // The partitioned body replaces the original one.
  for (Operation &op : llvm::make_early_inc_range(copy->getOps()))
    if (isa<dist::MeshOp>(op))
      op.erase();
  copyFunc.walk([](Operation *op) {
    op->removeAttr(dist::kShardingAttr);
    op->removeAttr(dist::kCauseAttr);
  });
  func.getBody().takeBody(copyFunc.getBody());
  func.setType(copyFunc.getFunctionType());
  return success();
}
