//===- ContextParallelCostTest.cpp - attention variant by cost --*- C++ -*-===//
//
// The attention variant context parallelism picks when the plan names none,
// on the built-in "cpu" profile: one link, alpha 10 us, beta 5 GB/s (5000
// bytes per us). A collective's time is 10 + (bytes one rank sends) / 5000;
// all-gather and reduce-scatter send (n-1)/n of the whole tensor, an
// all-to-all (n-1)/n of its per-rank piece, a permute all of its block. The
// expected winners, times and bytes held below are worked out by hand from
// those figures and ContextParallelCost.cpp's list of what each variant
// holds.
//
//===----------------------------------------------------------------------===//
#include "distopt/Plan/ContextParallelCost.h"

#include <gtest/gtest.h>

using namespace distopt;
using namespace distopt::plan;

namespace {

cost::MeshCost cpMesh(int64_t cp) {
  return cost::MeshCost(std::make_shared<const cost::MachineProfile>(
                            cost::defaultMachineProfile()),
                        {"cp"}, {cp});
}

/// f32 [batch, heads, seq, head_dim] tensors for Q, K, V and the output.
AttentionShape shape(int64_t batch, int64_t heads, int64_t seq, int64_t headDim,
                     bool training) {
  AttentionShape s;
  s.heads = heads;
  s.sequence = seq;
  s.query = s.key = s.value = s.output = 4.0 * batch * heads * seq * headDim;
  s.scores = 4.0 * batch * heads * seq * seq;
  s.training = training;
  return s;
}

const AttentionDecision::Candidate &candidate(const AttentionDecision &d,
                                              const std::string &name) {
  for (const AttentionDecision::Candidate &c : d.candidates)
    if (c.variant == name)
      return c;
  ADD_FAILURE() << "no candidate " << name;
  static AttentionDecision::Candidate none;
  return none;
}

AttentionDecision choose(const AttentionShape &s, int64_t cp,
                         std::optional<int64_t> budget = std::nullopt) {
  return chooseAttention(s, cpMesh(cp), 0, "cp", budget);
}

TEST(ContextParallelCostTest, CandidatesInTieOrder) {
  std::vector<std::string> names;
  for (const AttentionCandidate &c : contextParallelCandidates())
    names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"allgather", "ring", "ulysses"}));
}

TEST(ContextParallelCostTest, TwoRanksTrainRing) {
  // llama_long_context's attention: batch 2, 4 heads, 256 positions, head
  // size 8: each of Q, K, V, O is 64 KiB (65536 bytes), the scores 2 MiB;
  // trained on cp=2.
  // allgather: K and V gathered forward and again in backward (4) and
  // their gradients reduce-scattered (2), each sending 32 KiB:
  //   6 * (10 + 32768 / 5000) = 99.3216 us.
  // ring: one roll of the K and V blocks forward, one of their gradients
  // back: 4 permutes of 32 KiB: 4 * (10 + 32768 / 5000) = 66.2144 us.
  // ulysses: 10 all-to-alls of 32 KiB pieces, each sending 16 KiB:
  //   10 * (10 + 16384 / 5000) = 132.768 us.
  AttentionDecision d = choose(shape(2, 4, 256, 8, /*training=*/true), 2);
  EXPECT_NEAR(candidate(d, "allgather").us, 99.3216, 1e-9);
  EXPECT_NEAR(candidate(d, "ring").us, 66.2144, 1e-9);
  EXPECT_NEAR(candidate(d, "ulysses").us, 132.768, 1e-9);
  EXPECT_EQ(candidate(d, "allgather").collectives, 6);
  EXPECT_EQ(candidate(d, "ring").collectives, 4);
  EXPECT_EQ(candidate(d, "ulysses").collectives, 10);
  EXPECT_DOUBLE_EQ(candidate(d, "allgather").sentBytes, 196608);
  EXPECT_DOUBLE_EQ(candidate(d, "ring").sentBytes, 131072);
  // Held for backward: allgather the whole K and V (gathered), half of Q
  // and two halves of the scores (131072 + 32768 + 2097152); ring half of
  // Q, every block of K and V, every step's output and two halves of the
  // scores (32768 + 131072 + 65536 + 2097152); ulysses half of Q, K, V, O
  // and two halves of the scores (131072 + 2097152).
  EXPECT_DOUBLE_EQ(candidate(d, "allgather").heldBytes, 2260992);
  EXPECT_DOUBLE_EQ(candidate(d, "ring").heldBytes, 2326528);
  EXPECT_DOUBLE_EQ(candidate(d, "ulysses").heldBytes, 2228224);
  EXPECT_EQ(d.variant, "ring");
  d.layer = "layers.0.self_attn";
  EXPECT_EQ(describeDecision(d),
            "context parallelism: 'layers.0.self_attn': attention ring (cost "
            "model, cp=2, machine cpu): allgather 99.3 us (6 collectives "
            "sending 0.19 MiB, holds 2.16 MiB); ring 66.2 us (4 collectives "
            "sending 0.12 MiB, holds 2.22 MiB); ulysses 132.8 us (10 "
            "collectives sending 0.16 MiB, holds 2.12 MiB)");
}

