// The local communicator's own behaviour under faults: a failed rank wakes
// its peers, timeouts name the missing rank, a finished peer is reported at
// once. What every backend must do (each collective on 1..8 ranks, uneven
// sizes, dtypes, sub-groups, send/recv, mismatches) is in the shared
// conformance suite, comm_conformance_test.cpp, instantiated for `local`.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "test_util.h"

namespace distrt {
namespace {

using RankFn = std::function<Status(int rank, Communicator* comm)>;

// Runs fn on `n` threads (one per rank) of a fresh local world.
std::vector<Status> RunRanks(int n, const RankFn& fn,
                             std::chrono::milliseconds timeout = std::chrono::seconds(20),
                             std::shared_ptr<LocalWorld>* world_out = nullptr) {
  std::shared_ptr<LocalWorld> world;
  LocalCommOptions opts;
  opts.timeout = timeout;
  EXPECT_TRUE(LocalWorld::Create(n, opts, &world).ok());
  std::vector<Status> st(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      st[r] = fn(r, world->comm(r));
      if (!st[r].ok()) world->comm(r)->Abort(st[r]);
    });
  }
  for (auto& t : threads) t.join();
  if (world_out) *world_out = world;
  return st;
}

// ---- faults ------------------------------------------------------------------

TEST(LocalCommFaults, FailedRankWakesPeersQuickly) {
  const auto start = std::chrono::steady_clock::now();
  auto st = RunRanks(
      4,
      [&](int r, Communicator* c) {
        if (r == 2) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          return InvalidArgumentError("kernel exploded");  // RunRanks aborts the world
        }
        float v = 1;
        return c->AllReduce({0, 1, 2, 3}, &v, &v, 1, DType::kF32, ReduceOp::kSum);
      },
      std::chrono::seconds(30));
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(secs, 5.0);  // far below the 30 s timeout
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(st[r].code(), StatusCode::kAborted) << st[r].ToString();
    EXPECT_HAS(st[r].message(), "rank 2 failed: kernel exploded");
    EXPECT_HAS(st[r].message(), "all_reduce");
  }
}

TEST(LocalCommFaults, FailureAlsoStopsRecvAndLaterCalls) {
  auto st = RunRanks(3, [&](int r, Communicator* c) {
    if (r == 0) return InternalError("boom");
    if (r == 1) {
      float v;
      return c->Recv(&v, 4, 0, 0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    return c->Barrier({1, 2});
  });
  EXPECT_HAS(st[1].message(), "rank 0 failed: boom");
  EXPECT_EQ(st[2].code(), StatusCode::kAborted);
}

TEST(LocalCommFaults, TimeoutNamesTheMissingRank) {
  std::shared_ptr<LocalWorld> world;
  auto st = RunRanks(
      3,
      [&](int r, Communicator* c) {
        if (r == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(600));
          return OkStatus();  // never joins
        }
        float v = 1;
        return c->AllReduce({0, 1, 2}, &v, &v, 1, DType::kF32, ReduceOp::kSum);
      },
      std::chrono::milliseconds(200), &world);
  bool saw_timeout = false;
  for (int r : {0, 2}) {
    EXPECT_FALSE(st[r].ok());
    if (st[r].code() == StatusCode::kDeadlineExceeded) {
      saw_timeout = true;
      EXPECT_HAS(st[r].message(), "timed out after 0.2s waiting for rank 1 in all_reduce");
    }
  }
  EXPECT_TRUE(saw_timeout);
}

TEST(LocalCommFaults, FinishedPeerIsReportedWithoutWaiting) {
  std::shared_ptr<LocalWorld> world;
  LocalCommOptions opts;
  opts.timeout = std::chrono::seconds(30);
  ASSERT_TRUE(LocalWorld::Create(2, opts, &world).ok());
  Status st0;
  std::thread t0([&] {
    float v = 1;
    st0 = world->comm(0)->AllReduce({0, 1}, &v, &v, 1, DType::kF32, ReduceOp::kSum);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  world->MarkFinished(1);
  t0.join();
  EXPECT_EQ(st0.code(), StatusCode::kFailedPrecondition);
  EXPECT_HAS(st0.message(), "rank 1 finished its program");
}

}  // namespace
}  // namespace distrt
