// The local communicator: every collective on 1..8 ranks, uneven sizes,
// several dtypes, concurrent sub-groups, faults, timeouts and mismatches.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "test_util.h"

namespace distrt {
namespace {

#define EXPECT_HAS(str, sub) EXPECT_NE(std::string(str).find(sub), std::string::npos) \
    << "'" << (str) << "' lacks '" << (sub) << "'"

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

void ExpectAllOk(const std::vector<Status>& st) {
  for (size_t r = 0; r < st.size(); ++r) EXPECT_TRUE(st[r].ok()) << "rank " << r << ": " << st[r].ToString();
}

Group Iota(int n) {
  Group g;
  for (int i = 0; i < n; ++i) g.push_back(i);
  return g;
}

// Value each rank contributes at element i.
double Val(int rank, int64_t i) { return (rank + 1) * 0.5 + static_cast<double>(i % 7) - 3; }

template <typename T>
void CheckAllReduce(int n, int64_t count, ReduceOp op) {
  DType dt = DTypeOf<T>::value;
  std::vector<std::vector<T>> out(static_cast<size_t>(n));
  auto st = RunRanks(n, [&](int r, Communicator* c) {
    std::vector<T> in(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) in[i] = static_cast<T>(std::is_integral<T>::value ? (r + 1) * (i % 5 + 1) - 4 : Val(r, i));
    out[r].resize(static_cast<size_t>(count));
    return c->AllReduce(Iota(n), in.data(), out[r].data(), count, dt, op);
  });
  ExpectAllOk(st);
  for (int64_t i = 0; i < count; ++i) {
    T acc{};
    for (int r = 0; r < n; ++r) {
      T v = static_cast<T>(std::is_integral<T>::value ? (r + 1) * (i % 5 + 1) - 4 : Val(r, i));
      if (r == 0) { acc = v; continue; }
      switch (op) {
        case ReduceOp::kSum: case ReduceOp::kAvg: acc = static_cast<T>(acc + v); break;
        case ReduceOp::kProd: acc = static_cast<T>(acc * v); break;
        case ReduceOp::kMax: acc = std::max(acc, v); break;
        case ReduceOp::kMin: acc = std::min(acc, v); break;
      }
    }
    if (op == ReduceOp::kAvg) acc = static_cast<T>(acc / static_cast<T>(n));
    for (int r = 0; r < n; ++r) {
      if constexpr (std::is_integral<T>::value) {
        ASSERT_EQ(out[r][i], acc) << "rank " << r << " elem " << i << " op " << ReduceOpName(op);
      } else {
        ASSERT_NEAR(out[r][i], acc, 1e-4 * (1 + std::fabs(acc))) << "rank " << r << " elem " << i;
      }
    }
  }
}

TEST(LocalComm, AllReduceEveryOpOneToEightRanks) {
  for (int n = 1; n <= 8; ++n) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kAvg, ReduceOp::kProd}) {
      SCOPED_TRACE(StrCat(n, " ranks ", ReduceOpName(op)));
      CheckAllReduce<float>(n, 13, op);  // 13 elements: uneven chunks
      CheckAllReduce<int64_t>(n, 5, op);  // fewer elements than ranks when n > 5
    }
  }
  CheckAllReduce<double>(4, 9, ReduceOp::kSum);
  CheckAllReduce<int32_t>(3, 4, ReduceOp::kAvg);  // integer average truncates
}

TEST(LocalComm, AllReduceInPlaceAndHalf) {
  std::vector<std::vector<uint16_t>> buf(3);
  auto st = RunRanks(3, [&](int r, Communicator* c) {
    buf[r] = {FloatToHalf(1.0f + r), FloatToHalf(-0.5f * r)};
    return c->AllReduce({0, 1, 2}, buf[r].data(), buf[r].data(), 2, DType::kF16, ReduceOp::kSum);
  });
  ExpectAllOk(st);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(HalfToFloat(buf[r][0]), 6.0f);
    EXPECT_EQ(HalfToFloat(buf[r][1]), -1.5f);
  }
}

