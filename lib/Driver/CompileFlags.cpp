//===- CompileFlags.cpp - the command-line flags every tool shares -===//
#include "distopt/Driver/CompileFlags.h"
#include "distopt/Support/ByteSize.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

using namespace llvm;
using namespace distopt;

cl::OptionCategory &distopt::compileFlagsCategory() {
  static cl::OptionCategory category("distopt compile options");
  return category;
}

static cl::opt<std::string>
    meshSpec("mesh",
             cl::desc("device mesh, outer to inner axes, e.g. dp=2,tp=4"),
             cl::value_desc("name=size,..."), cl::cat(compileFlagsCategory()));
static cl::list<std::string> plans(
    "plan",
    cl::desc("plan file (YAML/JSON) or presets: replicate, dp, zero1, zero2, "
             "fsdp, tp, sp, cp, ep (comma-separated, composable); repeatable; "
             "'auto': search for the fastest predicted plan that fits "
             "--memory-budget on --devices (docs/auto-plan.md)"),
    cl::value_desc("file|presets"), cl::cat(compileFlagsCategory()));
static cl::opt<bool> strictPlan(
    "strict-plan",
    cl::desc("a plan pattern that matches nothing is an error, not a warning"),
    cl::cat(compileFlagsCategory()));
static cl::opt<std::string>
    dimSpec("dim",
            cl::desc("bind symbolic input dimensions, e.g. batch=2,seq=128"),
            cl::value_desc("name=size,..."), cl::cat(compileFlagsCategory()));
static cl::opt<std::string>
    trainConfig("train",
                cl::desc("compile a training step for this config (JSON or "
                         "YAML: output, loss, optimizer, frozen, no_decay, "
                         "clip_grad_norm, steps); see docs/training.md"),
                cl::value_desc("file"), cl::cat(compileFlagsCategory()));
static cl::opt<std::string> machine(
    "machine",
    cl::desc("the machine the costs are for (propagation, the reshard "
             "planner, the report): a built-in profile (cpu, h100, h200) or "
             "a JSON file, e.g. one dist-run --calibrate wrote; default: cpu "
             "(see docs/cost-model.md)"),
    cl::value_desc("name|file"), cl::cat(compileFlagsCategory()));
static cl::opt<int64_t> devices(
    "devices",
    cl::desc("--plan auto: the number of devices to plan for (or --mesh to "
             "fix the mesh's shape)"),
    cl::init(0), cl::value_desc("N"), cl::cat(compileFlagsCategory()));
static cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("--plan auto: the predicted peak memory per rank must fit this, "
             "e.g. 80GiB or 512MiB; context parallelism that names no "
             "attention variant: what a rank holds of each attention must fit it"),
    cl::value_desc("size"), cl::cat(compileFlagsCategory()));
static cl::opt<std::string> emitPlan(
    "emit-plan",
    cl::desc("--plan auto: write the chosen plan, with its mesh, as a plan "
             "file that --plan FILE alone compiles the same"),
    cl::value_desc("file"), cl::cat(compileFlagsCategory()));
static cl::opt<int64_t> autoTrials(
    "auto-trials",
    cl::desc("--plan auto in dist-train: train the N plans predicted fastest "
             "that fit for a few steps each on the devices, in two passes "
             "(the second in reverse order), and keep the fastest measured "
             "(its peak memory within the budget)"),
    cl::init(0), cl::value_desc("N"), cl::cat(compileFlagsCategory()));
static cl::opt<int64_t> autoTrialSteps(
    "auto-trial-steps",
    cl::desc("with --auto-trials: timed steps per plan, after two warm-up "
             "steps (default 3); the median counts"),
    cl::init(3), cl::value_desc("S"), cl::cat(compileFlagsCategory()));
static cl::opt<bool> debugDiagnostics(
    "debug-diagnostics",
    cl::desc("print the IR an error or warning is about, after the message"),
    cl::cat(compileFlagsCategory()));

bool distopt::debugDiagnosticsFlag() { return debugDiagnostics; }

bool distopt::meshOrPlanGiven() {
  return !meshSpec.empty() || !plans.empty() || !trainConfig.empty();
}

StringRef distopt::trainConfigFlag() { return trainConfig; }

std::string distopt::meshFlagText() { return meshSpec; }

std::string distopt::planFlagText() {
  std::string out;
  for (const std::string &p : plans)
    out += (out.empty() ? "" : ";") + p;
  return out;
}

