//===- ContextParallelCost.cpp - attention variant by cost ------*- C++ -*-===//
//
// Each variant's collectives are those the compile gives it (the counts in
// test/lit/train/context-parallel.test): allgather gathers K and V (again
// in backward) and reduce-scatters their gradients; ulysses moves Q, K, V
// and the output between the sequence and the head split with one
// all-to-all each (backward: dO, K, V there, dQ, dK, dV back); ring rolls
// the K and V blocks one step along the ring cp-1 times (backward: their
// gradients back). Compute is the same for all three and is left out.
//
// What a rank holds of one attention: forward alone, its working set while
// attention runs; in a training step, what it keeps for backward (each
// matmul's and softmax's inputs and outputs: two score-sized tensors, the
// scores and the probabilities or the ring steps' exponentials) and
// allgather's gathered K and V while they live. Ring keeps every step's K
// and V block and output for backward: in training it holds more than
// allgather (as the report's activation peak shows, context-parallel.test).
//
//===----------------------------------------------------------------------===//
#include "distopt/Plan/ContextParallelCost.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace distopt;
using namespace distopt::plan;
using cost::Collective;

namespace {

/// Adds `count` collectives of `bytes` (per member, as cost::bytesSent
/// counts them) over the context axis to `c`.
void add(VariantCost &c, Collective kind, double bytes, const ContextAxis &cp,
         int64_t count = 1) {
  c.us += count * cp.mesh.collectiveUs(kind, bytes, {cp.index});
  c.sent += count * cost::bytesSent(kind, bytes, cp.size());
  c.collectives += count;
}

/// "cp=4".
std::string named(const ContextAxis &cp) {
  return cp.name + "=" + std::to_string(cp.size());
}

/// Keys and values gathered along the sequence; each rank keeps its query
/// rows, so it holds the whole K and V and its rows of the scores (and,
/// training, of the probabilities; backward gathers K and V again).
std::optional<VariantCost> allgatherCost(const AttentionShape &s,
                                         const ContextAxis &cp, std::string &) {
  int64_t n = cp.size();
  VariantCost c;
  int64_t gathers = s.training ? 2 : 1;
  add(c, Collective::AllGather, s.key, cp, gathers);
  add(c, Collective::AllGather, s.value, cp, gathers);
  if (s.training) {
    add(c, Collective::ReduceScatter, s.key, cp);
    add(c, Collective::ReduceScatter, s.value, cp);
  }
  c.held = s.training ? s.key + s.value + (s.query + 2 * s.scores) / n
                     : s.key + s.value + (s.query + s.output + s.scores) / n;
  return c;
}

/// Everything split by heads around attention: 1/n of every tensor,
/// scores over the whole sequence for n-th of the heads.
std::optional<VariantCost>
ulyssesCost(const AttentionShape &s, const ContextAxis &cp, std::string &why) {
  int64_t n = cp.size();
  if (s.heads <= 0) {
    why = "needs scores shaped [batch, heads, queries, keys]";
    return std::nullopt;
  }
  if (s.heads % n != 0) {
    why = std::to_string(s.heads) + " heads do not divide by " + named(cp);
    return std::nullopt;
  }
  VariantCost c;
  for (double bytes : {s.query, s.key, s.value, s.output})
    add(c, Collective::AllToAll, bytes / n, cp);
  if (s.training)
    for (double bytes : {s.output, s.key, s.value, s.query, s.key, s.value})
      add(c, Collective::AllToAll, bytes / n, cp);
  c.held = (s.query + s.key + s.value + s.output +
            (s.training ? 2 : 1) * s.scores) /
           n;
  return c;
}

/// K and V blocks passed around the ring: forward alone, a rank holds its
/// query block, the K and V blocks of this step and the next, and one block
/// of scores; training keeps every step's blocks, scores, exponentials and
/// output for backward.
std::optional<VariantCost> ringCost(const AttentionShape &s,
                                    const ContextAxis &cp, std::string &why) {
  int64_t n = cp.size();
  if (s.sequence <= 0 || s.sequence % n != 0) {
    why = "the sequence (" + std::to_string(s.sequence) +
          " positions) does not divide by " + named(cp);
    return std::nullopt;
  }
  VariantCost c;
  int64_t rolls = (n - 1) * (s.training ? 2 : 1);
  add(c, Collective::Permute, s.key / n, cp, rolls);
  add(c, Collective::Permute, s.value / n, cp, rolls);
  double nn = static_cast<double>(n);
  c.held = s.training ? s.query / nn + s.key + s.value + s.output +
                            2 * s.scores / nn
                      : (s.query + s.output + 2 * (s.key + s.value)) / nn +
                            s.scores / (nn * nn);
  return c;
}

std::string mib(double bytes) {
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.2f MiB", bytes / (1 << 20));
  return s;
}

} // namespace