TEST(LocalComm, AllGatherUnevenSizes) {
  for (int n = 1; n <= 8; ++n) {
    std::vector<int64_t> counts;
    for (int r = 0; r < n; ++r) counts.push_back((r * 3) % 4);  // 0, 3, 2, 1, 0, ...
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    std::vector<std::vector<int32_t>> out(static_cast<size_t>(n));
    auto st = RunRanks(n, [&](int r, Communicator* c) {
      std::vector<int32_t> in;
      for (int64_t i = 0; i < counts[r]; ++i) in.push_back(100 * r + static_cast<int32_t>(i));
      out[r].assign(static_cast<size_t>(total), -1);
      return c->AllGather(Iota(n), in.data(), out[r].data(), counts, DType::kI32);
    });
    ExpectAllOk(st);
    std::vector<int32_t> want;
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < counts[r]; ++i) want.push_back(100 * r + static_cast<int32_t>(i));
    for (int r = 0; r < n; ++r) EXPECT_EQ(out[r], want) << n << " ranks, rank " << r;
  }
}

TEST(LocalComm, ReduceScatterUnevenSizes) {
  for (int n = 1; n <= 8; ++n) {
    std::vector<int64_t> counts;
    int64_t total = 0;
    for (int r = 0; r < n; ++r) {
      counts.push_back(r % 3 + (r == 1 ? 0 : 1));
      total += counts.back();
    }
    std::vector<std::vector<float>> out(static_cast<size_t>(n));
    auto st = RunRanks(n, [&](int r, Communicator* c) {
      std::vector<float> in;
      for (int64_t i = 0; i < total; ++i) in.push_back(static_cast<float>(Val(r, i)));
      out[r].assign(static_cast<size_t>(counts[r]), 0);
      return c->ReduceScatter(Iota(n), in.data(), out[r].data(), counts, DType::kF32, ReduceOp::kMax);
    });
    ExpectAllOk(st);
    int64_t off = 0;
    for (int r = 0; r < n; ++r) {
      for (int64_t i = 0; i < counts[r]; ++i) {
        double m = -1e30;
        for (int q = 0; q < n; ++q) m = std::max(m, Val(q, off + i));
        EXPECT_FLOAT_EQ(out[r][i], static_cast<float>(m));
      }
      off += counts[r];
    }
  }
}

TEST(LocalComm, AllToAllUnevenSizes) {
  for (int n = 1; n <= 8; ++n) {
    // Rank s sends (s + d) % 3 elements to rank d: value 1000*s + 10*d + k.
    auto cnt = [](int s, int d) { return static_cast<int64_t>((s + d) % 3); };
    std::vector<std::vector<int64_t>> out(static_cast<size_t>(n));
    auto st = RunRanks(n, [&](int r, Communicator* c) {
      std::vector<int64_t> send, sc, rc;
      for (int d = 0; d < n; ++d) {
        sc.push_back(cnt(r, d));
        rc.push_back(cnt(d, r));
        for (int64_t k = 0; k < cnt(r, d); ++k) send.push_back(1000 * r + 10 * d + k);
      }
      int64_t total = 0;
      for (int64_t x : rc) total += x;
      out[r].assign(static_cast<size_t>(total), -1);
      return c->AllToAll(Iota(n), send.data(), sc, out[r].data(), rc, DType::kI64);
    });
    ExpectAllOk(st);
    for (int r = 0; r < n; ++r) {
      std::vector<int64_t> want;
      for (int s = 0; s < n; ++s)
        for (int64_t k = 0; k < cnt(s, r); ++k) want.push_back(1000 * s + 10 * r + k);
      EXPECT_EQ(out[r], want) << n << " ranks, rank " << r;
    }
  }
}

TEST(LocalComm, CollectivePermuteRingAndPartial) {
  for (int n = 2; n <= 8; ++n) {
    std::vector<std::vector<double>> out(static_cast<size_t>(n));
    auto st = RunRanks(n, [&](int r, Communicator* c) {
      std::vector<double> in = {r * 1.0, r * 2.0};
      out[r] = {-1, -1};
      return c->CollectivePermute(Iota(n), in.data(), 2, (r + 1) % n, out[r].data(), 2,
                                  (r + n - 1) % n, DType::kF64);
    });
    ExpectAllOk(st);
    for (int r = 0; r < n; ++r) {
      int src = (r + n - 1) % n;
      EXPECT_EQ(out[r], (std::vector<double>{src * 1.0, src * 2.0}));
    }
  }
  // Only 0 -> 2; ranks 1 and 3 take part but move nothing.
  std::vector<std::vector<float>> out(4, std::vector<float>{-1});
  auto st = RunRanks(4, [&](int r, Communicator* c) {
    float v = 7.0f + r;
    return c->CollectivePermute(Iota(4), &v, r == 0 ? 1 : 0, r == 0 ? 2 : -1, out[r].data(),
                                r == 2 ? 1 : 0, r == 2 ? 0 : -1, DType::kF32);
  });
  ExpectAllOk(st);
  EXPECT_EQ(out[2][0], 7.0f);
  EXPECT_EQ(out[1][0], -1.0f);  // untouched
}

