//===- Search.cpp - the fastest predicted plan that fits --------*- C++ -*-===//
//
// The unsharded training step is loaded once: it gives the repeated layers
// (the pipeline's split and the recompute glob) and the bytes a lower bound
// on each candidate's model states needs. Candidates the bound puts over the
// budget are not compiled; every other one is compiled and predicted, and
// the fastest predicted step whose predicted peak fits wins.
//
//===----------------------------------------------------------------------===//
#include "distopt/AutoPlan/AutoPlan.h"

#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNCost.h"
#include "distopt/Dialect/NN/IR/NNOps.h"
#include "distopt/Driver/Compilation.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"

#include <chrono>
#include <limits>
#include <map>
#include <regex>
#include <set>

using namespace mlir;
using namespace distopt;
using namespace distopt::autoplan;

/// The most repeated numbered module (`h.0`, `h.1`, ... -> "h.*") and how
/// many of it there are; "" when nothing repeats.
static std::pair<std::string, int64_t> repeatedLayers(ModuleOp module) {
  static const std::regex numbered(R"(^(.*[^/])\.([0-9]+)$)");
  std::map<std::string, std::set<std::string>> indices;
  module.walk([&](Operation *op) {
    for (const std::string &prefix : nn::getNodeModulePrefixes(op)) {
      std::smatch m;
      if (std::regex_match(prefix, m, numbered))
        indices[m[1].str()].insert(m[2].str());
    }
  });
  std::string best;
  int64_t count = 0;
  for (auto &[base, seen] : indices)
    if (static_cast<int64_t>(seen.size()) > count ||
        (static_cast<int64_t>(seen.size()) == count &&
         base.size() < best.size())) {
      best = base;
      count = seen.size();
    }
  if (count < 2)
    return {"", 0};
  return {best + ".*", count};
}

static ModelStateBytes modelStateBytes(ModuleOp module) {
  ModelStateBytes bytes;
  module.walk([&](Operation *op) {
    if (isa<nn::WeightOp>(op))
      bytes.parameters += nn::tensorBytes(op->getResult(0).getType());
    else if (isa<nn::VariableOp>(op) && op->hasAttr(nn::kStateOfAttr))
      bytes.optimizerStates += nn::tensorBytes(op->getResult(0).getType());
  });
  return bytes;
}

static std::string mib(int64_t bytes) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.2f MiB", bytes / 1048576.0);
  return s;
}

/// The search space from --devices or a fixed --mesh (axes dp, tp, pp).
static FailureOr<SearchSpace> spaceFor(MLIRContext &ctx,
                                       const SearchOptions &options) {
  SearchSpace space;
  space.devices = options.devices;
  if (options.meshSpec.empty())
    return space;
  auto axes = parseMeshSpec(options.meshSpec);
  if (!axes)
    return emitError(UnknownLoc::get(&ctx)) << llvm::toString(axes.takeError());
  space.fixedMesh = true;
  space.devices = 1;
  for (const MeshAxis &axis : *axes) {
    int64_t *size = axis.name == "dp"   ? &space.dp
                    : axis.name == "tp" ? &space.tp
                    : axis.name == "pp" ? &space.pp
                                        : nullptr;
    if (!size)
      return emitError(UnknownLoc::get(&ctx))
             << "--plan auto: mesh axis '" << axis.name
             << "' has no role; --plan auto plans the axes dp, tp and pp";
    *size = axis.size;
    space.devices *= axis.size;
  }
  return space;
}