TEST(ContextParallelCostTest, ShortSequenceOnFourRanksAllGathers) {
  // The same attention on cp=4. allgather: 6 collectives each sending 3/4
  // of 64 KiB: 6 * (10 + 49152 / 5000) = 118.9824 us. ring: 3 rolls each
  // way of K and V, 12 permutes of 16 KiB: 12 * (10 + 16384 / 5000) =
  // 159.3216 us. ulysses: 10 all-to-alls of 16 KiB pieces sending 3/4:
  // 10 * (10 + 12288 / 5000) = 124.576 us. Latency decides.
  AttentionDecision d = choose(shape(2, 4, 256, 8, /*training=*/true), 4);
  EXPECT_NEAR(candidate(d, "allgather").us, 118.9824, 1e-9);
  EXPECT_NEAR(candidate(d, "ring").us, 159.3216, 1e-9);
  EXPECT_NEAR(candidate(d, "ulysses").us, 124.576, 1e-9);
  EXPECT_EQ(d.variant, "allgather");
}

TEST(ContextParallelCostTest, LongSequenceOnFourRanksUsesUlysses) {
  // batch 1, 8 heads, 4096 positions, head size 64: each of Q, K, V, O is
  // 8 MiB (8388608 bytes), trained on cp=4.
  // allgather: 6 collectives each sending 3/4 of 8 MiB:
  //   6 * (10 + 6291456 / 5000) = 7609.7472 us.
  // ring: 12 permutes of 2 MiB blocks:
  //   12 * (10 + 2097152 / 5000) = 5153.1648 us.
  // ulysses: 10 all-to-alls of 2 MiB pieces, each sending 3/4 of it:
  //   10 * (10 + 1572864 / 5000) = 3245.728 us.
  AttentionDecision d = choose(shape(1, 8, 4096, 64, /*training=*/true), 4);
  EXPECT_NEAR(candidate(d, "allgather").us, 7609.7472, 1e-6);
  EXPECT_NEAR(candidate(d, "ring").us, 5153.1648, 1e-6);
  EXPECT_NEAR(candidate(d, "ulysses").us, 3245.728, 1e-6);
  EXPECT_EQ(d.variant, "ulysses");
}

TEST(ContextParallelCostTest, HeadsThatDoNotDivideRuleOutUlysses) {
  // The same long sequence with 6 heads on cp=4: ulysses is no candidate,
  // and ring's 5153 us (as above, the tensors are 6/8 of those: 12 * (10 +
  // 1572864 / 5000) = 3894.8736 us) beat allgather's 6 * (10 + 4718592 /
  // 5000) = 5722.3104 us: backward gathers K and V again where the ring
  // only sends their gradients back.
  AttentionDecision d = choose(shape(1, 6, 4096, 64, /*training=*/true), 4);
  EXPECT_EQ(candidate(d, "ulysses").rejected, "6 heads do not divide by cp=4");
  EXPECT_FALSE(candidate(d, "ulysses").overBudget);
  EXPECT_NEAR(candidate(d, "ring").us, 3894.8736, 1e-6);
  EXPECT_NEAR(candidate(d, "allgather").us, 5722.3104, 1e-6);
  EXPECT_EQ(d.variant, "ring");
  EXPECT_NE(describeDecision(d).find(
                "ulysses not a candidate: 6 heads do not divide by cp=4"),
            std::string::npos)
      << describeDecision(d);
}

TEST(ContextParallelCostTest, SequenceThatDoesNotDivideRulesOutRing) {
  // 256 positions on cp=3, 4 heads: neither ring nor ulysses.
  AttentionDecision d = choose(shape(2, 4, 256, 8, /*training=*/true), 3);
  EXPECT_EQ(candidate(d, "ring").rejected,
            "the sequence (256 positions) does not divide by cp=3");
  EXPECT_EQ(candidate(d, "ulysses").rejected, "4 heads do not divide by cp=3");
  EXPECT_EQ(d.variant, "allgather");
}

