//===- ReshardPlannerTest.cpp - planner vs brute force ----------*- C++ -*-===//
//
// For every pair of shardings of a 2-D tensor on 2x2 and 2x4 meshes, the
// planner's plan must (1) be made of allowed steps that really lead from the
// source to the target, and (2) cost exactly as little as the cheapest
// sequence found by an exhaustive search over step sequences.
//
//===----------------------------------------------------------------------===//
#include "distopt/Dialect/Dist/Transforms/ReshardPlanner.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>
#include <map>
#include <vector>

using namespace distopt::dist;
using llvm::SmallVector;

namespace {

using State = SmallVector<Placement>;

std::vector<Placement> axisChoices() {
  return {Placement::replicate(), Placement::shard(0), Placement::shard(1),
          Placement::partial(ReductionKind::Sum),
          Placement::partial(ReductionKind::Max)};
}

std::vector<State> allStates(size_t numAxes) {
  std::vector<State> states{State{}};
  for (size_t a = 0; a < numAxes; ++a) {
    std::vector<State> next;
    for (const State &s : states)
      for (const Placement &p : axisChoices()) {
        State t = s;
        t.push_back(p);
        next.push_back(t);
      }
    states = std::move(next);
  }
  return states;
}

std::string key(const State &s) {
  std::string k;
  for (const Placement &p : s)
    k += p.str() + ",";
  return k;
}

/// Cheapest cost of reaching every state from `from` with at most
/// `maxSteps` steps: Bellman-Ford over step counts, independent of the
/// planner's Dijkstra.
std::map<std::string, double> exhaustive(const ReshardProblem &problem,
                                         const State &from, int maxSteps) {
  std::map<std::string, double> best{{key(from), 0.0}};
  std::map<std::string, State> states{{key(from), from}};
  for (int step = 0; step < maxSteps; ++step) {
    std::map<std::string, double> next = best;
    for (auto &[k, cost] : best) {
      for (const ReshardStep &s : possibleSteps(problem, states[k])) {
        std::string nk = key(s.after);
        double nc = cost + s.cost;
        auto it = next.find(nk);
        if (it == next.end() || nc < it->second - 1e-9) {
          next[nk] = nc;
          states[nk] = s.after;
        }
      }
    }
    best = std::move(next);
  }
  return best;
}

void checkMesh(SmallVector<int64_t> meshSizes, SmallVector<int64_t> shape) {
  ReshardProblem problem;
  problem.globalShape = shape;
  problem.elementBytes = 4;
  problem.meshSizes = meshSizes;
  std::vector<State> states = allStates(meshSizes.size());
  int compared = 0;
  for (const State &from : states) {
    std::map<std::string, double> brute = exhaustive(problem, from, 6);
    for (const State &to : states) {
      std::optional<ReshardPlan> plan = planReshard(problem, from, to);
      auto it = brute.find(key(to));
      if (it == brute.end()) {
        EXPECT_FALSE(plan.has_value())
            << key(from) << " -> " << key(to)
            << ": planner found a plan the exhaustive search did not";
        continue;
      }
      ASSERT_TRUE(plan.has_value())
          << key(from) << " -> " << key(to) << " reachable but not planned";
      EXPECT_NEAR(plan->cost, it->second, 1e-6 * (1 + it->second))
          << key(from) << " -> " << key(to);
      // Replay: every step must be allowed from the state before it.
      State cur = from;
      for (const ReshardStep &s : plan->steps) {
        bool allowed = false;
        for (const ReshardStep &p : possibleSteps(problem, cur))
          allowed |= p.kind == s.kind && key(p.after) == key(s.after);
        EXPECT_TRUE(allowed) << s.str() << " not allowed from " << key(cur);
        cur = s.after;
      }
      EXPECT_EQ(key(cur), key(to));
      ++compared;
    }
  }
  EXPECT_GT(compared, 300);
}

TEST(ReshardPlannerTest, MatchesExhaustiveSearchOn2x2Mesh) {
  checkMesh({2, 2}, {8, 12});
}

TEST(ReshardPlannerTest, MatchesExhaustiveSearchOn2x4Mesh) {
  checkMesh({2, 4}, {8, 12});
}

TEST(ReshardPlannerTest, MatchesExhaustiveSearchWithUnevenExtents) {
  checkMesh({2, 4}, {5, 7});
}

TEST(ReshardPlannerTest, PartialToShardIsOneReduceScatter) {
  ReshardProblem problem{{64, 64}, 4, {4}};
  auto plan = planReshard(problem, {Placement::partial(ReductionKind::Sum)},
                          {Placement::shard(1)});
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kind, ReshardStep::Kind::ReduceScatter);
  EXPECT_EQ(plan->steps[0].dim, 1);
  // A device sends 3/4 of its 16 KiB.
  EXPECT_DOUBLE_EQ(plan->bytes, 64 * 64 * 4 * 3.0 / 4.0);
}

