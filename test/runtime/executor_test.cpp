// Executor end to end: a 2-rank Megatron MLP against the single-rank MLP,
// liveness / peak memory, threading, input checks.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace distrt {
namespace {

using namespace distrt::testing;  // NOLINT

// The MLP y = gelu(x W1 + b1) W2 + b2 with weights stored one after another
// (plus a 16-byte header) in one file, as an exporter would reference them.
struct Mlp {
  int64_t batch = 4, hidden = 6, ffn = 10;
  std::vector<float> w1, b1, w2, b2;
  uint64_t off_w1 = 0, off_b1 = 0, off_w2 = 0, off_b2 = 0;

  void Write(const std::string& path) {
    w1.clear();
    b1.clear();
    w2.clear();
    b2.clear();
    for (int64_t i = 0; i < hidden * ffn; ++i) w1.push_back(std::sin(0.37f * i) * 0.5f);
    for (int64_t i = 0; i < ffn; ++i) b1.push_back(0.1f * i - 0.4f);
    for (int64_t i = 0; i < ffn * hidden; ++i) w2.push_back(std::cos(0.23f * i) * 0.4f);
    for (int64_t i = 0; i < hidden; ++i) b2.push_back(0.05f * i);
    std::vector<float> all(4, 0.0f);  // header
    off_w1 = all.size() * 4;
    all.insert(all.end(), w1.begin(), w1.end());
    off_b1 = all.size() * 4;
    all.insert(all.end(), b1.begin(), b1.end());
    off_w2 = all.size() * 4;
    all.insert(all.end(), w2.begin(), w2.end());
    off_b2 = all.size() * 4;
    all.insert(all.end(), b2.begin(), b2.end());
    WriteFile(path, all.data(), all.size() * 4);
  }

  // Rank r of `n` holds columns [c0, c1) of W1 / b1 and rows [c0, c1) of W2.
  proto::RankProgram Program(int rank, const std::vector<int64_t>& split, const std::string& file) {
    const int n = static_cast<int>(split.size());
    int64_t c0 = 0;
    for (int i = 0; i < rank; ++i) c0 += split[i];
    const int64_t f = split[rank];
    ProgramBuilder b(rank, n);
    int x = b.Input("x", DType::kF32, {batch, hidden});
    int w1v = b.Weight("fc1.weight", file, off_w1, DType::kF32, DType::kF32, {hidden, ffn}, {0, c0},
                       {hidden, f});
    int b1v = b.Weight("fc1.bias", file, off_b1, DType::kF32, DType::kF32, {ffn}, {c0}, {f});
    int w2v = b.Weight("fc2.weight", file, off_w2, DType::kF32, DType::kF32, {ffn, hidden}, {c0, 0},
                       {f, hidden});
    int b2v = b.Weight("fc2.bias", file, off_b2, DType::kF32, DType::kF32, {hidden}, {0}, {hidden});
    int h = b.Apply("matmul", {x, w1v}, DType::kF32, {batch, f});
    int hb = b.Apply("add", {h, b1v}, DType::kF32, {batch, f});
    int g = b.Apply("gelu", {hb}, DType::kF32, {batch, f}, {{"approximate", AttrString("none")}});
    int p = b.Apply("matmul", {g, w2v}, DType::kF32, {batch, hidden});
    int s = p;
    if (n > 1) {
      std::vector<int> group;
      for (int i = 0; i < n; ++i) group.push_back(i);
      s = b.Apply("all_reduce", {p}, DType::kF32, {batch, hidden},
                  {{"reduction", AttrString("sum")}}, group);
    }
    int y = b.Apply("add", {s, b2v}, DType::kF32, {batch, hidden});
    b.Output("y", y);
    return b.Build();
  }

