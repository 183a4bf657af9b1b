//===- ReshardPlanner.cpp - cheapest collectives between shardings -*- C++
//-*-===//
#include "distopt/Dialect/Dist/Transforms/ReshardPlanner.h"

#include "llvm/Support/raw_ostream.h"
#include <map>
#include <queue>

using namespace distopt::dist;
namespace cost = distopt::cost;
using llvm::ArrayRef;
using llvm::SmallVector;

std::string ReshardStep::str() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  switch (kind) {
  case Kind::AllGather:
    os << "all_gather(axis " << axis;
    if (axis2 >= 0)
      os << ", " << axis2;
    os << ", dim " << dim << ")";
    break;
  case Kind::AllReduce:
    os << "all_reduce(axis " << axis;
    if (axis2 >= 0)
      os << ", " << axis2;
    os << ", " << stringifyReductionKind(reduction) << ")";
    break;
  case Kind::ReduceScatter:
    os << "reduce_scatter(axis " << axis;
    if (axis2 >= 0)
      os << ", " << axis2;
    os << ", dim " << dim << ", " << stringifyReductionKind(reduction) << ")";
    break;
  case Kind::AllToAll:
    os << "all_to_all(axis " << axis << ", dim " << dim << " -> " << dim2
       << ")";
    break;
  case Kind::LocalSlice:
    os << "local_slice(axis " << axis << ", dim " << dim << ")";
    break;
  case Kind::Permute:
    os << "collective_permute(axes " << axis << ", " << axis2 << ")";
    break;
  case Kind::ToPartial:
    os << "to_partial(axis " << axis << ", "
       << stringifyReductionKind(reduction) << ")";
    break;
  }
  return s;
}

void distopt::dist::useLinks(ReshardProblem &problem,
                             const cost::MeshCost &mesh) {
  problem.latency.clear();
  problem.bandwidth.clear();
  for (int64_t a = 0; a < mesh.numAxes(); ++a) {
    problem.latency.push_back(mesh.axisLink(a).alphaUs);
    problem.bandwidth.push_back(mesh.axisLink(a).betaGBps * 1e3);
  }
}

/// The time of a step on `axis` (and `axis2`, for a permute) moving
/// `bytes`: the slower link's.
static double stepTime(const ReshardProblem &problem, int64_t axis,
                       int64_t axis2, double bytes) {
  auto latency = [&](int64_t a) {
    return problem.latency.empty() ? double(1 << 20) : problem.latency[a];
  };
  auto bandwidth = [&](int64_t a) {
    return problem.bandwidth.empty() ? 1.0 : problem.bandwidth[a];
  };
  double l = latency(axis), b = bandwidth(axis);
  if (axis2 >= 0) {
    l = std::max(l, latency(axis2));
    b = std::min(b, bandwidth(axis2));
  }
  return l + bytes / b;
}

static Placement normalize(Placement p) {
  return p.isOpen() ? Placement::replicate() : p;
}

double distopt::dist::localBytes(const ReshardProblem &problem,
                                 ArrayRef<Placement> state) {
  double bytes = problem.elementBytes;
  for (int64_t d = 0, e = problem.globalShape.size(); d < e; ++d) {
    int64_t pieces = 1, largest = -1;
    for (auto [axis, p] : llvm::enumerate(state))
      if (p.isShardOf(d)) {
        pieces *= problem.meshSizes[axis];
        if (p.hasSizes())
          largest = *llvm::max_element(p.sizes.asArrayRef());
      }
    int64_t extent = problem.globalShape[d];
    bytes *= largest >= 0 ? largest : (extent + pieces - 1) / pieces;
  }
  return bytes;
}

/// True if no axis after `axis` shards `dim`: `axis` is the innermost split.
static bool isInnermost(ArrayRef<Placement> state, int64_t axis, int64_t dim) {
  for (int64_t b = axis + 1, e = state.size(); b < e; ++b)
    if (state[b].isShardOf(dim))
      return false;
  return true;
}

/// Swapping axes a < b keeps every device's data when no axis between them
/// shards a dimension either of them shards.
static bool canSwap(ArrayRef<Placement> state, int64_t a, int64_t b) {
  for (const Placement &p : {state[a], state[b]}) {
    if (p.isPartial())
      return false;
    if (!p.isShard())
      continue;
    for (int64_t m = a + 1; m < b; ++m)
      if (state[m].isShardOf(p.dim))
        return false;
  }
  return true;
}

