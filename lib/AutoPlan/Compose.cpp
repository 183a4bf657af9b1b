//===- Compose.cpp - a candidate from its choice's layer terms --*- C++ -*-===//
//
// A candidate's step is `layers` times one layer plus the rest
// (LayerTerms.cpp), adjusted for what the compiled probe did not have:
//  - dp: a rank runs probeDp / dp of the probe's rows (rep x dp with HSDP),
//    so its forward and backward compute, its activations and its
//    collectives over tp scale by that share; what ZeRO splits over dp
//    (states from level 1, gradients from 2, parameters at 3) by probeDp /
//    dp; collectives over dp keep their size and are timed by the cost
//    model for the candidate's group; over rep alone (HSDP's all-reduce of
//    each dp piece) they scale with the piece;
//  - pp: each stage holds its layers (the rest's head on the last stage, its
//    embedding on the first); one microbatch's forward and backward per
//    stage, with the sends between stages, are simulated with the
//    candidate's schedule; a stage's activations are its in-flight
//    microbatches' (the schedule's own order), with what the stage's
//    microbatch loop holds besides: its running gradient sums (whole: ZeRO
//    reduces them after the loop) from the start, to which each gradient is
//    added as it is made, and under zero-bubble what the weight pass reads
//    from the backward to it (with recomputation, the layer's whole
//    activations, recomputed for the backward).
// The step time is formed as the report forms it (Evaluate.cpp), so the
// final full compile confirms it.
//
//===----------------------------------------------------------------------===//
#include "distopt/AutoPlan/AutoPlan.h"

#include "distopt/CostModel/CostModel.h"
#include "distopt/PipelineStages/Schedule.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>

using namespace mlir;
using namespace distopt;
using namespace distopt::autoplan;

namespace {
/// The candidate's mesh and what its ranks run of the probe.
struct Composer {
  const LayerTerms &terms;
  /// The same choice's terms without recomputation (null: none asked for,
  /// or not recomputing): what a zero-bubble weight pass reads.
  const LayerTerms *withoutRecompute;
  const ModelShape &shape;
  const Candidate &c;
  cost::MeshCost links;
  std::vector<std::string> axisNames;
  double rows;       // share of the probe's rows a rank runs
  double stateShare; // of the probe's optimizer states (and their update)
  double gradientShare, parameterShare;

  double pieceShare; // of a ZeRO piece of the probe's: probe dp / dp
  /// Of the probe's gradients, what a rank's whole gradients are (the probe
  /// holds a ZeRO piece of them).
  double wholeGradientShare;

  Composer(const LayerTerms &terms, const LayerTerms *withoutRecompute,
           const ModelShape &shape, const Candidate &c, const Candidate &probe,
           std::shared_ptr<const cost::MachineProfile> machine,
           std::vector<std::string> names, std::vector<int64_t> sizes)
      : terms(terms), withoutRecompute(withoutRecompute), shape(shape), c(c),
        links(machine, names, sizes), axisNames(std::move(names)) {
    // The batch splits over rep and dp; ZeRO splits over dp only.
    rows =
        static_cast<double>(probe.dp * probe.replicate) / (c.dp * c.replicate);
    pieceShare = static_cast<double>(probe.dp) / c.dp;
    stateShare = c.zero >= 1 ? pieceShare : 1;
    // ZeRO-1's gradients are reduce-scattered as ZeRO-2's: the update of a
    // state's piece reads the gradient's piece only.
    gradientShare = c.zero >= 1 ? pieceShare : 1;
    parameterShare = c.zero >= 3 ? pieceShare : 1;
    wholeGradientShare = c.zero >= 1 ? static_cast<double>(probe.dp) : 1;
  }

  /// One run of `t` on one of `microbatches` slices of a rank's rows.
  double collectiveUs(const CollectiveTerm &t, double microbatches) const {
    std::optional<cost::Collective> kind = cost::collectiveNamed(t.kind);
    if (!kind)
      return 0;
    llvm::SmallVector<int64_t> axes;
    bool overDp = false, overRep = false;
    for (const std::string &a : t.axes) {
      overDp |= a == "dp";
      overRep |= a == "rep";
      auto it = llvm::find(axisNames, a);
      if (it != axisNames.end())
        axes.push_back(it - axisNames.begin());
    }
    if (axes.empty())
      return 0;
    // Over dp: parameters and gradients, whole; over rep alone (HSDP): the
    // pieces ZeRO cut over dp; otherwise activations.
    double held = t.tensorBytes;
    if (overRep && !overDp && c.zero >= 1)
      held *= pieceShare;
    else if (!overDp && !overRep && t.phase != "optimizer")
      held *= rows / microbatches;
    return links.collectiveUs(*kind, held, axes);
  }