TEST(ReshardPlannerTest, ShardToOtherDimIsAllToAllNotGatherThenSlice) {
  ReshardProblem problem{{64, 64}, 4, {4}};
  auto plan =
      planReshard(problem, {Placement::shard(0)}, {Placement::shard(1)});
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kind, ReshardStep::Kind::AllToAll);
  EXPECT_FALSE(plan->gathersThenSlices);
}

TEST(ReshardPlannerTest, LatencyKeepsAPlainAllReduce) {
  // On dp x tp, reducing over tp could first split over dp to move fewer
  // bytes, but three collectives cost more time than one here.
  ReshardProblem problem{{8, 16}, 4, {2, 4}};
  auto plan = planReshard(
      problem, {Placement::replicate(), Placement::partial(ReductionKind::Sum)},
      {Placement::replicate(), Placement::replicate()});
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kind, ReshardStep::Kind::AllReduce);
}

TEST(ReshardPlannerTest, OuterAxisCannotGatherPastAnInnerSplit) {
  // Dimension 0 split by both axes: the outer axis's piece is not contiguous
  // once the inner axis has split it, so no single gather over axis 0
  // exists; over the group of both it does.
  ReshardProblem problem{{16, 4}, 4, {2, 2}};
  State from{Placement::shard(0), Placement::shard(0)};
  int gathers = 0;
  for (const ReshardStep &s : possibleSteps(problem, from))
    if (s.kind == ReshardStep::Kind::AllGather) {
      ++gathers;
      EXPECT_TRUE(s.axis == 1 || s.axis2 == 1) << s.str();
    }
  EXPECT_EQ(gathers, 2);
}

TEST(ReshardPlannerTest, BigReduceScatterUsesIdleAxesButNeverAFrozenOne) {
  // pp x rep x tp with a 64 MiB partial sum over tp: slicing over the idle
  // replicated axes first and gathering afterwards moves fewer bytes, so the
  // planner does it -- but not over the pipeline axis of a stage, whose
  // devices run other stages.
  ReshardProblem problem{{2048, 8192}, 4, {4, 2, 8}};
  State from{Placement::replicate(), Placement::replicate(),
             Placement::partial(ReductionKind::Sum)};
  State to{Placement::replicate(), Placement::replicate(), Placement::shard(0)};
  auto free = planReshard(problem, from, to);
  ASSERT_TRUE(free);
  EXPECT_GT(free->steps.size(), 1u);
  problem.frozenAxes = {true, false, false};
  auto plan = planReshard(problem, from, to);
  ASSERT_TRUE(plan);
  bool usesRep = false;
  for (const ReshardStep &s : plan->steps) {
    EXPECT_NE(s.axis, 0) << s.str();
    EXPECT_NE(s.axis2, 0) << s.str();
    usesRep |= s.axis == 1;
  }
  EXPECT_TRUE(usesRep);
  EXPECT_GE(plan->cost, free->cost);
}

/// Two nodes of two devices: the outer axis crosses nodes. Links as the
/// built-in H100 profile has them: NVLink 5 us and 450 GB/s in a node,
/// InfiniBand 10 us and 50 GB/s across.
ReshardProblem twoNodes(bool slowOuterAxis) {
  distopt::cost::MachineProfile machine;
  machine.links["nvlink"] = {"nccl", {{0, 5, 450}}};
  machine.links["ib"] = {"nccl", {{0, 10, 50}}};
  machine.intraNode = "nvlink";
  machine.interNode = slowOuterAxis ? "ib" : "nvlink";
  machine.devicesPerNode = 2;
  distopt::cost::MeshCost mesh(
      std::make_shared<const distopt::cost::MachineProfile>(machine),
      {"node", "gpu"}, {2, 2});
  ReshardProblem problem{{512, 512}, 4, {2, 2}};
  useLinks(problem, mesh);
  return problem;
}