/// Every split divides evenly: all devices hold pieces of one shape, so a
/// device can take over another's piece (a permute keeps shapes).
static bool evenlySplit(const ReshardProblem &problem,
                        ArrayRef<Placement> state) {
  for (int64_t d = 0, e = problem.globalShape.size(); d < e; ++d) {
    int64_t pieces = 1;
    for (auto [axis, p] : llvm::enumerate(state)) {
      if (p.hasSizes() && p.isShardOf(d) &&
          !llvm::all_equal(p.sizes.asArrayRef()))
        return false;
      if (p.isShardOf(d))
        pieces *= problem.meshSizes[axis];
    }
    if (problem.globalShape[d] % pieces != 0)
      return false;
  }
  return true;
}

SmallVector<ReshardStep>
distopt::dist::possibleSteps(const ReshardProblem &problem,
                             ArrayRef<Placement> state) {
  SmallVector<ReshardStep> steps;
  int64_t numAxes = state.size();
  int64_t rank = problem.globalShape.size();
  double local = localBytes(problem, state);
  // A split of `d` on `axis`: the target's explicit pieces if it asks for
  // them there, else even pieces.
  // A dimension with explicit pieces is split by one axis only.
  auto blocked = [&](int64_t axis, int64_t d) {
    for (auto [b, q] : llvm::enumerate(state))
      if (static_cast<int64_t>(b) != axis && q.isShardOf(d) &&
          (q.hasSizes() ||
           (axis < static_cast<int64_t>(problem.targets.size()) &&
            problem.targets[axis].hasSizes() &&
            problem.targets[axis].dim == d)))
        return true;
    return false;
  };
  auto shardOn = [&](int64_t axis, int64_t d) {
    if (axis < static_cast<int64_t>(problem.targets.size()) &&
        problem.targets[axis].hasSizes() && problem.targets[axis].dim == d)
      return problem.targets[axis];
    return Placement::shard(d);
  };
  auto add = [&](ReshardStep::Kind kind, int64_t axis,
                 SmallVector<Placement> after, double bytes) -> ReshardStep & {
    ReshardStep s{kind, axis};
    s.after = std::move(after);
    s.bytes = bytes;
    steps.push_back(std::move(s));
    return steps.back();
  };
  for (int64_t a = 0; a < numAxes; ++a) {
    int64_t k = problem.meshSizes[a];
    if (k <= 1 || (a < static_cast<int64_t>(problem.frozenAxes.size()) &&
                   problem.frozenAxes[a]))
      continue;
    Placement p = state[a];
    SmallVector<Placement> next(state);
    if (p.isPartial()) {
      next[a] = Placement::replicate();
      add(ReshardStep::Kind::AllReduce, a, next,
          cost::bytesSent(cost::Collective::AllReduce, local, k))
          .reduction = p.reduction;
      for (int64_t d = 0; d < rank; ++d) {
        if (!isInnermost(state, a, d) || blocked(a, d))
          continue;
        next[a] = shardOn(a, d);
        ReshardStep &s =
            add(ReshardStep::Kind::ReduceScatter, a, next,
                cost::bytesSent(cost::Collective::ReduceScatter, local, k));
        s.dim = d;
        s.reduction = p.reduction;
      }
    } else if (p.isShard()) {
      if (!isInnermost(state, a, p.dim))
        continue;
      next[a] = Placement::replicate();
      double after = localBytes(problem, next);
      add(ReshardStep::Kind::AllGather, a, next,
          cost::bytesSent(cost::Collective::AllGather, after, k))
          .dim = p.dim;
      for (int64_t d = 0; d < rank; ++d) {
        if (d == p.dim || !isInnermost(state, a, d) || blocked(a, d))
          continue;
        next[a] = shardOn(a, d);
        ReshardStep &s =
            add(ReshardStep::Kind::AllToAll, a, next,
                cost::bytesSent(cost::Collective::AllToAll, local, k));
        s.dim = p.dim;
        s.dim2 = d;
      }
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        if (!isInnermost(state, a, d) || blocked(a, d))
          continue;
        next[a] = shardOn(a, d);
        add(ReshardStep::Kind::LocalSlice, a, next, 0).dim = d;
      }
      for (ReductionKind r : {ReductionKind::Sum, ReductionKind::Max,
                              ReductionKind::Min, ReductionKind::Avg}) {
        next[a] = Placement::partial(r);
        add(ReshardStep::Kind::ToPartial, a, next, 0).reduction = r;
      }
    }
  }
  // Time of each step: latency plus bytes over the axis bandwidth; local
  // steps cost nothing but a tie-breaking trifle.
  for (ReshardStep &s : steps) {
    bool local = s.kind == ReshardStep::Kind::LocalSlice ||
                 s.kind == ReshardStep::Kind::ToPartial;
    s.cost = local ? 1e-6 : stepTime(problem, s.axis, s.axis2, s.bytes);
  }
  // A partial sum over two axes reduced at once: one all-reduce over the
  // group of both (Megatron's data-parallel group with context parallelism)
  // instead of one per axis.
  auto usable = [&](int64_t a) {
    return problem.meshSizes[a] > 1 &&
           !(a < static_cast<int64_t>(problem.frozenAxes.size()) &&
             problem.frozenAxes[a]);
  };
  for (int64_t a = 0; a < numAxes; ++a) {
    for (int64_t b = a + 1; b < numAxes; ++b) {
      if (!usable(a) || !usable(b) || !state[a].isPartial() ||
          state[a] != state[b])
        continue;
      SmallVector<Placement> next(state);
      next[a] = next[b] = Placement::replicate();
      ReshardStep &s = add(
          ReshardStep::Kind::AllReduce, a, next,
          cost::bytesSent(cost::Collective::AllReduce, local,
                          problem.meshSizes[a] * problem.meshSizes[b]));
      s.axis2 = b;
      s.reduction = state[a].reduction;
      s.cost = stepTime(problem, a, b, s.bytes);
    }
  }
  // A dimension split over two axes at once, a outside b (FSDP over dp x
  // cp: torchtitan's flattened dp_shard x cp): one reduce-scatter or
  // all-gather over the group of both, whose order (a major) is the order
  // of the pieces, instead of one per axis. Even pieces only, and no other
  // axis after a splitting the dimension.
  auto pairInnermost = [&](int64_t a, int64_t b, int64_t d) {
    for (int64_t m = a + 1; m < numAxes; ++m)
      if (m != b && state[m].isShardOf(d))
        return false;
    return true;
  };
  auto dividesAfter = [&](ArrayRef<Placement> after, int64_t d) {
    int64_t pieces = 1;
    for (auto [axis, p] : llvm::enumerate(after)) {
      if (p.hasSizes() && p.isShardOf(d))
        return false;
      if (p.isShardOf(d))
        pieces *= problem.meshSizes[axis];
    }
    return problem.globalShape[d] % pieces == 0;
  };
  auto targetSized = [&](int64_t axis) {
    return axis < static_cast<int64_t>(problem.targets.size()) &&
           problem.targets[axis].hasSizes();
  };
  for (int64_t a = 0; a < numAxes; ++a) {
    for (int64_t b = a + 1; b < numAxes; ++b) {
      if (!usable(a) || !usable(b) || targetSized(a) || targetSized(b))
        continue;
      int64_t group = problem.meshSizes[a] * problem.meshSizes[b];
      for (int64_t d = 0; d < rank; ++d) {
        if (!pairInnermost(a, b, d))
          continue;
        SmallVector<Placement> next(state);
        if (state[a].isPartial() && state[a] == state[b]) {
          next[a] = next[b] = Placement::shard(d);
          if (!dividesAfter(next, d))
            continue;
          ReshardStep &s = add(
              ReshardStep::Kind::ReduceScatter, a, next,
              cost::bytesSent(cost::Collective::ReduceScatter, local, group));
          s.axis2 = b;
          s.dim = d;
          s.reduction = state[a].reduction;
          s.cost = stepTime(problem, a, b, s.bytes);
        } else if (state[a].isShardOf(d) && state[b].isShardOf(d) &&
                   dividesAfter(state, d)) {
          next[a] = next[b] = Placement::replicate();
          ReshardStep &s =
              add(ReshardStep::Kind::AllGather, a, next,
                  cost::bytesSent(cost::Collective::AllGather,
                                  localBytes(problem, next), group));
          s.axis2 = b;
          s.dim = d;
          s.cost = stepTime(problem, a, b, s.bytes);
        }
      }
    }
  }
  for (int64_t a = 0; a < numAxes; ++a) {
    for (int64_t b = a + 1; b < numAxes; ++b) {
      if (problem.meshSizes[a] != problem.meshSizes[b] ||
          problem.meshSizes[a] <= 1 || state[a] == state[b] ||
          !canSwap(state, a, b) || !evenlySplit(problem, state))
        continue;
      SmallVector<Placement> next(state);
      std::swap(next[a], next[b]);
      ReshardStep &s = add(ReshardStep::Kind::Permute, a, next,
                           cost::bytesSent(cost::Collective::Permute, local,
                                           problem.meshSizes[a]));
      s.axis2 = b;
      s.cost = stepTime(problem, a, b, s.bytes);
    }
  }
  return steps;
}