  std::vector<float> Reference(const std::vector<float>& x) const {
    std::vector<float> y;
    for (int64_t i = 0; i < batch; ++i) {
      std::vector<double> g(static_cast<size_t>(ffn));
      for (int64_t j = 0; j < ffn; ++j) {
        double a = b1[j];
        for (int64_t k = 0; k < hidden; ++k) a += x[i * hidden + k] * w1[k * ffn + j];
        g[j] = 0.5 * a * (1 + std::erf(a / std::sqrt(2.0)));
      }
      for (int64_t j = 0; j < hidden; ++j) {
        double a = b2[j];
        for (int64_t k = 0; k < ffn; ++k) a += g[k] * w2[k * hidden + j];
        y.push_back(static_cast<float>(a));
      }
    }
    return y;
  }
};

std::vector<std::shared_ptr<const Program>> SaveAndLoad(const TempDir& dir,
                                                        const std::vector<proto::RankProgram>& ps) {
  std::vector<std::shared_ptr<const Program>> out;
  for (size_t r = 0; r < ps.size(); ++r) {
    const std::string path = dir.File(StrCat("rank-", r, ".pb"));
    EXPECT_TRUE(SaveProgram(ps[r], path).ok());
    std::shared_ptr<const Program> p;
    Status st = LoadProgram(path, &p);
    EXPECT_TRUE(st.ok()) << st.ToString();
    out.push_back(p);
  }
  return out;
}

void CheckMegatron(const std::vector<int64_t>& split) {
  TempDir dir;
  Mlp mlp;
  mlp.Write(dir.File("model.bin"));
  Tensor x = Iota({mlp.batch, mlp.hidden}, 0.13f, -1.5f);

  // Single rank: the whole MLP.
  auto single = SaveAndLoad(dir, {mlp.Program(0, {mlp.ffn}, "model.bin")});
  std::vector<std::vector<Tensor>> ref_out;
  Status st = RunLocal(single, {{x}}, &ref_out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectF32(ref_out[0][0], {mlp.batch, mlp.hidden}, mlp.Reference(Vec<float>(x)), 1e-5f);

  // Tensor parallel: column-parallel fc1, row-parallel fc2, all_reduce.
  TempDir dir2;
  std::vector<proto::RankProgram> progs;
  for (size_t r = 0; r < split.size(); ++r) {
    progs.push_back(mlp.Program(static_cast<int>(r), split, dir.File("model.bin")));
  }
  auto tp = SaveAndLoad(dir2, progs);
  std::vector<std::vector<Tensor>> in(split.size(), std::vector<Tensor>{x}), out;
  std::vector<RunStats> stats;
  st = RunLocal(tp, in, &out, LocalRunOptions(), &stats);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (size_t r = 0; r < split.size(); ++r) {
    SCOPED_TRACE(StrCat("rank ", r));
    ExpectF32(out[r][0], {mlp.batch, mlp.hidden}, Vec<float>(ref_out[0][0]), 1e-5f);
    // Each rank holds only its slices (+ the replicated fc2 bias).
    const int64_t want = 4 * (mlp.hidden * split[r] * 2 + split[r] + mlp.hidden);
    EXPECT_EQ(stats[r].weight_bytes, want);
  }
}

TEST(Executor, MegatronMlpTwoRanksMatchesSingleRank) { CheckMegatron({5, 5}); }
TEST(Executor, MegatronMlpUnevenThreeRanks) { CheckMegatron({4, 3, 3}); }

// A chain x -> exp -> exp -> ... (n times) -> y.
std::shared_ptr<const Program> Chain(int n, bool keep_all, Shape shape) {
  ProgramBuilder b;
  int v = b.Input("x", DType::kF32, shape);
  for (int i = 0; i < n; ++i) {
    v = b.Apply(i % 2 ? "neg" : "exp", {v}, DType::kF32, shape);
    if (keep_all && i + 1 < n) b.Output(StrCat("t", i), v);
  }
  b.Output("y", v);
  std::shared_ptr<const Program> p;
  EXPECT_TRUE(Program::Create(b.Build(), "chain", ".", &p).ok());
  return p;
}

TEST(Executor, LivenessKeepsPeakAtTwoBuffers) {
  const Shape shape = {64, 256};
  const int64_t bytes = 64 * 256 * 4;
  const int n = 24;
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(Chain(n, false, shape), nullptr, {}, &e).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(e->Run({Iota(shape, 1e-4f)}, &out).ok());
  EXPECT_LE(e->stats().peak_live_bytes, 2 * bytes);  // (1 with in-place reuse)
  EXPECT_GE(e->stats().peak_live_bytes, bytes);
  EXPECT_EQ(e->stats().instructions, n);

  // The same chain with every intermediate kept as an output holds them all.
  std::unique_ptr<Executor> keep;
  ASSERT_TRUE(Executor::Create(Chain(n, true, shape), nullptr, {}, &keep).ok());
  ASSERT_TRUE(keep->Run({Iota(shape, 1e-4f)}, &out).ok());
  EXPECT_EQ(keep->stats().peak_live_bytes, n * bytes);
  EXPECT_EQ(out.size(), static_cast<size_t>(n));

  // The plan made at Create, from liveness alone (no in-place reuse): an
  // op's input and result at once for the chain, every result for the
  // chain that keeps them all.
  EXPECT_EQ(e->stats().planned_peak_bytes, 2 * bytes);
  EXPECT_EQ(keep->stats().planned_peak_bytes, n * bytes);
}

TEST(Executor, ElementwiseChainRunsInPlaceWithoutTouchingInputs) {
  // exp/neg take over their dying operand's buffer: after the first
  // allocation the chain needs no more memory, and the caller's input is
  // never overwritten.
  const Shape shape = {32, 32};
  const int64_t bytes = 32 * 32 * 4;
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(Chain(9, false, shape), nullptr, {}, &e).ok());
  Tensor x = Iota(shape, 1e-3f);
  std::vector<Tensor> out;
  ASSERT_TRUE(e->Run({x}, &out).ok());
  EXPECT_EQ(e->stats().peak_live_bytes, bytes);
  EXPECT_EQ(x.data<float>()[7], 7e-3f);
  // Reference: alternate exp / neg.
  float v = 7e-3f;
  for (int i = 0; i < 9; ++i) v = i % 2 ? -v : std::exp(v);
  EXPECT_FLOAT_EQ(out[0].data<float>()[7], v);
  // A value still needed later is not overwritten: y = exp(x1) + x1 with
  // x1 = neg(x).
  ProgramBuilder b;
  int in = b.Input("x", DType::kF32, {4});
  int x1 = b.Apply("neg", {in}, DType::kF32, {4});
  int ex = b.Apply("exp", {x1}, DType::kF32, {4});
  int y = b.Apply("add", {ex, x1}, DType::kF32, {4});
  b.Output("y", y);
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(b.Build(), "", ".", &p).ok());
  ASSERT_TRUE(Executor::Create(p, nullptr, {}, &e).ok());
  ASSERT_TRUE(e->Run({F32({4}, {0, 1, 2, 3})}, &out).ok());
  ExpectF32(out[0], {4}, {1.0f, std::exp(-1.0f) - 1, std::exp(-2.0f) - 2, std::exp(-3.0f) - 3});
}

