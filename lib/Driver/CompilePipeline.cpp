//===- CompilePipeline.cpp - the compile as one pass pipeline ---*- C++ -*-===//
#include "distopt/Driver/CompilePipeline.h"

#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/NN/IR/NNDialect.h"
#include "distopt/Dialect/NN/IR/EinsumEquation.h"
#include "distopt/Fusion/Passes.h"
#include "distopt/PipelineStages/Passes.h"
#include "distopt/Plan/Passes.h"
#include "distopt/Training/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace distopt {
#define GEN_PASS_DECL_DISTPIPELINE
#define GEN_PASS_DEF_DISTPIPELINE
#include "distopt/Driver/Passes.h.inc"
} // namespace distopt

using namespace mlir;
using namespace distopt;

void distopt::buildCompilePipeline(OpPassManager &pm,
                                   const CompileOptions &options,
                                   const CompilePipelineOptions &phases) {
  auto runs = [&](CompilePhase phase) {
    return phases.first <= phase && phase <= phases.last;
  };
  const PipelineSpec *pp =
      options.singleDevice ? nullptr : options.plan.pipeline();
  CompileResults *results = phases.results;

  if (runs(CompilePhase::Annotate)) {
    if (options.singleDevice)
      pm.addPass(createDistStripDistribution());
    // Mixed precision on the forward, so that differentiating it gives
    // the casts' gradients (f32 gradients of f32 parameters). Training runs
    // it whatever the policy: a bf16 or f16 model trains f32 masters.
    if (options.train)
      pm.addPass(createDistApplyPrecision(options.train->precision,
                                          SixteenBitModel::TrainMasters));
    else if (options.inferencePrecision.mixed() || options.forwardInF32)
      pm.addPass(createDistApplyPrecision(
          options.inferencePrecision, options.forwardInF32
                                          ? SixteenBitModel::ComputeInF32
                                          : SixteenBitModel::Keep));
    // Ring attention is a rewrite of the forward, before it is
    // differentiated: autodiff gives its backward. Where the plan names no
    // variant, the same pass chooses each attention's by cost.
    const ContextParallelSpec *cp =
        options.singleDevice ? nullptr : options.plan.contextParallel();
    if (cp && (cp->attention == "ring" || cp->attention.empty())) {
      DistRingAttentionOptions ring;
      ring.axis = cp->axis;
      ring.attention = cp->attention.empty() ? "auto" : "ring";
      ring.balance = cp->loadBalance;
      // The ring's size (balance's chunks too) is the axis's in this mesh.
      ring.mesh = options.meshSpec;
      ring.training = options.train.has_value();
      ring.memoryBudget = options.memoryBudget.value_or(0);
      pm.addPass(createDistRingAttention(
          ring, options.machine,
          results ? &results->planFindings.attention : nullptr));
    }
    // Training first: plans place the step's parameters, gradients and
    // optimizer states, not just the forward's.
    if (options.train) {
      // A plan file's `recompute` adds to the config's.
      TrainConfig config = *options.train;
      for (auto &glob : options.plan.recompute())
        config.recompute.push_back(glob);
      pm.addPass(createDistBuildTrainingStep(
          config, pp ? pp->microbatches : 1, pp ? pp->loc : LocationAttr(),
          results ? &results->training : nullptr));
    }
    if (!options.singleDevice &&
        (!options.meshSpec.empty() || !options.plan.empty()))
      pm.addPass(createDistApplyPlan(options.meshSpec, options.plan,
                                     results ? &results->planFindings : nullptr,
                                     options.machine));
  }

  bool keepCopies = options.train && options.train->precision.keepComputeCopies;
  if (runs(CompilePhase::Shard) && !phases.distributed) {
    // Nothing to place: only the step's compute copies become state.
    if (keepCopies)
      pm.addPass(createDistPersistComputeCopies());
  } else if (runs(CompilePhase::Shard)) {
    pm.addPass(dist::createDistPropagateSharding(options.machine));
    // A training step's updates come out as their parameters and states are
    // laid out, so the runtime writes them back in place.
    pm.addPass(createDistTieUpdatesToState());
    // Laid out as their casts were, before the reshards that move them.
    if (keepCopies)
      pm.addPass(createDistPersistComputeCopies());
    pm.addPass(dist::createDistInsertReshards());
    pm.addPass(createCSEPass());
    // After CSE, which would merge the second gathers into the first.
    pm.addPass(createDistRegatherParameters());
  }

  if (runs(CompilePhase::Stages) && pp) {
    pm.addPass(createDistCutPipelineStages(*pp));
    pm.addPass(createDistOrderPipelineStages());
  }

  if (runs(CompilePhase::Partition) && !phases.distributed) {
    // Nothing to partition: only the einsum products become matmuls (the
    // GEMM kernels' form); nothing else is folded, so a single device runs
    // the program as built.
    GreedyRewriteConfig config;
    config.enableFolding(false).enableConstantCSE(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    pm.addPass(createCanonicalizerPass(config, /*disabledPatterns=*/{},
                                       {nn::kEinsumAsMatMulPattern.str()}));
  } else if (runs(CompilePhase::Partition)) {
    // With stages: every stage's SPMD program, or the stage of one rank.
    OpPassManager *partition = &pm;
    if (pp && phases.rank < 0)
      partition = &pm.nest<ModuleOp>();
    else if (pp)
      pm.addPass(createDistSelectStage({phases.rank}));
    partition->addPass(dist::createDistPartition({phases.rank}));
    partition->addPass(
        dist::createDistReshardToCollectives({phases.rank}, options.machine));
    partition->addPass(createCanonicalizerPass());
    partition->addPass(createCSEPass());
  }

  // Last: the fused forms are what the target's kernels run, and no other
  // pass reads them. Per stage module where the SPMD programs are stages.
  if (runs(CompilePhase::Fuse)) {
    OpPassManager *fuse = &pm;
    if (phases.distributed && pp && phases.rank < 0)
      fuse = &pm.nest<ModuleOp>();
    fuse->addPass(createDistFuseForTarget({options.target}));
  }
}

namespace {
/// dist-pipeline: parses its options as the tools parse their flags, then
/// runs buildCompilePipeline's passes as a dynamic pipeline.
struct CompilePipelinePass
    : public distopt::impl::DistPipelineBase<CompilePipelinePass> {
  using Base::Base;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    OpPassManager pm(ModuleOp::getOperationName());
    buildCompilePipeline(pm, CompileOptions());
    pm.getDependentDialects(registry);
  }

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    CompileOptions options;
    if (!mesh.empty()) {
      if (auto axes = parseMeshSpec(mesh, "mesh"); !axes) {
        emitError(UnknownLoc::get(ctx)) << llvm::toString(axes.takeError());
        return signalPassFailure();
      }
      options.meshSpec = mesh;
    }
    FailureOr<Plan> plan = parsePlans(ctx, *plans);
    if (failed(plan))
      return signalPassFailure();
    options.plan = std::move(*plan);
    options.plan.strict |= strictPlan;
    FailureOr<std::string> resolved =
        resolvePlanMesh(ctx, options.meshSpec, options.plan);
    if (failed(resolved))
      return signalPassFailure();
    options.meshSpec = *resolved;
    auto profile = cost::loadSharedMachineProfile(machine);
    if (!profile) {
      emitError(UnknownLoc::get(ctx)) << "machine=" << machine << ": "
                                      << llvm::toString(profile.takeError());
      return signalPassFailure();
    }
    options.machine = std::move(*profile);
    if (!train.empty()) {
      FailureOr<TrainConfig> config = parseTrainConfig(ctx, train);
      if (failed(config))
        return signalPassFailure();
      options.train = std::move(*config);
    }
    options.target = target;
    OpPassManager pm(ModuleOp::getOperationName());
    CompilePipelineOptions phases;
    phases.rank = rank;
    buildCompilePipeline(pm, options, phases);
    if (failed(runPipeline(pm, getOperation())))
      signalPassFailure();
  }
};
} // namespace

void distopt::registerCompilePipelinePass() {
  registerPass([] { return std::make_unique<CompilePipelinePass>(); });
}
