//===- CandidateSpace.cpp - the plans --plan auto considers -----*- C++ -*-===//
//
// A candidate is a mesh factorisation (dp x tp x pp, dp split into rep x dp
// for HSDP) and what each axis does: the ZeRO level of dp, sequence parallelism
// with tp, the pipeline's schedule and microbatches, recomputation of the
// repeated layers. Every layer gets the same decision (one glob), so identical
// layers share it.
//
//===----------------------------------------------------------------------===//
#include "distopt/AutoPlan/AutoPlan.h"

#include "mlir/IR/Location.h"

#include <array>

using namespace mlir;
using namespace distopt;
using namespace distopt::autoplan;

static const char *const kZeroPresets[] = {"dp", "zero1", "zero2", "fsdp"};

std::vector<std::pair<std::string, int64_t>> Candidate::axes() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (auto [name, size] : {std::pair<const char *, int64_t>{"pp", pp},
                            {"rep", replicate},
                            {"dp", dp},
                            {"tp", tp}})
    if (size > 1)
      out.emplace_back(name, size);
  return out;
}

std::string Candidate::mesh() const {
  std::string out;
  for (auto &[name, size] : axes())
    out += (out.empty() ? "" : ",") + name + "=" + std::to_string(size);
  return out.empty() ? "dp=1" : out;
}

std::vector<std::string> Candidate::presets() const {
  std::vector<std::string> out;
  if (dp > 1 || (tp == 1 && pp == 1))
    out.push_back(kZeroPresets[zero]);
  if (tp > 1)
    out.push_back("tp");
  if (sequenceParallel)
    out.push_back("sp");
  return out;
}

std::string Candidate::describe() const {
  std::string out;
  for (const std::string &p : presets())
    out += (out.empty() ? "" : ",") + p;
  if (pp > 1) {
    out += std::string(out.empty() ? "" : " + ") + "pp " + schedule + " x" +
           std::to_string(microbatches);
    if (virtualStages > 1)
      out += " v" + std::to_string(virtualStages);
  }
  if (recompute)
    out += " + recompute";
  return out;
}

static std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0)
      out.push_back(d);
  return out;
}

std::vector<Candidate>
distopt::autoplan::enumerateCandidates(const SearchSpace &space) {
  // Mesh shapes: every dp x tp x pp = devices, tp within a node, no more
  // stages than layers; and HSDP's split of dp into rep x dp (below). A
  // fixed mesh with a rep axis keeps it for every ZeRO level.
  std::vector<std::array<int64_t, 4>> shapes; // rep, dp, tp, pp
  if (space.fixedMesh) {
    shapes.push_back({space.replicate, space.dp, space.tp, space.pp});
  } else {
    for (int64_t tp : divisors(space.devices)) {
      if (tp > space.maxTensorParallel)
        continue;
      for (int64_t pp : divisors(space.devices / tp)) {
        if (pp > 1 && (space.layerGlob.empty() || pp > space.layers))
          continue;
        int64_t dp = space.devices / (tp * pp);
        shapes.push_back({1, dp, tp, pp});
        // HSDP: fsdp groups of `shard` ranks within a node (with their tp),
        // replicated across nodes. Only where dp spans nodes (within one,
        // fsdp over all of dp has the same links and splits further), and
        // without a pipeline (pp already keeps a rank to its stage's
        // parameters).
        if (!space.training || pp > 1 || dp * tp <= space.maxTensorParallel)
          continue;
        for (int64_t shard : divisors(dp))
          if (shard > 1 && shard < dp && shard * tp <= space.maxTensorParallel)
            shapes.push_back({dp / shard, shard, tp, pp});
      }
    }
  }
  std::vector<Candidate> out;
  for (auto [rep, dp, tp, pp] : shapes) {
    // ZeRO levels 1 and 2 split what only a training step has; a searched
    // replicate axis is HSDP's (fsdp).
    std::vector<int64_t> zeros = {0};
    if (dp > 1)
      zeros = space.training ? std::vector<int64_t>{0, 1, 2, 3}
                             : std::vector<int64_t>{0, 3};
    if (rep > 1 && !space.fixedMesh)
      zeros = {3};
    std::vector<bool> sps = {false};
    if (tp > 1)
      sps.push_back(true);
    // Pipelines: each schedule with pp, 2pp and 4pp microbatches; the
    // interleaved one with two chunks per stage where there are layers for
    // them; zero-bubble needs a backward to split.
    struct Pipe {
      std::string schedule;
      int64_t microbatches, virtualStages;
    };
    std::vector<Pipe> pipes;
    if (pp == 1) {
      pipes.push_back({"", 1, 1});
    } else {
      for (int64_t m : {pp, 2 * pp, 4 * pp}) {
        pipes.push_back({"gpipe", m, 1});
        pipes.push_back({"1f1b", m, 1});
        if (space.training)
          pipes.push_back({"zb-h1", m, 1});
        if (space.layers >= 2 * pp)
          pipes.push_back({"interleaved-1f1b", m, 2});
      }
    }
    std::vector<bool> recomputes = {false};
    if (space.training && !space.layerGlob.empty())
      recomputes.push_back(true);
    for (int64_t zero : zeros)
      for (bool sp : sps)
        for (const Pipe &pipe : pipes)
          for (bool recompute : recomputes) {
            Candidate c;
            c.replicate = rep;
            c.dp = dp;
            c.tp = tp;
            c.pp = pp;
            c.zero = zero;
            c.sequenceParallel = sp;
            c.schedule = pipe.schedule;
            c.microbatches = pipe.microbatches;
            c.virtualStages = pipe.virtualStages;
            c.recompute = recompute;
            out.push_back(c);
          }
  }
  return out;
}

CompileOptions distopt::autoplan::candidateOptions(MLIRContext *ctx,
                                                   const CompileOptions &base,
                                                   const Candidate &c,
                                                   llvm::StringRef layerGlob) {
  CompileOptions options = base;
  options.meshSpec = c.mesh();
  LocationAttr loc = UnknownLoc::get(ctx);
  PlanSpec spec;
  spec.source = "--plan auto";
  spec.loc = loc;
  spec.presets = c.presets();
  if (c.pp > 1) {
    PipelineSpec pipe;
    pipe.split = layerGlob.str();
    pipe.microbatches = c.microbatches;
    pipe.schedule = c.schedule;
    pipe.virtualStages = c.virtualStages;
    pipe.loc = loc;
    spec.pipeline = pipe;
  }
  if (c.recompute)
    spec.recompute.push_back({layerGlob.str(), loc});
  options.plan = Plan();
  options.plan.specs.push_back(std::move(spec));
  return options;
}

int64_t distopt::autoplan::modelStateLowerBound(const ModelStateBytes &bytes,
                                                const Candidate &c) {
  // The busiest rank holds at least the average: tp and pp divide at most
  // everything; dp divides parameters at ZeRO 3 and states from ZeRO 1.
  double split = static_cast<double>(c.tp * c.pp);
  double parameters = bytes.parameters / split / (c.zero >= 3 ? c.dp : 1);
  double states = bytes.optimizerStates / split / (c.zero >= 1 ? c.dp : 1);
  return static_cast<int64_t>(parameters + states);
}