TEST(Executor, DeadResultsAreFreedAndReshapeAliases) {
  const Shape shape = {128, 128};
  const int64_t bytes = 128 * 128 * 4;
  ProgramBuilder b;
  int x = b.Input("x", DType::kF32, shape);
  b.Apply("exp", {x}, DType::kF32, shape);                    // never used
  int r = b.Apply("reshape", {x}, DType::kF32, {128 * 128});  // shares x's buffer
  int y = b.Apply("neg", {r}, DType::kF32, {128 * 128});
  b.Output("y", y);
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(b.Build(), "", ".", &p).ok());
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, {}, &e).ok());
  std::vector<Tensor> out;
  ASSERT_TRUE(e->Run({Iota(shape)}, &out).ok());
  EXPECT_EQ(e->stats().peak_live_bytes, bytes);
  EXPECT_EQ(out[0].data<float>()[5], -5.0f);
}

TEST(Executor, ThreadedKernelsMatchSingleThreaded) {
  const int64_t m = 96, k = 200, n = 130;
  ProgramBuilder b;
  int a = b.Input("a", DType::kF32, {2, m, k});
  int w = b.Input("w", DType::kF32, {k, n});
  int bias = b.Input("bias", DType::kF32, {n});
  int mm = b.Apply("matmul", {a, w}, DType::kF32, {2, m, n});
  int add = b.Apply("add", {mm, bias}, DType::kF32, {2, m, n});
  int sm = b.Apply("softmax", {add}, DType::kF32, {2, m, n}, {{"axis", AttrInt(2)}});
  int g = b.Apply("gelu", {sm}, DType::kF32, {2, m, n});
  int red = b.Apply("reduce_sum", {g}, DType::kF32, {2, n},
                    {{"axes", AttrInts({1})}, {"keepdims", AttrInt(0)}});
  int tr = b.Apply("transpose", {add}, DType::kF32, {n, 2, m}, {{"perm", AttrInts({2, 0, 1})}});
  b.Output("sm", sm);
  b.Output("red", red);
  b.Output("tr", tr);
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(b.Build(), "", ".", &p).ok());
  std::vector<Tensor> ins = {Iota({2, m, k}, 1e-4f, -1), Iota({k, n}, -2e-4f, 0.5f),
                                 Iota({n}, 0.01f)};
  std::vector<Tensor> one, four;
  std::unique_ptr<Executor> e1, e4;
  ASSERT_TRUE(Executor::Create(p, nullptr, {}, &e1).ok());
  ExecutorOptions o4;
  o4.threads = 4;
  ASSERT_TRUE(Executor::Create(p, nullptr, o4, &e4).ok());
  ASSERT_TRUE(e1->Run(ins, &one).ok());
  ASSERT_TRUE(e4->Run(ins, &four).ok());
  for (size_t i = 0; i < one.size(); ++i) {
    ExpectF32(four[i], one[i].shape(), Vec<float>(one[i]), 1e-5f);
  }
  // Softmax rows sum to one.
  const float* s = one[0].data<float>();
  double row = 0;
  for (int64_t j = 0; j < n; ++j) row += s[j];
  EXPECT_NEAR(row, 1.0, 1e-5);
}