TEST(ReshardPlannerTest, PartialOverTwoAxesIsOneAllReduce) {
  // Without links every collective costs 1 MiB of latency: the group's one
  // all-reduce beats one per axis. A frozen axis (a pipeline's) is never
  // part of the group.
  ReshardProblem problem{{64, 64}, 4, {2, 2}};
  State from{Placement::partial(ReductionKind::Sum),
             Placement::partial(ReductionKind::Sum)};
  State to{Placement::replicate(), Placement::replicate()};
  auto plan = planReshard(problem, from, to);
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kind, ReshardStep::Kind::AllReduce);
  EXPECT_EQ(plan->steps[0].axis2, 1);
  // 2 * 3/4 of 16 KiB.
  EXPECT_DOUBLE_EQ(plan->bytes, 64 * 64 * 4 * 1.5);
  // Different reductions do not combine.
  State mixed{Placement::partial(ReductionKind::Sum),
              Placement::partial(ReductionKind::Max)};
  for (const ReshardStep &s : possibleSteps(problem, mixed))
    EXPECT_LT(s.axis2, 0) << s.str();
  problem.frozenAxes = {true, false};
  for (const ReshardStep &s : possibleSteps(problem, from))
    EXPECT_LT(s.axis2, 0) << s.str();
}

TEST(ReshardPlannerTest, DimensionSplitOverTwoAxesMovesOnceOverTheGroup) {
  // FSDP over dp x cp: a gradient partial over both axes is reduce-scattered
  // over the group of both onto one dimension (dp outside cp), and the
  // parameter gathered back in one all-gather; one axis at a time would
  // pay two latencies for the same bytes.
  ReshardProblem problem{{64, 64}, 4, {2, 2}};
  State partial{Placement::partial(ReductionKind::Sum),
                Placement::partial(ReductionKind::Sum)};
  State split{Placement::shard(0), Placement::shard(0)};
  State whole{Placement::replicate(), Placement::replicate()};
  auto scatter = planReshard(problem, partial, split);
  ASSERT_TRUE(scatter);
  ASSERT_EQ(scatter->steps.size(), 1u);
  EXPECT_EQ(scatter->steps[0].kind, ReshardStep::Kind::ReduceScatter);
  EXPECT_EQ(scatter->steps[0].axis, 0);
  EXPECT_EQ(scatter->steps[0].axis2, 1);
  EXPECT_EQ(scatter->steps[0].dim, 0);
  EXPECT_EQ(scatter->steps[0].str(), "reduce_scatter(axis 0, 1, dim 0, sum)");
  // 3/4 of 16 KiB, as a four-way reduce-scatter.
  EXPECT_DOUBLE_EQ(scatter->bytes, 64 * 64 * 4 * 3.0 / 4.0);
  auto gather = planReshard(problem, split, whole);
  ASSERT_TRUE(gather);
  ASSERT_EQ(gather->steps.size(), 1u);
  EXPECT_EQ(gather->steps[0].kind, ReshardStep::Kind::AllGather);
  EXPECT_EQ(gather->steps[0].axis2, 1);
  EXPECT_EQ(gather->steps[0].str(), "all_gather(axis 0, 1, dim 0)");
  EXPECT_DOUBLE_EQ(gather->bytes, 64 * 64 * 4 * 3.0 / 4.0);

  // Not where a third axis splits the dimension inside the pair, and not
  // into uneven pieces (6 rows over 4).
  ReshardProblem three{{64, 64}, 4, {2, 2, 2}};
  for (const ReshardStep &s :
       possibleSteps(three, {Placement::shard(0), Placement::shard(0),
                             Placement::shard(0)}))
    if (s.kind == ReshardStep::Kind::AllGather)
      EXPECT_FALSE(s.axis == 0 && s.axis2 == 1) << s.str();
  ReshardProblem uneven{{6, 64}, 4, {2, 2}};
  for (const ReshardStep &s : possibleSteps(uneven, partial))
    if (s.kind == ReshardStep::Kind::ReduceScatter)
      EXPECT_FALSE(s.axis2 >= 0 && s.dim == 0) << s.str();
}

