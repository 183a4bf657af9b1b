//===- Search.cpp - the fastest predicted plan that fits --------*- C++ -*-===//
//
// The unsharded training step is loaded once: it gives the repeated layers
// (the pipeline's split and the recompute glob) and the bytes a lower bound
// on each candidate's model states needs. Candidates the bound puts over the
// budget are not predicted; the others are predicted from their choice's
// layer terms (LayerTerms.cpp, Compose.cpp), and the fastest predictions
// that fit are compiled whole: the fastest whose whole compile fits wins.
// Models without a chain of repeated layers, and forward models, compile
// every candidate whole.
//
//===----------------------------------------------------------------------===//
#include "distopt/AutoPlan/AutoPlan.h"

#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNCost.h"
#include "distopt/Dialect/NN/IR/NNOps.h"
#include "distopt/Driver/Compilation.h"
#include "distopt/Report/Report.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <chrono>
#include <limits>
#include <map>
#include <set>

using namespace mlir;
using namespace distopt;
using namespace distopt::autoplan;

/// The most repeated numbered module (`h.0`, `h.1`, ... -> "h.*") and how
/// many of it there are; "" when nothing repeats.
static std::pair<std::string, int64_t> repeatedLayers(ModuleOp module) {
  std::map<std::string, std::set<std::string>> indices;
  module.walk([&](Operation *op) {
    for (const std::string &prefix : nn::getNodeModulePrefixes(op)) {
      // "<base>.<digits>", the base not empty and not ending in '/'.
      auto [base, index] = StringRef(prefix).rsplit('.');
      if (index.empty() || !llvm::all_of(index, llvm::isDigit) ||
          base.empty() || base.ends_with("/"))
        continue;
      indices[base.str()].insert(index.str());
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
    int64_t *size = axis.name == "dp"    ? &space.dp
                    : axis.name == "rep" ? &space.replicate
                    : axis.name == "tp"  ? &space.tp
                    : axis.name == "pp"  ? &space.pp
                                         : nullptr;
    if (!size)
      return emitError(UnknownLoc::get(&ctx))
             << "--plan auto: mesh axis '" << axis.name
             << "' has no role; --plan auto plans the axes rep (HSDP), dp, "
                "tp and pp";
    *size = axis.size;
    space.devices *= axis.size;
  }
  if (space.replicate > 1 && space.dp == 1)
    return emitError(UnknownLoc::get(&ctx))
           << "--plan auto: mesh axis 'rep' replicates what the data-parallel "
              "presets shard over 'dp', and the mesh has no dp axis; use "
              "dp="
           << space.replicate << " or add a dp axis";
  return space;
}

namespace {
/// The layer terms of each (tp, sp, ZeRO level, recompute) choice, compiled
/// on the cut models the first time a candidate needs them.
struct LayerProbes {
  MLIRContext &ctx;
  StringRef model;
  const CompileOptions &base;
  std::string layerGlob;
  /// The cut models: `kept` layers and one more (the first layer's
  /// liveness peak differs from the others', so two where there are more).
  int64_t kept = 1;
  OwningOpRef<ModuleOp> one, two;
  struct Entry {
    std::optional<LayerTerms> terms;
    std::string error;
  };
  std::map<std::string, Entry> byChoice;
  int64_t compiles = 0;
  double seconds = 0;

  /// The choice's probe: the candidate without its pipeline, on dp = 1, or
  /// 2 where it has dp (so that dp's collectives are there to time).
  static Candidate probeOf(const Candidate &c) {
    Candidate p = c;
    p.dp = c.dp > 1 ? 2 : 1;
    p.replicate = c.replicate > 1 ? 2 : 1;
    p.pp = 1;
    p.schedule.clear();
    p.microbatches = 1;
    p.virtualStages = 1;
    return p;
  }

  const Entry &terms(const Candidate &c) {
    Candidate p = probeOf(c);
    auto [it, inserted] = byChoice.try_emplace(p.mesh() + " " + p.describe());
    if (!inserted)
      return it->second;
    CompileOptions options = candidateOptions(&ctx, base, p, layerGlob);
    if (p.dp == 1 && p.tp == 1) {
      // One device: no mesh (a mesh of one device has nothing to split).
      options.meshSpec.clear();
      options.plan.specs.front().presets.clear();
    }
    std::optional<StepTerms> steps[2];
    auto start = std::chrono::steady_clock::now();
    auto stop = llvm::make_scope_exit([&] {
      seconds += std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
    });
    for (int k = 0; k < 2; ++k) {
      ++compiles;
      FailureOr<Report> report = compileForReport(
          ctx, k == 0 ? *one : *two, model, options, it->second.error);
      if (failed(report))
        return it->second;
      steps[k] = stepTerms(*report);
    }
    it->second.terms = layerTermsFrom(*steps[0], *steps[1], kept);
    return it->second;
  }
};
} // namespace

/// How many fitting candidates a full compile confirms.
static constexpr int64_t kConfirmed = 3;
/// How far over the budget a composed peak may be and still be compiled
/// whole when nothing else fits (compositions over-predict pipeline peaks
/// by up to about 7%: docs/auto-plan.md).
static constexpr double kNearMiss = 0.10;

FailureOr<SearchResult>
distopt::autoplan::searchPlans(MLIRContext &ctx, StringRef model,
                               const CompileOptions &base,
                               const SearchOptions &options) {
  auto start = std::chrono::steady_clock::now();
  FailureOr<SearchSpace> space = spaceFor(ctx, options);
  if (failed(space))
    return failure();
  space->training = base.train.has_value();
  // The trial compiles are read for their predictions only: no verifier
  // after each pass (the winner's is verified once when the tool takes it
  // over: takeWinnerCompile).
  CompileOptions trial = base;
  trial.verifyEachPass = false;
  std::shared_ptr<const cost::MachineProfile> machine =
      base.machine ? base.machine
                   : std::make_shared<const cost::MachineProfile>(
                         cost::defaultMachineProfile());
  space->maxTensorParallel = machine->devicesPerNode;
  // Imported once; every candidate compiles a copy.
  OwningOpRef<ModuleOp> imported = Compilation::importModel(ctx, model, base);
  if (!imported)
    return failure();
  ModelStateBytes bytes;
  {
    // The unsharded step: its layers and its model states.
    CompileOptions plain = trial;
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

  // Training steps whose layers form one chain are predicted from layer
  // terms; others (forward models, no repeated layers) are compiled whole.
  LayerProbes probes{ctx, model, trial, space->layerGlob, 1, {}, {}, {}, 0, 0};
  std::optional<ModelShape> shape;
  if (space->training && !space->layerGlob.empty()) {
    StringRef glob(space->layerGlob);
    FailureOr<ModelShape> read =
        readModelShape(*imported, glob.drop_back(2), space->layers);
    if (succeeded(read)) {
      probes.kept = std::min<int64_t>(2, read->layers - 1);
      probes.one = keepFirstLayers(*imported, *read, probes.kept);
      probes.two = keepFirstLayers(*imported, *read, probes.kept + 1);
      if (probes.one && probes.two)
        shape = *read;
    }
  }

  SearchResult result;
  result.memoryBudget = options.memoryBudget;
  result.layerGlob = space->layerGlob;
  auto fits = [&](const Prediction &p) {
    return !options.memoryBudget || p.peakBytes <= *options.memoryBudget;
  };
  auto predicted = [](const Evaluation &e) {
    return e.status == Evaluation::Status::Compiled ||
           e.status == Evaluation::Status::Predicted;
  };
  // The fastest predicted step that fits so far: pipelines whose busiest
  // stage alone is slower are not simulated.
  double fastestFit = std::numeric_limits<double>::infinity();
  // The fastest whole compile that fits so far, kept for the tool: the
  // winner is the fastest of the whole compiles that fit.
  KeptCompile fastestCompile;
  std::string fastestCompiled;
  double fastestCompiledUs = std::numeric_limits<double>::infinity();
  // One candidate: from its choice's layer terms, or compiled whole.
  auto compileWhole = [&](const Candidate &c) {
    auto start = std::chrono::steady_clock::now();
    KeptCompile kept;
    Evaluation e = evaluateCandidate(ctx, *imported, model, trial, c,
                                     space->layerGlob, &kept);
    if (e.status == Evaluation::Status::Compiled && fits(e.prediction) &&
        e.prediction.stepUs < fastestCompiledUs) {
      fastestCompile = std::move(kept);
      fastestCompiled = c.mesh() + " " + c.describe();
      fastestCompiledUs = e.prediction.stepUs;
    }
    result.compileSeconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    return e;
  };
  auto evaluate = [&](const Candidate &c) {
    if (!shape)
      return compileWhole(c);
    Evaluation e{c, Evaluation::Status::Rejected, {}, {}, false};
    // Each data-parallel rank splits its own rows into the microbatches.
    int64_t ranks = c.dp * c.replicate;
    if (c.pp > 1 && shape->batch > 0 &&
        shape->batch % (ranks * c.microbatches) != 0) {
      e.reason = "pipeline: " + std::to_string(c.microbatches) +
                 " microbatches split the batch (dimension 0 of every "
                 "input), whose " +
                 std::to_string(shape->batch) + " rows do not divide into " +
                 std::to_string(c.microbatches) +
                 (ranks > 1 ? " on each of " + std::to_string(ranks) +
                                  " data-parallel ranks"
                            : std::string());
      return e;
    }
    const LayerProbes::Entry &entry = probes.terms(c);
    if (!entry.terms) {
      e.reason = entry.error;
      return e;
    }
    // A recomputing zero-bubble pipeline's weight passes read the layers'
    // whole activations, recomputed for the backward: the terms without
    // recomputation say how much (a std::map entry: `entry` stays valid).
    const LayerTerms *withoutRecompute = nullptr;
    if (c.recompute && c.pp > 1 && c.schedule == "zb-h1") {
      Candidate twin = c;
      twin.recompute = false;
      const LayerProbes::Entry &full = probes.terms(twin);
      if (full.terms)
        withoutRecompute = &*full.terms;
    }
    e.status = Evaluation::Status::Predicted;
    e.prediction = composePrediction(
        *entry.terms, withoutRecompute, *shape, c, LayerProbes::probeOf(c),
        machine, options.exhaustive ? std::nullopt : options.memoryBudget,
        options.exhaustive ? std::numeric_limits<double>::infinity()
                           : fastestFit);
    if (e.prediction.timed && fits(e.prediction))
      fastestFit = std::min(fastestFit, e.prediction.stepUs);
    return e;
  };

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
      if (bound > *options.memoryBudget && !options.exhaustive) {
        Evaluation e{c, Evaluation::Status::Screened, {}, {}, false};
        e.reason = "model states at least " + mib(bound);
        result.evaluations.push_back(std::move(e));
        ++result.screened;
        continue;
      }
    }
    // Recomputation only adds work: where the same plan without it fits,
    // it is at least as fast (it comes just before in the order).
    if (c.recompute && !options.exhaustive) {
      Candidate twin = c;
      twin.recompute = false;
      auto it = byDescription.find(twin.mesh() + " " + twin.describe());
      if (it != byDescription.end() &&
          fits(result.evaluations[it->second].prediction)) {
        Evaluation e{c, Evaluation::Status::Dominated, {}, {}, false};
        e.reason = "the same plan without recompute fits";
        result.evaluations.push_back(std::move(e));
        ++result.dominated;
        continue;
      }
    }
    Evaluation e = evaluate(c);
    if (e.status == Evaluation::Status::Rejected)
      ++result.rejected;
    else
      byDescription[c.mesh() + " " + c.describe()] = result.evaluations.size();
    result.evaluations.push_back(std::move(e));
  }

  // The fastest predictions that fit are compiled whole: the winner is the
  // fastest of those the compiler confirms fit. One that does not fit after
  // all brings back its recompute twin, if that was skipped for it.
  // Candidate i compiled whole in its place, keeping what its layer terms
  // composed (the report shows both); a rejection is counted.
  auto compileInPlace = [&](size_t i) -> Evaluation & {
    Prediction composed = result.evaluations[i].prediction;
    result.evaluations[i] = compileWhole(result.evaluations[i].candidate);
    Evaluation &e = result.evaluations[i];
    e.composed = composed;
    if (e.status == Evaluation::Status::Rejected)
      ++result.rejected;
    return e;
  };
  auto confirm = [&] {
    std::vector<size_t> pending;
    // Fastest first; among equal steps the one enumerated first (the lower
    // ZeRO level).
    auto byStep = [&](size_t a, size_t b) {
      double sa = result.evaluations[a].prediction.stepUs,
             sb = result.evaluations[b].prediction.stepUs;
      return sa > sb || (sa == sb && a > b);
    };
    for (auto [i, e] : llvm::enumerate(result.evaluations))
      if (e.status == Evaluation::Status::Predicted && e.prediction.timed &&
          fits(e.prediction))
        pending.push_back(i);
    std::make_heap(pending.begin(), pending.end(), byStep);
    // A prediction equal to a compiled one's on the same mesh (ZeRO 1 and
    // 2 without accumulation make the same step) counts as confirmed by it
    // and is not compiled again: the compile could only tell two equal
    // predictions apart by the composition's own error.
    auto alikeCompiled = [&](size_t i) -> int64_t {
      const Evaluation &e = result.evaluations[i];
      auto same = [](double a, double b) {
        return std::abs(a - b) <= 1e-6 * std::max(std::abs(a), std::abs(b));
      };
      for (auto [j, o] : llvm::enumerate(result.evaluations))
        if (o.status == Evaluation::Status::Compiled && o.composed &&
            fits(o.prediction) && o.candidate.mesh() == e.candidate.mesh() &&
            same(o.composed->stepUs, e.prediction.stepUs) &&
            same(o.composed->peakBytes, e.prediction.peakBytes))
          return j;
      return -1;
    };
    int64_t confirmed = 0;
    while (confirmed < kConfirmed && !pending.empty()) {
      std::pop_heap(pending.begin(), pending.end(), byStep);
      size_t i = pending.back();
      pending.pop_back();
      if (int64_t twin = options.exhaustive ? -1 : alikeCompiled(i);
          twin >= 0) {
        result.evaluations[i].alikeOf = twin;
        ++result.alike;
        ++confirmed;
        continue;
      }
      Candidate c = result.evaluations[i].candidate;
      Evaluation &e = compileInPlace(i);
      if (e.status == Evaluation::Status::Rejected)
        continue;
      if (fits(e.prediction)) {
        ++confirmed;
        continue;
      }
      if (c.recompute)
        continue;
      c.recompute = true;
      for (auto [j, twin] : llvm::enumerate(result.evaluations)) {
        if (twin.status != Evaluation::Status::Dominated ||
            twin.candidate.mesh() + " " + twin.candidate.describe() !=
                c.mesh() + " " + c.describe())
          continue;
        --result.dominated;
        twin = evaluate(c);
        if (twin.status == Evaluation::Status::Rejected) {
          ++result.rejected;
          break;
        }
        byDescription[c.mesh() + " " + c.describe()] = j;
        if (twin.status == Evaluation::Status::Compiled)
          continue;
        if (twin.prediction.timed && fits(twin.prediction)) {
          pending.push_back(j);
          std::push_heap(pending.begin(), pending.end(), byStep);
        }
        break;
      }
    }
  };
  if (shape) {
    confirm();
    // Pipelines were left unsimulated behind the fastest composed step that
    // fit; if no whole compile fits after all, that bound was no bound:
    // simulate them and confirm again, rather than say nothing fits.
    auto compiledFit = [&](const Evaluation &e) {
      return e.status == Evaluation::Status::Compiled && fits(e.prediction);
    };
    if (llvm::none_of(result.evaluations, compiledFit)) {
      fastestFit = std::numeric_limits<double>::infinity();
      bool again = false;
      for (Evaluation &e : result.evaluations)
        if (e.status == Evaluation::Status::Predicted && !e.prediction.timed &&
            fits(e.prediction)) {
          e = evaluate(e.candidate);
          again |= e.prediction.timed;
        }
      if (again)
        confirm();
    }
    // A composed peak can be a few percent over the compiled one: rather
    // than say nothing fits, compile whole the candidates predicted just
    // over the budget, the smallest first.
    if (options.memoryBudget &&
        llvm::none_of(result.evaluations, compiledFit)) {
      double limit = *options.memoryBudget * (1 + kNearMiss);
      std::vector<size_t> near;
      for (auto [i, e] : llvm::enumerate(result.evaluations))
        if (e.status == Evaluation::Status::Predicted && !fits(e.prediction) &&
            e.prediction.peakBytes <= limit)
          near.push_back(i);
      llvm::stable_sort(near, [&](size_t a, size_t b) {
        return result.evaluations[a].prediction.peakBytes <
               result.evaluations[b].prediction.peakBytes;
      });
      for (size_t i : llvm::ArrayRef(near).take_front(kConfirmed)) {
        compileInPlace(i);
        ++result.nearMisses;
      }
    }
  }
  for (const Evaluation &e : result.evaluations) {
    result.compiled += e.status == Evaluation::Status::Compiled;
    result.predicted += e.status == Evaluation::Status::Predicted;
    if (e.status == Evaluation::Status::Predicted && !e.prediction.timed)
      ++(fits(e.prediction) ? result.bounded : result.overBudget);
  }
  result.probes = probes.compiles;
  result.probeSeconds = probes.seconds;

  // Recomputation's cost: the compute beyond the same plan's without it.
  for (Evaluation &e : result.evaluations) {
    if (!predicted(e) || !e.candidate.recompute || !e.prediction.timed)
      continue;
    Candidate twin = e.candidate;
    twin.recompute = false;
    auto it = byDescription.find(twin.mesh() + " " + twin.describe());
    if (it == byDescription.end() || !predicted(result.evaluations[it->second]))
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
    if (!predicted(e))
      continue;
    const Prediction &p = e.prediction;
    e.fits = fits(p);
    if (!smallest || p.peakBytes < smallest->prediction.peakBytes)
      smallest = &e;
    if (!e.fits)
      continue;
    ++result.fit;
    // Only a whole compile's prediction wins.
    if (e.status != Evaluation::Status::Compiled)
      continue;
    if (result.winner < 0 ||
        p.stepUs < result.evaluations[result.winner].prediction.stepUs)
      result.winner = i;
  }
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  Location loc = UnknownLoc::get(&ctx);
  if (result.winner >= 0) {
    result.predictedWinner = result.winner;
    const Candidate &winner = result.evaluations[result.winner].candidate;
    result.options = candidateOptions(&ctx, base, winner, space->layerGlob);
    if (fastestCompiled == winner.mesh() + " " + winner.describe())
      result.winnerCompile = std::move(fastestCompile);
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
