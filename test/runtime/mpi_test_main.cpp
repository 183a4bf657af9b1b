// Tests of the `mpi` backend, run by ctest as `mpirun -np N distrt_mpi_tests`:
// the collective conformance suite (comm_conformance.inc) on one MPI world,
// the launcher (RunMpiRank, GatherOutputs, BroadcastTensors) and the
// unchecked mode. Every process runs every test; a test body's per-rank
// statuses are exchanged so all processes reach the same verdict. Only rank
// 0 prints gtest's usual output; other ranks print only their failures. The
// exit code is the worst over all ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "comm_harness.h"
#include "distrt/distrt.h"
#include "distrt/mpi_comm.h"

namespace distrt {
namespace testing {
namespace {

int g_rank = 0, g_size = 1;
std::unique_ptr<Communicator> g_comm;

// Every rank's status, on every rank (ranks >= n contribute OK).
std::vector<Status> AllStatuses(const Status& mine, int n) {
  const int code = static_cast<int>(mine.code());
  const std::string msg = mine.ok() ? std::string() : mine.message();
  const int len = static_cast<int>(msg.size());
  std::vector<int> codes(static_cast<size_t>(g_size)), lens(static_cast<size_t>(g_size)),
      displs(static_cast<size_t>(g_size));
  MPI_Allgather(&code, 1, MPI_INT, codes.data(), 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < g_size; ++r) {
    displs[r] = total;
    total += lens[r];
  }
  std::vector<char> all(static_cast<size_t>(total) + 1);
  MPI_Allgatherv(msg.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR,
                 MPI_COMM_WORLD);
  std::vector<Status> out;
  for (int r = 0; r < n && r < g_size; ++r) {
    if (codes[r] == 0) {
      out.push_back(OkStatus());
    } else {
      out.push_back(Status(static_cast<StatusCode>(codes[r]),
                           std::string(all.data() + displs[r], static_cast<size_t>(lens[r]))));
    }
  }
  return out;
}

class MpiHarness : public CommHarness {
 public:
  std::string name() const override { return "mpi"; }
  int max_ranks() const override { return g_size; }
  std::vector<Status> Run(int n, const RankFn& fn) override {
    Status mine;
    if (n > g_size)
      mine = InvalidArgumentError("the test needs ", n, " ranks, mpirun has ", g_size);
    else if (g_rank < n)
      mine = fn(g_rank, g_comm.get());
    return AllStatuses(mine, n);
  }
};

}  // namespace
}  // namespace testing
}  // namespace distrt

#define DISTRT_CONFORMANCE_BACKENDS "mpi"
#include "comm_conformance.inc"