TEST(ReshardPlannerTest, SlowAxisMovesFewerBytesOverIt) {
  // A 1 MiB partial sum over both axes, to be whole everywhere.
  State from{Placement::partial(ReductionKind::Sum),
             Placement::partial(ReductionKind::Sum)};
  State to{Placement::replicate(), Placement::replicate()};
  const double mib = 1 << 20;

  // Alike links: one all-reduce over the group of both axes (4 members),
  // sending 2 * 3/4 of 1 MiB: 5 + 1.5 MiB / 450e3 bytes/us, against
  // 2 * (5 + 1 MiB / 450e3) for one all-reduce per axis.
  auto uniform = planReshard(twoNodes(false), from, to);
  ASSERT_TRUE(uniform);
  ASSERT_EQ(uniform->steps.size(), 1u);
  EXPECT_EQ(uniform->steps[0].kind, ReshardStep::Kind::AllReduce);
  EXPECT_EQ(uniform->steps[0].axis, 0);
  EXPECT_EQ(uniform->steps[0].axis2, 1);
  EXPECT_NEAR(uniform->cost, 5 + 1.5 * mib / 450e3, 1e-9);
  EXPECT_LT(uniform->cost, 2 * (5 + mib / 450e3));

  // The outer axis over InfiniBand: reduce-scatter inside the node, reduce
  // the half over the slow axis, gather inside the node again -- half a
  // MiB over InfiniBand instead of a whole one:
  // (5 + 0.5 MiB / 450e3) + (10 + 0.5 MiB / 50e3) + (5 + 0.5 MiB / 450e3),
  // against 10 + 1 MiB / 50e3 + 5 + 1 MiB / 450e3 for the two all-reduces.
  auto slow = planReshard(twoNodes(true), from, to);
  ASSERT_TRUE(slow);
  ASSERT_EQ(slow->steps.size(), 3u) << slow->steps[0].str();
  EXPECT_EQ(slow->steps[0].kind, ReshardStep::Kind::ReduceScatter);
  EXPECT_EQ(slow->steps[0].axis, 1);
  EXPECT_EQ(slow->steps[1].kind, ReshardStep::Kind::AllReduce);
  EXPECT_EQ(slow->steps[1].axis, 0);
  EXPECT_EQ(slow->steps[2].kind, ReshardStep::Kind::AllGather);
  EXPECT_EQ(slow->steps[2].axis, 1);
  double hierarchical = (5 + 0.5 * mib / 450e3) + (10 + 0.5 * mib / 50e3) +
                        (5 + 0.5 * mib / 450e3);
  double twoAllReduces = 10 + mib / 50e3 + 5 + mib / 450e3;
  // One all-reduce over both axes runs at the slower link's rate.
  double groupAllReduce = 10 + 1.5 * mib / 50e3;
  EXPECT_NEAR(slow->cost, hierarchical, 1e-9);
  EXPECT_LT(hierarchical, twoAllReduces);
  EXPECT_LT(hierarchical, groupAllReduce);
  double overSlowAxis = 0;
  for (const ReshardStep &s : slow->steps)
    if (s.axis == 0)
      overSlowAxis += s.bytes;
  EXPECT_DOUBLE_EQ(overSlowAxis, 0.5 * mib);
}

TEST(ReshardPlannerTest, IdentityIsEmpty) {
  ReshardProblem problem{{8, 8}, 4, {2, 2}};
  auto plan = planReshard(problem, {Placement::shard(0), Placement::open()},
                          {Placement::shard(0), Placement::replicate()});
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->steps.empty());
  EXPECT_EQ(plan->bytes, 0);
}

TEST(ReshardPlannerTest, ExplicitPieceSizesAreReachedDirectly) {
  // Replicated to pieces of 6, 2, 4, 4: a local slice, nothing sent; the
  // pieces back to whole: one gather of those pieces; a partial sum to the
  // pieces: one reduce-scatter.
  mlir::MLIRContext ctx;
  ReshardProblem problem{{8, 16}, 4, {4}};
  Placement sized =
      Placement::shard(1, mlir::DenseI64ArrayAttr::get(&ctx, {6, 2, 4, 4}));
  auto slice = planReshard(problem, {Placement::replicate()}, {sized});
  ASSERT_TRUE(slice);
  ASSERT_EQ(slice->steps.size(), 1u);
  EXPECT_EQ(slice->steps[0].kind, ReshardStep::Kind::LocalSlice);
  EXPECT_EQ(slice->steps[0].after[0], sized);
  auto gather = planReshard(problem, {sized}, {Placement::replicate()});
  ASSERT_TRUE(gather);
  ASSERT_EQ(gather->steps.size(), 1u);
  EXPECT_EQ(gather->steps[0].kind, ReshardStep::Kind::AllGather);
  auto scatter =
      planReshard(problem, {Placement::partial(ReductionKind::Sum)}, {sized});
  ASSERT_TRUE(scatter);
  ASSERT_EQ(scatter->steps.size(), 1u);
  EXPECT_EQ(scatter->steps[0].kind, ReshardStep::Kind::ReduceScatter);
  EXPECT_EQ(scatter->steps[0].after[0], sized);
  // From even pieces to explicit ones: through whole data, never a
  // permute (the pieces differ in size).
  auto resize = planReshard(problem, {Placement::shard(1)}, {sized});
  ASSERT_TRUE(resize);
  for (const ReshardStep &s : resize->steps)
    EXPECT_NE(s.kind, ReshardStep::Kind::Permute) << s.str();
  EXPECT_EQ(resize->steps.back().after[0], sized);
  // The largest piece decides the local bytes.
  EXPECT_EQ(localBytes(problem, {sized}), 8 * 6 * 4);
}

} // namespace