AutoPlanFlags distopt::autoPlanFlags() {
  AutoPlanFlags flags;
  flags.requested = llvm::is_contained(plans, "auto");
  flags.devices = devices;
  flags.memoryBudget = memoryBudget;
  flags.emitPlan = emitPlan;
  flags.trials = autoTrials;
  flags.trialSteps = autoTrialSteps;
  return flags;
}

mlir::FailureOr<CompileOptions>
distopt::compileOptionsFromFlags(mlir::MLIRContext &ctx) {
  CompileOptions options;
  options.meshSpec = meshSpec;
  mlir::Location unknown = mlir::UnknownLoc::get(&ctx);
  AutoPlanFlags autoFlags = autoPlanFlags();
  if (autoFlags.requested && plans.size() != 1)
    return mlir::emitError(unknown)
           << "--plan auto chooses the whole plan; it takes no other --plan";
  if (!autoFlags.requested) {
    for (auto [given, flag] :
         {std::pair<bool, const char *>{devices.getNumOccurrences() > 0,
                                        "--devices"},
          {!emitPlan.empty(), "--emit-plan"},
          {autoTrials.getNumOccurrences() > 0, "--auto-trials"},
          {autoTrialSteps.getNumOccurrences() > 0, "--auto-trial-steps"}})
      if (given)
        return mlir::emitError(unknown) << flag << " needs --plan auto";
  }
  if (autoFlags.requested) {
    // The search fills in the mesh and the plan (AutoPlan.h).
    if (devices.getNumOccurrences() && devices <= 0)
      return mlir::emitError(unknown)
             << "--devices must be positive, got "
             << static_cast<int64_t>(devices.getValue());
    if (autoTrials < 0)
      return mlir::emitError(unknown)
             << "--auto-trials must be 0 or more, got "
             << static_cast<int64_t>(autoTrials.getValue());
    if (autoTrialSteps < 1)
      return mlir::emitError(unknown)
             << "--auto-trial-steps must be at least 1, got "
             << static_cast<int64_t>(autoTrialSteps.getValue());
    if (autoTrialSteps.getNumOccurrences() && autoTrials == 0)
      return mlir::emitError(unknown)
             << "--auto-trial-steps goes with --auto-trials N";
    if (devices > 0 && !meshSpec.empty())
      return mlir::emitError(unknown)
             << "--devices and --mesh both give the devices; pass one "
                "(--mesh fixes the mesh's shape)";
    if (devices <= 0 && meshSpec.empty())
      return mlir::emitError(unknown)
             << "--plan auto needs --devices N (or --mesh to fix the shape)";
  } else {
    auto plan =
        parsePlans(&ctx, std::vector<std::string>(plans.begin(), plans.end()));
    if (failed(plan))
      return mlir::failure();
    options.plan = std::move(*plan);
    options.plan.strict |= strictPlan;
    auto mesh = resolvePlanMesh(&ctx, options.meshSpec, options.plan);
    if (failed(mesh))
      return mlir::failure();
    options.meshSpec = *mesh;
    // Without auto, the budget bounds the attention variants context
    // parallelism chooses among by cost.
    if (!memoryBudget.empty()) {
      const ContextParallelSpec *cp = options.plan.contextParallel();
      if (!cp || !cp->attention.empty())
        return mlir::emitError(unknown)
               << "--memory-budget needs --plan auto, or context parallelism "
                  "that leaves the attention variant to the cost model (the "
                  "cp preset, or context_parallel without attention)";
      auto budget = parseByteSize(memoryBudget);
      if (!budget)
        return mlir::emitError(unknown)
               << "--memory-budget: " << toString(budget.takeError());
      options.memoryBudget = *budget;
    }
  }
  if (!dimSpec.empty()) {
    auto dims = parseDimSpec(dimSpec);
    if (!dims)
      return mlir::emitError(mlir::UnknownLoc::get(&ctx))
             << toString(dims.takeError());
    options.dims = std::move(*dims);
  }
  auto profile = cost::loadSharedMachineProfile(machine);
  if (!profile)
    return mlir::emitError(mlir::UnknownLoc::get(&ctx))
           << "--machine: " << toString(profile.takeError());
  options.machine = std::move(*profile);
  if (!trainConfig.empty()) {
    auto config = parseTrainConfig(&ctx, trainConfig);
    if (failed(config))
      return mlir::failure();
    options.train = std::move(*config);
  }
  return options;
}
