//===- ContextParallelCost.h - which attention variant, by cost -*- C++ -*-===//
//
// When a plan's context parallelism does not name its attention variant
// (or the `cp` preset is used), each attention is split the way the cost
// model (CostModel.h, the one the planners and the report use) finds
// fastest: the time of the variant's collectives on the context axis
// (alpha + bytes one rank sends / beta, per collective). A variant that
// holds more of one attention per rank (forward: its working set; training:
// what it keeps for backward) than the memory budget, when one is given,
// is no candidate; neither is one that cannot split this attention
// (ulysses with heads that do not divide, ring with a sequence that does
// not). Equal times go to the one that holds less, then to the earlier
// candidate. Each variant is one cost function in
// `contextParallelCandidates()`; a new variant is one more entry there. See
// docs/plans.md, "Which variant".
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PLAN_CONTEXTPARALLELCOST_H
#define DISTOPT_PLAN_CONTEXTPARALLELCOST_H

#include "distopt/CostModel/CostModel.h"
#include "distopt/Plan/Plan.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace distopt::plan {

/// One attention's global tensors, in bytes, as the model has them: Q, Kᵀ
/// and V [batch, heads, seq, head_dim] (Kᵀ transposed), the output, and
/// the scores [batch, heads, seq, seq].
struct AttentionShape {
  int64_t heads = 0; // 0: the scores have no head dimension
  int64_t sequence = 0;
  double query = 0, key = 0, value = 0, output = 0, scores = 0;
  /// A training step also runs attention's backward.
  bool training = false;
};

/// The mesh axis the sequence is split over, with the links of its mesh.
struct ContextAxis {
  const cost::MeshCost &mesh;
  int64_t index;
  std::string name;
  int64_t size() const { return mesh.groupSize({index}); }
};

/// What one variant costs on the context axis.
struct VariantCost {
  double us = 0;   // its collectives' time under the cost model
  double sent = 0; // bytes one rank sends
  double held = 0; // bytes of one attention a rank holds (file comment)
  int64_t collectives = 0;
};

/// A variant and its cost function; nothing where it cannot split this
/// attention (`why` then says why not).
struct AttentionCandidate {
  const char *name;
  std::function<std::optional<VariantCost>(
      const AttentionShape &, const ContextAxis &, std::string &why)>
      cost;
};

/// The candidates, in the order ties go.
const std::vector<AttentionCandidate> &contextParallelCandidates();

/// The fastest candidate for `shape` split over mesh axis `axis` (named
/// `axisName`) that holds at most `budget` (bytes; none: any). `excluded`
/// names candidates left out for reasons outside the shape (ring where the ring
/// rewrite cannot take this attention), with why. Without any candidate
/// left, allgather, said so in the decision.
AttentionDecision
chooseAttention(const AttentionShape &shape, const cost::MeshCost &mesh,
                int64_t axis, llvm::StringRef axisName,
                std::optional<int64_t> budget,
                const std::map<std::string, std::string> &excluded = {});

/// The decision in one line, for a remark: "'layer': attention V (cost
/// model, cp=N, machine M): ring 66.2 us (...); allgather ...; ulysses not
/// a candidate (...)".
std::string describeDecision(const AttentionDecision &decision);

} // namespace distopt::plan

#endif // DISTOPT_PLAN_CONTEXTPARALLELCOST_H