TEST(Executor, InputChecks) {
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(Chain(2, false, {3}), nullptr, {}, &e).ok());
  std::vector<Tensor> out;
  Status st = e->Run({}, &out);
  EXPECT_HAS(st.message(), "expected 1 inputs, got 0");
  st = e->Run({Iota({4})}, &out);
  EXPECT_HAS(st.message(), "input 0 'x' must be f32[3], got f32[4]");
  ExecutorOptions bad;
  bad.threads = 0;
  EXPECT_FALSE(Executor::Create(Chain(2, false, {3}), nullptr, bad, &e).ok());
}

TEST(Executor, CommunicatorRequiredAndMatched) {
  Mlp mlp;
  TempDir dir;
  mlp.Write(dir.File("model.bin"));
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(mlp.Program(1, {5, 5}, "model.bin"), "r1", dir.path(), &p).ok());
  EXPECT_TRUE(p->communicates());
  std::unique_ptr<Executor> e;
  Status st = Executor::Create(p, nullptr, {}, &e);
  EXPECT_HAS(st.message(), "no communicator");
  std::shared_ptr<LocalWorld> world;
  ASSERT_TRUE(LocalWorld::Create(2, {}, &world).ok());
  st = Executor::Create(p, world->comm(0), {}, &e);
  EXPECT_HAS(st.message(), "the program is rank 1 of 2 but the communicator is rank 0 of 2");
}

}  // namespace
}  // namespace distrt