  /// Collectives of `phase` for `layers` layers and `restShare` of the
  /// rest, per slice of `microbatches`: those on activations (and FSDP's
  /// parameter gathers) run once per slice; the backward's reductions over
  /// dp or rep (of gradients) once per step, after the microbatch loop has
  /// summed them, so a slice carries its share.
  double collectivesUs(StringRef phase, double layers, double restShare,
                       double microbatches) const {
    double us = 0;
    for (size_t i = 0; i < terms.layer.collectives.size(); ++i) {
      const CollectiveTerm &l = terms.layer.collectives[i];
      if (l.phase != phase)
        continue;
      double count = std::max(
          0.0, layers * l.count + restShare * terms.rest.collectives[i].count);
      bool reduction = l.kind == "all_reduce" || l.kind == "reduce_scatter";
      if (phase == "backward" && reduction &&
          llvm::any_of(l.axes, [](const std::string &a) {
            return a == "dp" || a == "rep";
          }))
        count /= microbatches;
      us += count * collectiveUs(l, microbatches);
    }
    return us;
  }

  /// `layers` layers and `share` of the rest of one term.
  static double span(double layer, double rest, double layers, double share) {
    return std::max(0.0, layers * layer + share * rest);
  }

  /// Memory of a rank holding `layers` layers and `share` of the rest's
  /// states, whose live activations are those of `inFlight` slices of
  /// `microbatches` (each of `layers` layers and `activationShare` of the
  /// rest's).
  Prediction memory(double layers, double share, double activationShare,
                    double inFlight, double microbatches) const {
    return memoryOf(terms, layers, share, activationShare, inFlight,
                    microbatches);
  }
  Prediction memoryOf(const LayerTerms &from, double layers, double share,
                      double activationShare, double inFlight,
                      double microbatches) const {
    const StepTerms &l = from.layer, &r = from.rest;
    Prediction p;
    p.parameterBytes = span(l.parameterBytes, r.parameterBytes, layers, share) *
                       parameterShare;
    p.optimizerStateBytes =
        span(l.optimizerStateBytes, r.optimizerStateBytes, layers, share) *
        stateShare;
    p.gradientBytes =
        span(l.gradientBytes, r.gradientBytes, layers, share) * gradientShare;
    double perSlice =
        span(l.liveBytes - l.gradientBytes, r.liveBytes - r.gradientBytes,
             layers, activationShare) *
        rows / microbatches;
    p.activationBytes = inFlight * perSlice;
    p.peakBytes = p.parameterBytes + p.optimizerStateBytes + p.gradientBytes +
                  p.activationBytes;
    return p;
  }

  Prediction withoutPipeline() const {
    const StepTerms &l = terms.layer, &r = terms.rest;
    double n = shape.layers;
    Prediction p = memory(n, 1, 1, 1, 1);
    p.computeUs = (span(l.forwardUs, r.forwardUs, n, 1) +
                   span(l.backwardUs, r.backwardUs, n, 1)) *
                      rows +
                  span(l.optimizerUs, r.optimizerUs, n, 1) * stateShare;
    for (const char *phase : {"forward", "backward", "optimizer"})
      p.communicationUs += collectivesUs(phase, n, 1, 1);
    p.stepUs = p.computeUs + p.communicationUs;
    return p;
  }