const std::vector<AttentionCandidate> &plan::contextParallelCandidates() {
  static const std::vector<AttentionCandidate> candidates = {
      {"allgather", allgatherCost},
      {"ring", ringCost},
      {"ulysses", ulyssesCost},
  };
  return candidates;
}

AttentionDecision
plan::chooseAttention(const AttentionShape &shape, const cost::MeshCost &mesh,
                      int64_t axis, llvm::StringRef axisName,
                      std::optional<int64_t> budget,
                      const std::map<std::string, std::string> &excluded) {
  ContextAxis cp{mesh, axis, axisName.str()};
  AttentionDecision decision;
  decision.axis = cp.name;
  decision.ranks = cp.size();
  decision.machine = mesh.machine().name;
  decision.memoryBudget = budget;
  const AttentionDecision::Candidate *best = nullptr;
  for (const AttentionCandidate &candidate : contextParallelCandidates()) {
    AttentionDecision::Candidate &c = decision.candidates.emplace_back();
    c.variant = candidate.name;
    std::string why;
    std::optional<VariantCost> cost = candidate.cost(shape, cp, why);
    if (auto it = excluded.find(c.variant); it != excluded.end())
      why = it->second, cost.reset();
    if (!cost) {
      c.rejected = why;
      continue;
    }
    c.us = cost->us;
    c.sentBytes = cost->sent;
    c.heldBytes = cost->held;
    c.collectives = cost->collectives;
    c.overBudget = budget && c.heldBytes > static_cast<double>(*budget);
    if (c.overBudget)
      c.rejected = "holds " + mib(c.heldBytes) + " per rank, over the " +
                   mib(static_cast<double>(*budget)) + " budget";
  }
  for (const AttentionDecision::Candidate &c : decision.candidates) {
    if (!c.rejected.empty())
      continue;
    // Equal times (within a part in a million) go to the one that holds
    // less, then to the earlier candidate.
    double tolerance = 1e-6 * std::max(1.0, best ? best->us : 0.0);
    if (!best || c.us < best->us - tolerance ||
        (c.us <= best->us + tolerance && c.heldBytes < best->heldBytes))
      best = &c;
  }
  decision.variant = best ? best->variant : "allgather";
  return decision;
}

std::string plan::describeDecision(const AttentionDecision &d) {
  std::string text;
  llvm::raw_string_ostream os(text);
  bool none = llvm::all_of(d.candidates,
                           [](const auto &c) { return !c.rejected.empty(); });
  os << "context parallelism: '" << d.layer << "': attention " << d.variant
     << (none ? ", as no variant is a candidate," : "") << " (cost model, "
     << d.axis << "=" << d.ranks << ", machine " << d.machine;
  if (d.memoryBudget)
    os << ", budget " << mib(static_cast<double>(*d.memoryBudget));
  os << "): ";
  llvm::interleave(
      d.candidates, os,
      [&](const AttentionDecision::Candidate &c) {
        os << c.variant;
        if (c.rejected.empty() || c.overBudget) {
          os << llvm::format(" %.1f us", c.us) << " (" << c.collectives
             << " collectives sending " << mib(c.sentBytes) << ", holds "
             << mib(c.heldBytes) << ")";
          if (!c.rejected.empty())
            os << " rejected: " << c.rejected;
        } else {
          os << " not a candidate: " << c.rejected;
        }
      },
      "; ");
  return text;
}