namespace distrt {
namespace {

using namespace distrt::testing;  // NOLINT

// With ExecutorOptions::profile each instruction's time goes to its op kind,
// in order of first appearance; ClearProfile starts afresh; without the
// option nothing is collected.
TEST(Executor, ProfileCountsCallsPerOpKind) {
  ProgramBuilder b;
  int v = b.Input("x", DType::kF32, {8});
  v = b.Apply("neg", {v}, DType::kF32, {8});
  v = b.Apply("exp", {v}, DType::kF32, {8});
  v = b.Apply("neg", {v}, DType::kF32, {8});
  b.Output("y", v);
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(b.Build(), "profile", ".", &p).ok());
  ExecutorOptions options;
  options.profile = true;
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, options, &e).ok());
  std::vector<Tensor> out;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(e->Run({Iota({8})}, &out).ok());
  const RunStats& s = e->stats();
  EXPECT_EQ(s.profiled_runs, 3);
  ASSERT_EQ(s.op_times.size(), 3u);  // neg, exp, apply updates
  EXPECT_EQ(s.op_times[0].op, "neg");
  EXPECT_EQ(s.op_times[0].calls, 6);
  EXPECT_EQ(s.op_times[1].op, "exp");
  EXPECT_EQ(s.op_times[1].calls, 3);
  EXPECT_EQ(s.op_times[2].op, "apply updates");
  EXPECT_EQ(s.op_times[2].calls, 0);  // no updates in this program
  EXPECT_GT(s.op_times[0].seconds, 0.0);
  e->ClearProfile();
  EXPECT_EQ(e->stats().profiled_runs, 0);
  EXPECT_EQ(e->stats().op_times[0].calls, 0);
  ASSERT_TRUE(e->Run({Iota({8})}, &out).ok());
  EXPECT_EQ(e->stats().op_times[1].calls, 1);

  std::unique_ptr<Executor> plain;
  ASSERT_TRUE(Executor::Create(p, nullptr, ExecutorOptions(), &plain).ok());
  ASSERT_TRUE(plain->Run({Iota({8})}, &out).ok());
  EXPECT_TRUE(plain->stats().op_times.empty());
  EXPECT_EQ(plain->stats().profiled_runs, 0);
}

// A microbatch_loop defining `outputs` (the index, then the running sums),
// with a schedule when one is given (tag stride 1); returns its index.
static int StartLoop(ProgramBuilder& b, const std::vector<int>& outputs, int microbatches,
                     const std::vector<int64_t>& schedule) {
  const int begin = b.proto().instructions_size();
  proto::Instruction& loop =
      b.Op("microbatch_loop", {}, outputs, {{"microbatches", AttrInt(microbatches)}});
  if (!schedule.empty()) {
    (*loop.mutable_attrs())["schedule"] = AttrInts(schedule);
    (*loop.mutable_attrs())["tag_stride"] = AttrInt(1);
  }
  return begin;
}

// A scheduled loop's marker of `pass` (chunk 0); nothing without a schedule.
static void Action(ProgramBuilder& b, const std::vector<int64_t>& schedule, int64_t pass) {
  if (!schedule.empty())
    b.Op("microbatch_action", {}, {}, {{"pass", AttrInt(pass)}, {"chunk", AttrInt(0)}});
}