FailureOr<SearchResult>
distopt::autoplan::searchPlans(MLIRContext &ctx, StringRef model,
                               const CompileOptions &base,
                               const SearchOptions &options) {
  auto start = std::chrono::steady_clock::now();
  FailureOr<SearchSpace> space = spaceFor(ctx, options);
  if (failed(space))
    return failure();
  space->training = base.train.has_value();
  space->maxTensorParallel = base.machine
                                 ? base.machine->devicesPerNode
                                 : cost::defaultMachineProfile().devicesPerNode;
  // Imported once; every candidate compiles a copy.
  OwningOpRef<ModuleOp> imported = Compilation::importModel(ctx, model, base);
  if (!imported)
    return failure();
  ModelStateBytes bytes;
  {
    // The unsharded step: its layers and its model states.
    CompileOptions plain = base;
    plain.meshSpec.clear();
    plain.plan = Plan();
    auto loaded = Compilation::load(ctx, *imported, model, plain);
    if (failed(loaded))
      return failure();
    std::tie(space->layerGlob, space->layers) =
        repeatedLayers((*loaded)->module());
    bytes = modelStateBytes((*loaded)->module());
  }
  if (space->fixedMesh && space->pp > 1 && space->layerGlob.empty())
    return emitError(UnknownLoc::get(&ctx))
           << "--plan auto: --mesh has pp=" << space->pp
           << " but the model has no repeated layers to cut into stages";

  SearchResult result;
  result.memoryBudget = options.memoryBudget;
  result.layerGlob = space->layerGlob;
  std::map<std::string, size_t> byDescription;
  int64_t smallestBound = std::numeric_limits<int64_t>::max();
  const Candidate *smallestBounded = nullptr;
  std::vector<Candidate> candidates = enumerateCandidates(*space);
  for (const Candidate &c : candidates) {
    if (options.memoryBudget) {
      int64_t bound = modelStateLowerBound(bytes, c);
      if (bound < smallestBound) {
        smallestBound = bound;
        smallestBounded = &c;
      }
      if (bound > *options.memoryBudget) {
        Evaluation e{c, Evaluation::Status::Screened, {}, {}, false};
        e.reason = "model states at least " + mib(bound);
        result.evaluations.push_back(std::move(e));
        ++result.screened;
        continue;
      }
    }
    // Recomputation only adds work: where the same plan without it fits,
    // it is at least as fast (it comes just before in the order).
    if (c.recompute) {
      Candidate twin = c;
      twin.recompute = false;
      auto it = byDescription.find(twin.mesh() + " " + twin.describe());
      if (it != byDescription.end() &&
          (!options.memoryBudget ||
           result.evaluations[it->second].prediction.peakBytes <=
               *options.memoryBudget)) {
        Evaluation e{c, Evaluation::Status::Dominated, {}, {}, false};
        e.reason = "the same plan without recompute fits";
        result.evaluations.push_back(std::move(e));
        ++result.dominated;
        continue;
      }
    }
    Evaluation e =
        evaluateCandidate(ctx, *imported, model, base, c, space->layerGlob);
    if (e.status == Evaluation::Status::Rejected) {
      ++result.rejected;
    } else {
      ++result.compiled;
      byDescription[c.mesh() + " " + c.describe()] = result.evaluations.size();
    }
    result.evaluations.push_back(std::move(e));
  }
  // Recomputation's cost: the compute beyond the same plan's without it.
  for (Evaluation &e : result.evaluations) {
    if (e.status != Evaluation::Status::Compiled || !e.candidate.recompute)
      continue;
    Candidate twin = e.candidate;
    twin.recompute = false;
    auto it = byDescription.find(twin.mesh() + " " + twin.describe());
    if (it == byDescription.end())
      continue;
    Prediction &p = e.prediction;
    p.recomputeUs = std::max(
        0.0, p.computeUs - result.evaluations[it->second].prediction.computeUs);
    p.computeUs -= p.recomputeUs;
  }
  const Evaluation *smallest = nullptr, *firstRejected = nullptr;
  for (auto [i, e] : llvm::enumerate(result.evaluations)) {
    if (e.status == Evaluation::Status::Rejected && !firstRejected)
      firstRejected = &e;
    if (e.status != Evaluation::Status::Compiled)
      continue;
    const Prediction &p = e.prediction;
    e.fits = !options.memoryBudget || p.peakBytes <= *options.memoryBudget;
    if (!smallest || p.peakBytes < smallest->prediction.peakBytes)
      smallest = &e;
    if (!e.fits)
      continue;
    ++result.fit;
    if (result.winner < 0 ||
        p.stepUs < result.evaluations[result.winner].prediction.stepUs)
      result.winner = i;
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  Location loc = UnknownLoc::get(&ctx);
  if (result.winner >= 0) {
    result.options = candidateOptions(
        &ctx, base, result.evaluations[result.winner].candidate,
        space->layerGlob);
    return result;
  }
  if (smallest) {
    const Prediction &p = smallest->prediction;
    int64_t dominant = std::max({p.parameterBytes, p.gradientBytes,
                                 p.optimizerStateBytes, p.activationBytes});
    return emitError(loc)
           << "--memory-budget " << mib(*options.memoryBudget)
           << ": no plan fits; the smallest predicted footprint is "
           << mib(p.peakBytes) << " per rank ("
           << smallest->candidate.describe() << " on mesh "
           << smallest->candidate.mesh() << "), mostly " << p.dominantTerm()
           << " (" << mib(dominant) << ")";
  }
  if (result.screened > 0 && !firstRejected) {
    // Not even the bound fits: name it and its larger part.
    int64_t params =
        modelStateLowerBound({bytes.parameters, 0}, *smallestBounded);
    int64_t states = smallestBound - params;
    return emitError(loc) << "--memory-budget " << mib(*options.memoryBudget)
                          << ": no plan fits; the smallest footprint is at "
                             "least "
                          << mib(smallestBound) << " per rank ("
                          << smallestBounded->describe() << " on mesh "
                          << smallestBounded->mesh()
                          << ", before activations), mostly "
                          << (params >= states ? "parameters"
                                               : "optimizer states")
                          << " (" << mib(std::max(params, states)) << ")";
  }
  InFlightDiagnostic d = emitError(loc)
                         << "--plan auto: no candidate plan compiles on "
                         << space->devices << " device(s)";
  if (firstRejected)
    d << "; e.g. " << firstRejected->candidate.describe() << " on mesh "
      << firstRejected->candidate.mesh() << ": " << firstRejected->reason;
  return failure();
}