namespace {
/// Placements encoded as integers so states compare and hash cheaply.
using Key = SmallVector<int64_t, 4>;
Key encode(ArrayRef<Placement> state) {
  Key k;
  for (const Placement &p : state) {
    k.push_back(static_cast<int64_t>(p.kind) * 1024 +
                (p.isShard() ? p.dim : 0) +
                (p.isPartial() ? static_cast<int64_t>(p.reduction) : 0));
    // Explicit pieces by value, so states order the same in every run.
    if (p.hasSizes()) {
      k.push_back(-static_cast<int64_t>(p.sizes.size()) - 1);
      k.append(p.sizes.asArrayRef().begin(), p.sizes.asArrayRef().end());
    }
  }
  return k;
}
struct KeyLess {
  bool operator()(const Key &a, const Key &b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};
} // namespace

std::optional<ReshardPlan>
distopt::dist::planReshard(const ReshardProblem &problem,
                           ArrayRef<Placement> fromRaw,
                           ArrayRef<Placement> toRaw) {
  SmallVector<Placement> from, to;
  for (const Placement &p : fromRaw)
    from.push_back(normalize(p));
  for (const Placement &p : toRaw)
    to.push_back(normalize(p));
  // Over an axis of one device every placement is the whole tensor (a
  // partial value summed over one rank is itself): nothing moves there.
  for (size_t a = 0; a < from.size() && a < to.size(); ++a)
    if (a < problem.meshSizes.size() && problem.meshSizes[a] == 1)
      from[a] = to[a] = Placement::replicate();
  ReshardPlan plan;
  if (from == to)
    return plan;
  ReshardProblem withTargets = problem;
  withTargets.targets = to;

  // Dijkstra on (cost, steps); ties break on the order steps are generated,
  // which is deterministic.
  struct Node {
    double cost;
    int64_t steps;
    int64_t id;
    bool operator>(const Node &o) const {
      return std::tie(cost, steps, id) > std::tie(o.cost, o.steps, o.id);
    }
  };
  struct Visit {
    SmallVector<Placement> state;
    double cost;
    int64_t steps;
    int64_t parent;
    ReshardStep via;
  };
  std::vector<Visit> visits;
  std::map<Key, int64_t, KeyLess> best;
  std::priority_queue<Node, std::vector<Node>, std::greater<Node>> queue;
  visits.push_back({from, 0, 0, -1, ReshardStep{ReshardStep::Kind::AllReduce}});
  best[encode(from)] = 0;
  queue.push({0, 0, 0});
  Key goal = encode(to);
  const double eps = 1e-9;
  while (!queue.empty()) {
    Node n = queue.top();
    queue.pop();
    const Visit &v = visits[n.id];
    if (n.cost > v.cost + eps || n.steps > v.steps)
      continue;
    Key key = encode(v.state);
    if (best[key] != n.id)
      continue;
    if (key == goal) {
      for (int64_t id = n.id; visits[id].parent >= 0; id = visits[id].parent)
        plan.steps.insert(plan.steps.begin(), visits[id].via);
      plan.cost = v.cost;
      for (const ReshardStep &s : plan.steps)
        plan.bytes += s.bytes;
      for (size_t i = 0; i < plan.steps.size(); ++i)
        for (size_t j = i + 1; j < plan.steps.size(); ++j)
          if (plan.steps[i].kind == ReshardStep::Kind::AllGather &&
              plan.steps[j].kind == ReshardStep::Kind::LocalSlice &&
              plan.steps[i].dim == plan.steps[j].dim)
            plan.gathersThenSlices = true;
      return plan;
    }
    SmallVector<Placement> state = v.state;
    double cost = v.cost;
    int64_t steps = v.steps;
    for (ReshardStep &s : possibleSteps(withTargets, state)) {
      double nb = cost + s.cost;
      int64_t ns = steps + 1;
      Key k = encode(s.after);
      auto it = best.find(k);
      if (it != best.end()) {
        const Visit &old = visits[it->second];
        if (old.cost < nb - eps ||
            (std::abs(old.cost - nb) <= eps && old.steps <= ns))
          continue;
      }
      int64_t id = visits.size();
      SmallVector<Placement> after = s.after;
      visits.push_back({std::move(after), nb, ns, n.id, std::move(s)});
      best[k] = id;
      queue.push({nb, ns, id});
    }
  }
  return std::nullopt;
}