// A microbatch loop over y = x_j * (-w), where -w is computed once before
// the loop and must live through every microbatch j; after the loop,
// z = 2 * sum. Without a schedule (gradient accumulation) the loop sums y.
// With one (a pipeline stage's loop; (microbatch, pass, chunk) triples) y is
// the forward action, the backward action computes g = y * x from the
// forward's values, and each microbatch's g is added after its last action.
static ProgramBuilder LoopProgram(int microbatches, const std::vector<int64_t>& schedule = {}) {
  ProgramBuilder b;
  int w = b.Input("w", DType::kF32, {3});
  std::vector<int> xs;
  for (int j = 0; j < microbatches; ++j)
    xs.push_back(b.Input("x.mb" + std::to_string(j), DType::kF32, {3}));
  int nw = b.Apply("neg", {w}, DType::kF32, {3});
  int index = b.Value(DType::kI64, {});
  int acc = b.Value(DType::kF32, {3});
  const int begin = StartLoop(b, {index, acc}, microbatches, schedule);
  auto action = [&](int64_t pass) { Action(b, schedule, pass); };
  action(0);
  std::vector<int> select_in{index};
  select_in.insert(select_in.end(), xs.begin(), xs.end());
  int x = b.Apply("microbatch_select", select_in, DType::kF32, {3});
  int y = b.Apply("mul", {x, nw}, DType::kF32, {3});
  action(1);
  int g = schedule.empty() ? y : b.Apply("mul", {y, x}, DType::kF32, {3});
  action(3);
  int next = b.Apply("add", {acc, g}, DType::kF32, {3});
  int sum = b.Value(DType::kF32, {3});
  b.Op("microbatch_yield", {next}, {sum}, {{"loop", AttrInt(begin)}});
  int two = b.Constant(F32({}, {2.0f}));
  b.Output("sum", sum);
  b.Output("z", b.Apply("mul", {sum, two}, DType::kF32, {3}));
  return b;
}

TEST(Executor, MicrobatchLoopSumsTheBodyOverEveryMicrobatch) {
  std::shared_ptr<const Program> p;
  ASSERT_TRUE(Program::Create(LoopProgram(3).Build(), "", ".", &p).ok());
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, {}, &e).ok());
  std::vector<Tensor> out;
  for (int run = 0; run < 2; ++run) {  // the second run starts from zeros again
    Status st = e->Run(
        {F32({3}, {1, 2, 3}), F32({3}, {1, 0, 0}), F32({3}, {0, 1, 0}), F32({3}, {0, 0, 4})}, &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ExpectF32(out[0], {3}, {-1, -2, -12});
    ExpectF32(out[1], {3}, {-2, -4, -24});
  }
}

TEST(Executor, MicrobatchLoopsAreValidated) {
  auto rejected = [](ProgramBuilder b, const std::string& why) {
    std::shared_ptr<const Program> p;
    Status st = Program::Create(b.Build(), "", ".", &p);
    EXPECT_FALSE(st.ok()) << why;
    EXPECT_HAS(st.message(), why);
  };
  // Never closed: drop the yield and what follows it.
  ProgramBuilder open = LoopProgram(2);
  auto* insts = open.proto().mutable_instructions();
  insts->DeleteSubrange(insts->size() - 2, 2);
  open.proto().mutable_outputs()->Clear();
  rejected(open, "is never closed");
  // A yield naming another instruction.
  ProgramBuilder wrong = LoopProgram(2);
  for (auto& inst : *wrong.proto().mutable_instructions())
    if (inst.op() == "microbatch_yield") (*inst.mutable_attrs())["loop"] = AttrInt(0);
  rejected(wrong, "closes loop 0, but the open loop is instruction 1");
  // A select outside any loop.
  ProgramBuilder outside;
  int i = outside.Input("i", DType::kI64, {});
  int x = outside.Input("x", DType::kF32, {2});
  outside.Output("y", outside.Apply("microbatch_select", {i, x}, DType::kF32, {2}));
  rejected(outside, "does not read the index of an open microbatch loop");
}

static ProgramBuilder ScheduledLoopProgram(const std::vector<int64_t>& schedule) {
  return LoopProgram(3, schedule);
}