TEST(LocalComm, SendRecvOrderTagsAndNoDeadlock) {
  std::vector<std::vector<int32_t>> got(2);
  auto st = RunRanks(2, [&](int r, Communicator* c) {
    const int peer = 1 - r;
    // Both send first (eager sends), two messages on tag 0 and one on tag 5.
    int32_t a = 10 * r + 1, b = 10 * r + 2, t = 10 * r + 5;
    DISTRT_RETURN_IF_ERROR(c->Send(&a, 4, peer, 0));
    DISTRT_RETURN_IF_ERROR(c->Send(&t, 4, peer, 5));
    DISTRT_RETURN_IF_ERROR(c->Send(&b, 4, peer, 0));
    int32_t x = 0, y = 0, z = 0;
    DISTRT_RETURN_IF_ERROR(c->Recv(&z, 4, peer, 5));  // tag 5 first, out of order
    DISTRT_RETURN_IF_ERROR(c->Recv(&x, 4, peer, 0));
    DISTRT_RETURN_IF_ERROR(c->Recv(&y, 4, peer, 0));
    got[r] = {x, y, z};
    return OkStatus();
  });
  ExpectAllOk(st);
  EXPECT_EQ(got[0], (std::vector<int32_t>{11, 12, 15}));
  EXPECT_EQ(got[1], (std::vector<int32_t>{1, 2, 5}));
}

TEST(LocalComm, RecvSizeMismatchIsReported) {
  auto st = RunRanks(2, [&](int r, Communicator* c) {
    if (r == 0) {
      double v = 1;
      return c->Send(&v, 8, 1, 3);
    }
    float v;
    return c->Recv(&v, 4, 0, 3);
  });
  EXPECT_TRUE(st[0].ok());
  EXPECT_EQ(st[1].code(), StatusCode::kFailedPrecondition);
  EXPECT_HAS(st[1].message(), "the message has 8 bytes");
}

TEST(LocalComm, BarrierAndGroupChecks) {
  auto st = RunRanks(3, [&](int r, Communicator* c) { return c->Barrier({0, 1, 2}); });
  ExpectAllOk(st);
  auto bad = RunRanks(2, [&](int r, Communicator* c) {
    float v = 0;
    if (r == 0) return c->AllReduce({1}, &v, &v, 1, DType::kF32, ReduceOp::kSum);
    return OkStatus();
  });
  EXPECT_HAS(bad[0].message(), "does not contain it");
  auto dup = RunRanks(1, [&](int r, Communicator* c) { return c->Barrier({0, 0}); });
  EXPECT_HAS(dup[0].message(), "twice");
}

// dp x tp mesh: rank = dp * tp_size + tp. Each rank all-reduces over its tp
// group and all-gathers over its dp group, repeatedly; groups of different
// kinds run concurrently.
void MeshTest(int dp, int tp) {
  const int n = dp * tp;
  const int rounds = 20;
  std::vector<std::vector<float>> gathered(static_cast<size_t>(n));
  auto st = RunRanks(n, [&](int r, Communicator* c) {
    const int d = r / tp, t = r % tp;
    Group tp_group, dp_group;
    for (int i = 0; i < tp; ++i) tp_group.push_back(d * tp + i);
    for (int i = 0; i < dp; ++i) dp_group.push_back(i * tp + t);
    for (int round = 0; round < rounds; ++round) {
      float x[2] = {static_cast<float>(r + round), 1.0f};
      float s[2];
      DISTRT_RETURN_IF_ERROR(c->AllReduce(tp_group, x, s, 2, DType::kF32, ReduceOp::kSum));
      // sum over tp of (d*tp + i + round) = tp*(d*tp + round) + tp*(tp-1)/2
      const float want = static_cast<float>(tp * (d * tp + round) + tp * (tp - 1) / 2);
      if (s[0] != want || s[1] != tp) return InternalError("rank ", r, " round ", round, " got ", s[0]);
      std::vector<float> g(static_cast<size_t>(dp));
      std::vector<int64_t> counts(static_cast<size_t>(dp), 1);
      DISTRT_RETURN_IF_ERROR(c->AllGather(dp_group, &s[0], g.data(), counts, DType::kF32));
      gathered[r] = g;
    }
    return OkStatus();
  });
  ExpectAllOk(st);
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(gathered[r].size(), static_cast<size_t>(dp));
    for (int d = 0; d < dp; ++d) {
      EXPECT_EQ(gathered[r][d], static_cast<float>(tp * (d * tp + rounds - 1) + tp * (tp - 1) / 2));
    }
  }
}

