//===- ReshardPlanner.h - cheapest collectives between shardings -*- C++
//-*-===//
//
// A reshard is a path between two shardings; each edge is one collective (or
// a free local step) on one mesh axis. The planner runs a shortest-path
// search over shardings, weighting each edge by its time under the cost model
// (latency plus the bytes a device sends over the axis's bandwidth), and
// returns the cheapest sequence. See docs/resharding.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_DIST_TRANSFORMS_RESHARDPLANNER_H
#define DISTOPT_DIALECT_DIST_TRANSFORMS_RESHARDPLANNER_H

#include "distopt/CostModel/CostModel.h"
#include "distopt/Dialect/Dist/IR/DistAttrs.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>
#include <string>

namespace distopt::dist {

struct ReshardStep {
  enum class Kind : uint8_t {
    AllGather,     // S(dim) on axis (and axis2, at once) -> R
    AllReduce,     // P on axis (and axis2, at once) -> R
    ReduceScatter, // P on axis (and axis2, at once) -> S(dim)
    AllToAll,      // S(dim) on axis -> S(dim2)
    LocalSlice,    // R on axis -> S(dim), no communication
    Permute,       // swap the placements of axis and axis2 (equal sizes)
    ToPartial,     // R on axis -> P, no communication
  };
  Kind kind;
  int64_t axis = -1;
  int64_t axis2 = -1;
  int64_t dim = -1;
  int64_t dim2 = -1;
  ReductionKind reduction = ReductionKind::Sum;
  /// Placements after the step.
  llvm::SmallVector<Placement> after;
  /// Bytes one device sends in this step.
  double bytes = 0;
  /// Estimated time of the step (see ReshardProblem for the unit).
  double cost = 0;

  std::string str() const;
};

struct ReshardPlan {
  llvm::SmallVector<ReshardStep> steps;
  double bytes = 0;
  double cost = 0;
  /// True if the plan gathers a dimension and later slices it again.
  bool gathersThenSlices = false;
};

/// What a reshard moves: a tensor's global shape, its element size, and the
/// mesh. A step on axis `a` takes `latency[a] + bytes / bandwidth[a]` (a
/// permute over two axes the larger latency and the smaller bandwidth): the
/// latency keeps plans short, so a plain all-reduce is not traded for three
/// collectives that move a few bytes less, and a slow axis makes plans move
/// fewer bytes over it. useLinks fills both from the cost model
/// (microseconds, bytes per microsecond). Left empty, every axis has latency
/// 1 MiB and bandwidth 1: time counted in bytes, uniform links.
struct ReshardProblem {
  llvm::SmallVector<int64_t> globalShape;
  int64_t elementBytes = 4;
  llvm::SmallVector<int64_t> meshSizes;
  llvm::SmallVector<double> latency;
  llvm::SmallVector<double> bandwidth;
  /// Per axis; true: no step may use it (a pipeline stage's own axis: the
  /// devices along it run other stages). Empty means none is frozen.
  llvm::SmallVector<bool> frozenAxes;
  /// Per axis, the placement the plan heads for: a split with explicit piece
  /// sizes is only reached by steps that make those pieces (planReshard
  /// fills it in). Empty means even splits only.
  llvm::SmallVector<Placement> targets;
};

/// Sets `problem`'s per-axis latency and bandwidth from `mesh` (the links
/// of the mesh's axes under a machine profile).
void useLinks(ReshardProblem &problem, const cost::MeshCost &mesh);

/// The steps allowed from `state`, each with the state it leads to and its
/// cost. Exposed so tests can search independently.
llvm::SmallVector<ReshardStep> possibleSteps(const ReshardProblem &problem,
                                             llvm::ArrayRef<Placement> state);

/// Bytes per device of the largest local piece of the tensor in `state`.
double localBytes(const ReshardProblem &problem,
                  llvm::ArrayRef<Placement> state);

/// The cheapest plan from `from` to `to` (open placements count as
/// replicated); std::nullopt if no sequence of steps connects them.
std::optional<ReshardPlan> planReshard(const ReshardProblem &problem,
                                       llvm::ArrayRef<Placement> from,
                                       llvm::ArrayRef<Placement> to);

} // namespace distopt::dist

#endif // DISTOPT_DIALECT_DIST_TRANSFORMS_RESHARDPLANNER_H