TEST(Executor, ScheduledLoopKeepsEachMicrobatchsValuesBetweenItsActions) {
  // GPipe's order, and one where microbatches finish out of order.
  std::vector<int64_t> planned;
  for (const std::vector<int64_t>& schedule :
       {std::vector<int64_t>{0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 1, 1, 0, 2, 1, 0},
        std::vector<int64_t>{0, 0, 0, 1, 0, 0, 1, 1, 0, 2, 0, 0, 0, 1, 0, 2, 1, 0}}) {
    std::shared_ptr<const Program> p;
    Status created = Program::Create(ScheduledLoopProgram(schedule).Build(), "", ".", &p);
    ASSERT_TRUE(created.ok()) << created.ToString();
    std::unique_ptr<Executor> e;
    ASSERT_TRUE(Executor::Create(p, nullptr, {}, &e).ok());
    std::vector<Tensor> out;
    Status st = e->Run(
        {F32({3}, {1, 2, 3}), F32({3}, {1, 0, 0}), F32({3}, {0, 2, 0}), F32({3}, {0, 0, 4})}, &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    // sum over j of -w * x_j * x_j
    ExpectF32(out[0], {3}, {-1, -8, -48});
    planned.push_back(e->stats().planned_peak_bytes);
  }
  // GPipe holds three microbatches' x and y (12 bytes each) before the first
  // backward, the other order at most two.
  EXPECT_EQ(planned[0] - planned[1], 2 * 12);
}

// Two running sums, of y = -w * x (forward) and g = y * x (backward), with
// a large temporary t made after g in the backward. `early`: each sum's add
// right after what it adds, as the exporter places them; otherwise both at
// the body's end (in the sums' action of a scheduled loop). `reads_sum`: the
// backward also reads y's running sum.
static ProgramBuilder TwoSumLoopProgram(bool early, const std::vector<int64_t>& schedule,
                                        bool reads_sum = false) {
  ProgramBuilder b;
  int w = b.Input("w", DType::kF32, {3});
  std::vector<int> xs;
  for (int j = 0; j < 3; ++j) xs.push_back(b.Input("x.mb" + std::to_string(j), DType::kF32, {3}));
  int nw = b.Apply("neg", {w}, DType::kF32, {3});
  int index = b.Value(DType::kI64, {});
  int acc_y = b.Value(DType::kF32, {3}), acc_g = b.Value(DType::kF32, {3});
  const int begin = StartLoop(b, {index, acc_y, acc_g}, 3, schedule);
  auto action = [&](int64_t pass) { Action(b, schedule, pass); };
  action(0);
  int x = b.Apply("microbatch_select", {index, xs[0], xs[1], xs[2]}, DType::kF32, {3});
  int y = b.Apply("mul", {x, nw}, DType::kF32, {3});
  int next_y = early ? b.Apply("add", {acc_y, y}, DType::kF32, {3}) : -1;
  action(1);
  int g = b.Apply("mul", {y, x}, DType::kF32, {3});
  int next_g = early ? b.Apply("add", {acc_g, g}, DType::kF32, {3}) : -1;
  // t: 12 KiB made after g and dropped at a reduction nobody reads.
  int t = b.Apply("expand", {x}, DType::kF32, {1024, 3});
  b.Apply("reduce_sum", {t}, DType::kF32, {}, {{"keepdims", AttrInt(0)}});
  if (reads_sum) b.Apply("neg", {acc_y}, DType::kF32, {3});
  action(3);
  if (!early) {
    next_y = b.Apply("add", {acc_y, y}, DType::kF32, {3});
    next_g = b.Apply("add", {acc_g, g}, DType::kF32, {3});
  }
  int sum_y = b.Value(DType::kF32, {3}), sum_g = b.Value(DType::kF32, {3});
  b.Op("microbatch_yield", {next_y, next_g}, {sum_y, sum_g}, {{"loop", AttrInt(begin)}});
  b.Output("sum_y", sum_y);
  b.Output("sum_g", sum_g);
  return b;
}

TEST(Executor, RunningSumsTakeTheirAddsResultsAsTheyAreMade) {
  // A plain loop; GPipe's order; one where microbatch 1's forward runs
  // between microbatch 0's forward (which adds y) and its last action.
  for (const std::vector<int64_t>& schedule :
       {std::vector<int64_t>{},
        std::vector<int64_t>{0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 1, 1, 0, 2, 1, 0},
        std::vector<int64_t>{0, 0, 0, 1, 0, 0, 1, 1, 0, 2, 0, 0, 0, 1, 0, 2, 1, 0}}) {
    std::vector<int64_t> planned, measured;
    for (bool early : {false, true}) {
      std::shared_ptr<const Program> p;
      Status created = Program::Create(TwoSumLoopProgram(early, schedule).Build(), "", ".", &p);
      ASSERT_TRUE(created.ok()) << created.ToString();
      std::unique_ptr<Executor> e;
      ASSERT_TRUE(Executor::Create(p, nullptr, {}, &e).ok());
      std::vector<Tensor> out;
      for (int run = 0; run < 2; ++run) {  // each run starts from zeros
        Status st = e->Run(
            {F32({3}, {1, 2, 3}), F32({3}, {1, 0, 0}), F32({3}, {0, 2, 0}), F32({3}, {0, 0, 4})},
            &out);
        ASSERT_TRUE(st.ok()) << st.ToString();
        ExpectF32(out[0], {3}, {-1, -4, -12});  // sum over j of -w * x_j
        ExpectF32(out[1], {3}, {-1, -8, -48});  // ... of -w * x_j * x_j
      }
      planned.push_back(e->stats().planned_peak_bytes);
      measured.push_back(e->stats().peak_live_bytes);
    }
    // Added at once, y and g (12 bytes each) are gone before t is made;
    // added at the end, they wait beside it.
    EXPECT_EQ(planned[0] - planned[1], 24) << schedule.size();
    EXPECT_EQ(measured[0] - measured[1], 24) << schedule.size();
  }
}

TEST(Executor, RunningSumsAreReadOnlyByTheirAdds) {
  std::shared_ptr<const Program> p;
  Status st = Program::Create(TwoSumLoopProgram(true, {}, /*reads_sum=*/true).Build(), "", ".", &p);
  EXPECT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "which only the add that updates it may read");
}