TEST(LocalComm, SubGroupsOf2x2Mesh) { MeshTest(2, 2); }
TEST(LocalComm, SubGroupsOf2x4Mesh) { MeshTest(2, 4); }
TEST(LocalComm, SubGroupsOf4x2Mesh) { MeshTest(4, 2); }

// ---- faults ------------------------------------------------------------------

TEST(LocalCommFaults, FailedRankWakesPeersQuickly) {
  const auto start = std::chrono::steady_clock::now();
  auto st = RunRanks(4, [&](int r, Communicator* c) {
    if (r == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      return InvalidArgumentError("kernel exploded");  // RunRanks aborts the world
    }
    float v = 1;
    return c->AllReduce({0, 1, 2, 3}, &v, &v, 1, DType::kF32, ReduceOp::kSum);
  }, std::chrono::seconds(30));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
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
  auto st = RunRanks(3, [&](int r, Communicator* c) {
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      return OkStatus();  // never joins
    }
    float v = 1;
    return c->AllReduce({0, 1, 2}, &v, &v, 1, DType::kF32, ReduceOp::kSum);
  }, std::chrono::milliseconds(200), &world);
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

TEST(LocalCommFaults, MismatchedKindsAreDetected) {
  auto st = RunRanks(2, [&](int r, Communicator* c) {
    float v[4] = {1, 2, 3, 4}, out[8];
    if (r == 0) return c->AllReduce({0, 1}, v, out, 4, DType::kF32, ReduceOp::kSum);
    return c->AllGather({0, 1}, v, out, {4, 4}, DType::kF32);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(st[r].ok());
  }
  // Both members see the same descriptors; at least rank 0 reports them.
  const std::string& m = st[0].code() == StatusCode::kFailedPrecondition ? st[0].message() : st[1].message();
  EXPECT_HAS(m, "collective mismatch on group [0, 1]");
  EXPECT_HAS(m, "rank 0 calls all_reduce(sum, f32, 4 elements)");
  EXPECT_HAS(m, "rank 1 calls all_gather(f32, counts [4, 4])");
}

TEST(LocalCommFaults, MismatchedSizesAndDtypesAreDetected) {
  auto st = RunRanks(3, [&](int r, Communicator* c) {
    double v[8] = {0};
    return c->AllReduce({0, 1, 2}, v, v, r == 2 ? 8 : 4, DType::kF64, ReduceOp::kSum);
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(st[r].code(), StatusCode::kFailedPrecondition) << st[r].ToString();
    EXPECT_HAS(st[r].message(), "rank 2 calls all_reduce(sum, f64, 8 elements)");
  }
  auto st2 = RunRanks(2, [&](int r, Communicator* c) {
    int64_t v[2] = {0, 0};
    return c->AllReduce({0, 1}, v, v, 2, r ? DType::kI32 : DType::kI64, ReduceOp::kMax);
  });
  EXPECT_HAS(st2[0].message(), "mismatch");
  auto st3 = RunRanks(2, [&](int r, Communicator* c) {
    int32_t v[8] = {0};
    std::vector<int64_t> sc = {1, 1}, rc = {r == 1 ? 2 : 1, 1};
    return c->AllToAll({0, 1}, v, sc, v + 4, rc, DType::kI32);
  });
  EXPECT_HAS(st3[1].message(), "all_to_all mismatch");
  EXPECT_HAS(st3[1].message(), "rank 0 sends 1 elements to rank 1, which expects 2");
}

}  // namespace
}  // namespace distrt