TEST(ContextParallelCostTest, InferenceOnTwoRanksTiesGoToTheSmallerSet) {
  // Forward only on cp=2: allgather's 2 all-gathers and ring's 2 permutes
  // each send 32 KiB: 2 * (10 + 32768 / 5000) = 33.1072 us both. Working
  // sets: allgather the whole K and V and half of Q, O and the scores
  // (131072 + 1114112); ring half of Q and O, two blocks each of K and V
  // (196608) and a quarter of the scores (524288); ring holds less and wins
  // the tie. ulysses: 4 all-to-alls, 4 * (10 + 16384 / 5000) = 53.1072 us.
  AttentionDecision d = choose(shape(2, 4, 256, 8, /*training=*/false), 2);
  EXPECT_NEAR(candidate(d, "allgather").us, 33.1072, 1e-9);
  EXPECT_NEAR(candidate(d, "ring").us, 33.1072, 1e-9);
  EXPECT_NEAR(candidate(d, "ulysses").us, 53.1072, 1e-9);
  EXPECT_DOUBLE_EQ(candidate(d, "allgather").heldBytes, 1245184);
  EXPECT_DOUBLE_EQ(candidate(d, "ring").heldBytes, 720896);
  EXPECT_DOUBLE_EQ(candidate(d, "ulysses").heldBytes, 1179648);
  EXPECT_EQ(d.variant, "ring");
}

TEST(ContextParallelCostTest, TrainingBudgetFavoursUlysses) {
  // Trained on cp=4, allgather is the fastest (119.0 us, above) and holds
  // 131072 + 16384 + 1048576 = 1196032 bytes, ring 16384 + 131072 + 65536
  // + 1048576 = 1261568 (every step's blocks kept for backward), ulysses
  // 65536 + 1048576 = 1114112. Within 1150000 bytes only ulysses is left.
  AttentionDecision d = choose(shape(2, 4, 256, 8, /*training=*/true), 4,
                               1150000);
  EXPECT_DOUBLE_EQ(candidate(d, "allgather").heldBytes, 1196032);
  EXPECT_DOUBLE_EQ(candidate(d, "ring").heldBytes, 1261568);
  EXPECT_DOUBLE_EQ(candidate(d, "ulysses").heldBytes, 1114112);
  EXPECT_TRUE(candidate(d, "ring").overBudget);
  EXPECT_EQ(d.variant, "ulysses");
}

TEST(ContextParallelCostTest, MemoryBudgetRulesOutLargeWorkingSets) {
  // The forward on cp=4: allgather is the fastest (2 x (10 + 49152 / 5000)
  // = 39.7 us against ulysses' 4 x (10 + 12288 / 5000) = 49.8 and ring's
  // 6 x (10 + 16384 / 5000) = 79.7) and holds 131072 + (131072 + 2097152)
  // / 4 = 688128 bytes, ulysses (2097152 + 262144) / 4 = 589824, ring
  // 393216 / 4 + 2097152 / 16 = 229376. A budget of 600000 bytes leaves
  // ulysses; 300000 leaves ring.
  AttentionShape s = shape(2, 4, 256, 8, /*training=*/false);
  AttentionDecision d = choose(s, 4, 600000);
  EXPECT_DOUBLE_EQ(candidate(d, "allgather").heldBytes, 688128);
  EXPECT_DOUBLE_EQ(candidate(d, "ulysses").heldBytes, 589824);
  EXPECT_DOUBLE_EQ(candidate(d, "ring").heldBytes, 229376);
  EXPECT_TRUE(candidate(d, "allgather").overBudget);
  EXPECT_EQ(d.variant, "ulysses");
  EXPECT_EQ(choose(s, 4, 300000).variant, "ring");
  // Nothing fits: allgather, said so.
  AttentionDecision none = choose(s, 4, 1000);
  EXPECT_EQ(none.variant, "allgather");
  EXPECT_NE(describeDecision(none).find("as no variant is a candidate"),
            std::string::npos);
}

TEST(ContextParallelCostTest, ExcludedCandidatesSayWhy) {
  AttentionDecision d =
      chooseAttention(shape(2, 4, 256, 8, true), cpMesh(2), 0, "cp",
                      std::nullopt, {{"ring", "a mask it cannot cut"}});
  EXPECT_EQ(candidate(d, "ring").rejected, "a mask it cannot cut");
  EXPECT_EQ(d.variant, "allgather");
}

} // namespace