TEST(Executor, ScheduledLoopsAreValidated) {
  auto refused = [](const std::vector<int64_t>& schedule, const std::string& why) {
    std::shared_ptr<const Program> p;
    ASSERT_TRUE(Program::Create(ScheduledLoopProgram(schedule).Build(), "", ".", &p).ok());
    std::unique_ptr<Executor> e;
    Status st = Executor::Create(p, nullptr, {}, &e);
    EXPECT_FALSE(st.ok()) << why;
    EXPECT_HAS(st.message(), why);
  };
  refused({0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 1, 1, 0},
          "the schedule runs 1 of the body's 2 actions for microbatch 2");
  refused({0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 2, 0, 0, 2, 1, 0},
          "schedule action 0 runs pass 1 of chunk 0 for microbatch 0 out of the body's order");
  refused({0, 0, 0, 3, 0, 0}, "schedule action 1 (3, 0, 0) is out of range");
  refused({0, 0, 0, 0}, "schedule needs (microbatch, pass, chunk) triples, got 4 numbers");
  // A marker outside a scheduled loop.
  ProgramBuilder stray;
  int x = stray.Input("x", DType::kF32, {2});
  stray.Op("microbatch_action", {}, {}, {{"pass", AttrInt(0)}, {"chunk", AttrInt(0)}});
  stray.Output("y", stray.Apply("neg", {x}, DType::kF32, {2}));
  std::shared_ptr<const Program> p;
  Status st = Program::Create(stray.Build(), "", ".", &p);
  EXPECT_FALSE(st.ok());
  EXPECT_HAS(st.message(), "is outside a microbatch loop with a schedule");
}

}  // namespace
}  // namespace distrt