  Prediction withPipeline(std::optional<int64_t> budget,
                          double fastestUs) const {
    const StepTerms &l = terms.layer, &r = terms.rest;
    int64_t stages = c.pp, v = c.virtualStages, virtualStages = stages * v;
    double m = c.microbatches;
    // Layers per virtual stage, the first ones taking what does not divide.
    std::vector<double> layers(virtualStages);
    for (int64_t vs = 0; vs < virtualStages; ++vs)
      layers[vs] = shape.layers / virtualStages +
                   (vs < shape.layers % virtualStages ? 1 : 0);
    auto computeShare = [&](int64_t vs) {
      return (vs == 0 ? shape.restComputeBefore : 0) +
             (vs == virtualStages - 1 ? 1 - shape.restComputeBefore : 0);
    };
    auto stateShareOf = [&](int64_t vs) {
      return (vs == 0 ? shape.restParametersBefore : 0) +
             (vs == virtualStages - 1 ? 1 - shape.restParametersBefore : 0);
    };
    int64_t ppAxis = llvm::find(axisNames, "pp") - axisNames.begin();
    double transferUs = links.collectiveUs(
        cost::Collective::Send, shape.boundaryBytes * rows / m, {ppAxis});
    bool weights = c.schedule == "zb-h1";
    std::vector<double> fwd, bwd, wgt;
    for (int64_t vs = 0; vs < virtualStages; ++vs) {
      double share = computeShare(vs);
      double sends = (vs > 0 ? 1 : 0) + (vs < virtualStages - 1 ? 1 : 0);
      fwd.push_back(
          span(l.forwardUs, r.forwardUs, layers[vs], share) * rows / m +
          collectivesUs("forward", layers[vs], share, m) + sends * transferUs);
      double b =
          span(l.backwardUs, r.backwardUs, layers[vs], share) * rows / m +
          collectivesUs("backward", layers[vs], share, m) + sends * transferUs;
      // Zero-bubble weight passes take half a backward, as in the report.
      bwd.push_back(weights ? b / 2 : b);
      wgt.push_back(weights ? b / 2 : 0);
    }
    std::vector<std::vector<ScheduleAction>> schedule = buildSchedule(
        c.schedule, stages, c.microbatches, /*withBackward=*/true, v);

    // Memory per stage: its chunks' states and its in-flight activations
    // in the schedule's order, with the loop's gradients (the header); the
    // fullest stage counts.
    Prediction p;
    for (int64_t s = 0; s < stages; ++s) {
      double held = 0, share = 0, sums = 0;
      std::vector<double> slice(v), weightSlice(v);
      for (int64_t chunk = 0; chunk < v; ++chunk) {
        int64_t vs = chunk * stages + s;
        held += layers[vs];
        share += stateShareOf(vs);
        slice[chunk] =
            memory(layers[vs], 0, computeShare(vs), 1, m).activationBytes;
        weightSlice[chunk] = !weights ? 0
                             : withoutRecompute
                                 ? memoryOf(*withoutRecompute, layers[vs], 0,
                                            computeShare(vs), 1, m)
                                       .activationBytes
                                 : slice[chunk];
        sums += span(l.gradientBytes, r.gradientBytes, layers[vs],
                     stateShareOf(vs)) *
                wholeGradientShare;
      }
      // A microbatch's gradients join the sums as they are made.
      double live = 0, peakLive = 0;
      for (const ScheduleAction &a : schedule[s]) {
        if (a.pass == Pass::Forward) {
          live += slice[a.chunk];
        } else if (a.pass == Pass::Backward) {
          live += weightSlice[a.chunk] - slice[a.chunk];
        } else {
          live -= weightSlice[a.chunk];
        }
        peakLive = std::max(peakLive, live);
      }
      Prediction stage = memory(held, share, 0, 0, m);
      stage.activationBytes = peakLive + sums;
      stage.peakBytes += stage.activationBytes;
      if (s == 0 || stage.peakBytes > p.peakBytes)
        p = stage;
    }

    // Rank 0 (stage 0): its optimizer, its collectives, as the report.
    double layers0 = 0, share0 = 0, compute0 = 0;
    for (int64_t chunk = 0; chunk < v; ++chunk) {
      int64_t vs = chunk * stages;
      layers0 += layers[vs];
      share0 += stateShareOf(vs);
      compute0 += computeShare(vs);
    }
    double optimizerUs =
        span(l.optimizerUs, r.optimizerUs, layers0, share0) * stateShare;
    double sends0 = 0;
    for (int64_t chunk = 0; chunk < v; ++chunk) {
      int64_t vs = chunk * stages;
      sends0 += (vs > 0 ? 1 : 0) + (vs < virtualStages - 1 ? 1 : 0);
    }
    p.communicationUs = m * (collectivesUs("forward", layers0, compute0, m) +
                             collectivesUs("backward", layers0, compute0, m) +
                             2 * sends0 * transferUs) +
                        collectivesUs("optimizer", layers0, share0, 1);
    if (budget && p.peakBytes > *budget) {
      p.timed = false;
      return p;
    }
    // A stage runs its actions one at a time: the busiest stage's work is a
    // lower bound on the makespan.
    double busiest = 0;
    for (int64_t s = 0; s < stages; ++s) {
      double work = 0;
      for (const ScheduleAction &a : schedule[s]) {
        int64_t vs = a.chunk * stages + s;
        work += a.pass == Pass::Forward    ? fwd[vs]
                : a.pass == Pass::Backward ? bwd[vs]
                                           : wgt[vs];
      }
      busiest = std::max(busiest, work);
    }
    if (busiest + optimizerUs + p.communicationUs > fastestUs) {
      p.stepUs = busiest + optimizerUs + p.communicationUs;
      p.timed = false;
      return p;
    }
    ScheduleTimeline timeline = simulateSchedule(schedule, fwd, bwd, 0.0, wgt);
    p.bubbleUs = timeline.makespan * timeline.bubbleFraction;
    p.computeUs = timeline.makespan - p.bubbleUs + optimizerUs;
    p.stepUs = timeline.makespan + optimizerUs + p.communicationUs;
    return p;
  }
};
} // namespace

Prediction distopt::autoplan::composePrediction(
    const LayerTerms &terms, const LayerTerms *withoutRecompute,
    const ModelShape &shape, const Candidate &candidate, const Candidate &probe,
    std::shared_ptr<const cost::MachineProfile> machine,
    std::optional<int64_t> budget, double fastestUs) {
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  for (auto &[name, size] : candidate.axes()) {
    names.push_back(name);
    sizes.push_back(size);
  }
  Composer composer(terms, withoutRecompute, shape, candidate, probe,
                    std::move(machine), std::move(names), std::move(sizes));
  return candidate.pp > 1 ? composer.withPipeline(budget, fastestUs)
                          : composer.withoutPipeline();
}