namespace distrt {
namespace testing {
namespace {

// ---- launcher -----------------------------------------------------------------------

// Rank r of n holds columns [off_r, off_r + s_r) of x: [2, S], s_r = r % 2 + 1.
struct Split {
  std::vector<int64_t> sizes, offsets;
  int64_t total = 0;
  explicit Split(int n) {
    for (int r = 0; r < n; ++r) {
      sizes.push_back(r % 2 + 1);
      offsets.push_back(total);
      total += sizes.back();
    }
  }
};

// x (sharded on dim 1) -> g = all_gather(x) (replicated), sq = x * x
// (sharded like x), rowsum = all_reduce(reduce_sum(x, 1)) (replicated).
std::shared_ptr<const Program> ShardedProgram(int r, int n) {
  Split s(n);
  ProgramBuilder b(r, n);
  const int64_t mine = s.sizes[r];
  const proto::Slice slice = MakeSlice({2, s.total}, {0, s.offsets[r]}, {2, mine});
  const int x = b.Input("x", DType::kF32, {2, mine}, slice);
  Group all;
  for (int i = 0; i < n; ++i) all.push_back(i);
  const int g = b.Apply("all_gather", {x}, DType::kF32, {2, s.total},
                        {{"dim", AttrInt(1)}, {"sizes", AttrInts(s.sizes)}}, all);
  const int sq = b.Apply("mul", {x, x}, DType::kF32, {2, mine});
  const int part = b.Apply("reduce_sum", {x}, DType::kF32, {2},
                           {{"axes", AttrInts({1})}, {"keepdims", AttrInt(0)}});
  const int rowsum =
      b.Apply("all_reduce", {part}, DType::kF32, {2}, {{"reduction", AttrString("sum")}}, all);
  b.Output("g", g);
  b.Output("sq", sq, slice);
  b.Output("rowsum", rowsum);
  std::shared_ptr<const Program> p;
  Status st = Program::Create(b.Build(), StrCat("rank-", r, ".pb"), ".", &p);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return p;
}

TEST(MpiLauncher, RunRankGatherAndBroadcast) {
  Split s(g_size);
  std::vector<float> xs;
  for (int64_t i = 0; i < 2 * s.total; ++i) xs.push_back(0.5f * static_cast<float>(i) - 1.0f);
  auto x = Tensor::FromVector<float>({2, s.total}, xs);
  ASSERT_TRUE(x.ok());
  const std::vector<NamedTensor> global_in = {{"x", *x}};
  auto program = ShardedProgram(g_rank, g_size);
  ASSERT_TRUE(program);
  std::vector<Tensor> ins, outs;
  ASSERT_TRUE(SliceInputs(*program, global_in, &ins).ok());
  MpiRunOptions options;
  RunStats stats;
  Status st = RunMpiRank(program, ins, &outs, options, &stats);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(stats.instructions, 4);
  for (int root : {0, g_size - 1}) {
    std::vector<NamedTensor> global;
    st = GatherOutputs(*program, outs, root, &global);
    ASSERT_TRUE(st.ok()) << st.ToString();
    if (g_rank != root) {
      EXPECT_TRUE(global.empty());
      continue;
    }
    ASSERT_EQ(global.size(), 3u);
    EXPECT_EQ(global[0].name, "g");
    EXPECT_EQ(global[0].tensor.ToVector<float>(), xs);
    EXPECT_EQ(global[1].name, "sq");
    std::vector<float> sq;
    for (float v : xs) sq.push_back(v * v);
    EXPECT_EQ(global[1].tensor.ToVector<float>(), sq);
    EXPECT_EQ(global[2].name, "rowsum");
    float r0 = 0, r1 = 0;
    for (int64_t j = 0; j < s.total; ++j) {
      r0 += xs[j];
      r1 += xs[s.total + j];
    }
    std::vector<float> rs = global[2].tensor.ToVector<float>();
    ASSERT_EQ(rs.size(), 2u);
    EXPECT_NEAR(rs[0], r0, 1e-4);
    EXPECT_NEAR(rs[1], r1, 1e-4);
  }
  // Root's tensors reach everybody.
  std::vector<NamedTensor> b;
  if (g_rank == 0) b = {{"a", *Tensor::FromVector<int64_t>({3}, {1, -2, 3})}, {"x", *x}};
  st = BroadcastTensors(0, &b);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].name, "a");
  EXPECT_EQ(b[0].tensor.ToVector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(b[1].tensor.ToVector<float>(), xs);
}

TEST(MpiLauncher, RepeatedRunsOnOneRank) {
  auto program = ShardedProgram(g_rank, g_size);
  std::unique_ptr<MpiRank> rank;
  Status st = MpiRank::Create(program, MpiRunOptions(), &rank);
  ASSERT_TRUE(st.ok()) << st.ToString();
  Split s(g_size);
  for (int it = 0; it < 3; ++it) {
    Tensor x = *Tensor::FromVector<float>(
        {2, s.sizes[g_rank]},
        std::vector<float>(static_cast<size_t>(2 * s.sizes[g_rank]), 1.0f * it));
    std::vector<Tensor> outs;
    st = rank->Run({x}, &outs);
    ASSERT_TRUE(st.ok()) << st.ToString();
    std::vector<float> rs = outs[2].ToVector<float>();
    EXPECT_EQ(rs[0], static_cast<float>(it * s.total));
  }
  EXPECT_EQ(rank->comm()->backend(), "mpi");
}

TEST(MpiLauncher, ProgramOfAnotherWorldSizeIsRejected) {
  auto program = ShardedProgram(g_rank, g_size + 1);
  MpiRunOptions options;
  options.comm.abort_job_on_error = false;  // report instead of ending the job
  std::vector<Tensor> outs;
  Status st = RunMpiRank(program, {}, &outs, options);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_HAS(st.message(), StrCat("is rank ", g_rank, " of ", g_size + 1));
  EXPECT_HAS(st.message(), StrCat("(mpirun -np ", g_size, ")"));
}

// Training state under MPI: rank r holds rows [2r, 2r + 2) of w [2n, 3]
// (zeros, updated w - 0.5 g) and a replicated bias updated with the
// all-reduced column sums of g; GatherPersistent assembles them on a root.
TEST(MpiLauncher, TrainingStateIsUpdatedAndGathered) {
  const int64_t rows = 2 * g_size;
  ProgramBuilder b(g_rank, g_size);
  const proto::Slice mine = MakeSlice({rows, 3}, {2 * g_rank, 0}, {2, 3});
  const int g = b.Input("g", DType::kF32, {2, 3}, mine);
  const int w = b.ZerosWeight("w", DType::kF32, {rows, 3}, {2 * g_rank, 0}, {2, 3});
  const int bias = b.ZerosWeight("bias", DType::kF32, {3}, {0}, {3});
  const int half = b.Constant(*Tensor::FromVector<float>({}, {0.5f}));
  const int step = b.Apply("mul", {g, half}, DType::kF32, {2, 3});
  b.SetUpdate(w, b.Apply("sub", {w, step}, DType::kF32, {2, 3}));
  const int part = b.Apply("reduce_sum", {g}, DType::kF32, {3},
                           {{"axes", AttrInts({0})}, {"keepdims", AttrInt(0)}});
  Group all;
  for (int i = 0; i < g_size; ++i) all.push_back(i);
  const int col =
      b.Apply("all_reduce", {part}, DType::kF32, {3}, {{"reduction", AttrString("sum")}}, all);
  b.SetUpdate(bias, b.Apply("sub", {bias, col}, DType::kF32, {3}));
  b.Output("col", col);
  std::shared_ptr<const Program> program;
  ASSERT_TRUE(Program::Create(b.Build(), StrCat("rank-", g_rank, ".pb"), ".", &program).ok());
  std::unique_ptr<MpiRank> rank;
  Status st = MpiRank::Create(program, MpiRunOptions(), &rank);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<float> wv(static_cast<size_t>(rows * 3), 0.0f), bv(3, 0.0f);
  for (int k = 0; k < 3; ++k) {
    std::vector<float> gv;
    for (int64_t i = 0; i < rows * 3; ++i) gv.push_back(0.25f * static_cast<float>(i % 7) - k);
    const std::vector<NamedTensor> global_in = {
        {"g", *Tensor::FromVector<float>({rows, 3}, gv)}};
    std::vector<Tensor> ins, outs;
    ASSERT_TRUE(SliceInputs(*program, global_in, &ins).ok());
    st = rank->Run(ins, &outs);
    ASSERT_TRUE(st.ok()) << st.ToString();
    for (size_t i = 0; i < wv.size(); ++i) wv[i] = wv[i] - gv[i] * 0.5f;
    std::vector<float> col_sum = outs[0].ToVector<float>();
    for (int j = 0; j < 3; ++j) bv[j] = bv[j] - col_sum[j];
    std::vector<PersistentTensor> state;
    ASSERT_TRUE(rank->executor().ReadPersistent(&state).ok());
    std::vector<NamedTensor> global;
    st = GatherPersistent(state, /*root=*/0, &global);
    ASSERT_TRUE(st.ok()) << st.ToString();
    if (g_rank != 0) {
      EXPECT_TRUE(global.empty());
      continue;
    }
    ASSERT_EQ(global.size(), 2u);
    EXPECT_EQ(global[0].name, "w");
    EXPECT_EQ(global[0].tensor.shape(), (Shape{rows, 3}));
    EXPECT_EQ(global[0].tensor.ToVector<float>(), wv) << "step " << k;
    EXPECT_EQ(global[1].name, "bias");
    EXPECT_EQ(global[1].tensor.ToVector<float>(), bv) << "step " << k;
  }
}

TEST(MpiLauncher, EnvironmentOverridesOptions) {
  setenv("DISTRT_MPI_TIMEOUT", "2.5", 1);
  setenv("DISTRT_MPI_CHECK", "0", 1);
  MpiCommOptions o = ApplyMpiEnvOverrides(MpiCommOptions());
  EXPECT_EQ(o.timeout.count(), 2500);
  EXPECT_FALSE(o.check_collectives);
  unsetenv("DISTRT_MPI_TIMEOUT");
  unsetenv("DISTRT_MPI_CHECK");
  o = ApplyMpiEnvOverrides(MpiCommOptions());
  EXPECT_EQ(o.timeout.count(), 300000);
  EXPECT_TRUE(o.check_collectives);
}

// The same collectives without the descriptor check (check_collectives =
// false): the data path must not depend on it.
TEST(MpiComm, UncheckedModeMovesTheSameData) {
  MpiCommOptions o;
  o.check_collectives = false;
  o.timeout = std::chrono::seconds(60);
  std::unique_ptr<Communicator> c;
  ASSERT_TRUE(CreateMpiCommunicator(o, &c).ok());
  Status mine = AllReduceOn<float>(DType::kF32, g_size, 13, ReduceOp::kSum, g_rank, c.get());
  if (mine.ok()) mine = AllReduceOn<float>(DType::kF32, g_size, 7, ReduceOp::kMax, g_rank, c.get());
  if (mine.ok())
    mine =
        AllGatherOn<int64_t>(DType::kI64, g_size, std::vector<int64_t>(g_size, 2), g_rank, c.get());
  if (mine.ok())
    mine = ReduceScatterOn<double>(DType::kF64, g_size, std::vector<int64_t>(g_size, 1),
                                   ReduceOp::kAvg, g_rank, c.get());
  if (mine.ok()) mine = AllToAllOn<int32_t>(DType::kI32, g_size, 1, g_rank, c.get());
  if (mine.ok() && g_size >= 4) mine = MeshRank(2, g_size / 2, g_rank, c.get());
  for (const Status& st : AllStatuses(mine, g_size)) EXPECT_TRUE(st.ok()) << st.ToString();
}

// Failures on ranks other than 0 still reach stderr (rank 0 prints the rest).
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", g_rank,
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }
  void OnTestEnd(const ::testing::TestInfo& t) override {
    if (t.result()->Failed()) {
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", g_rank, t.test_suite_name(), t.name());
    }
  }
};

}  // namespace
}  // namespace testing
}  // namespace distrt

int main(int argc, char** argv) {
  namespace dt = distrt::testing;
  std::unique_ptr<distrt::MpiSession> session;
  distrt::Status st = distrt::MpiSession::Init(&argc, &argv, &session);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 2;
  }
  dt::g_rank = session->rank();
  dt::g_size = session->world_size();
  ::testing::InitGoogleTest(&argc, argv);
  if (dt::g_rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new dt::RankFailurePrinter());
  }
  distrt::MpiCommOptions options;
  options.timeout = std::chrono::seconds(60);  // far above any test; DISTRT_MPI_TIMEOUT overrides
  st = distrt::CreateMpiCommunicator(distrt::ApplyMpiEnvOverrides(options), &dt::g_comm);
  if (!st.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", dt::g_rank, st.ToString().c_str());
    return 2;
  }
  dt::RegisterHarness(std::unique_ptr<dt::CommHarness>(new dt::MpiHarness()));
  int rc = RUN_ALL_TESTS();
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (dt::g_rank == 0) {
    std::printf("distrt_mpi_tests: %d rank(s), %s\n", dt::g_size,
                worst == 0 ? "every rank passed" : "a rank FAILED (see [rank N] lines)");
  }
  dt::g_comm.reset();
  session.reset();
  return worst;
}
