// Training state: weights with updates and zeros weights (Weight.update,
// Weight.zeros), applied by the executor after each run, read back with
// ReadPersistent / AssemblePersistent, and their validation.
#include <gtest/gtest.h>

#include <cmath>

#include "expect_has.h"
#include "test_util.h"

namespace distrt {
namespace {

using namespace distrt::testing;  // NOLINT

std::shared_ptr<const Program> Make(const ProgramBuilder& b, const std::string& base_dir,
                                    const std::string& source = "train.pb") {
  std::shared_ptr<const Program> p;
  Status st = Program::Create(b.Build(), source, base_dir, &p);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return p;
}

Status CreateFrom(const ProgramBuilder& b, const std::string& base_dir) {
  std::shared_ptr<const Program> p;
  return Program::Create(b.Build(), "train.pb", base_dir, &p);
}

// The initial weight, written to `file`: w0[i] = 0.25 i - 1.
std::vector<float> WriteWeight(const std::string& file, int64_t n) {
  std::vector<float> w;
  for (int64_t i = 0; i < n; ++i) w.push_back(0.25f * static_cast<float>(i) - 1.0f);
  WriteFile(file, w.data(), w.size() * sizeof(float));
  return w;
}

// The gradient of step k: g_k[i] = sin(i + 3k).
Tensor Grad(const Shape& shape, int k) {
  Tensor g;
  EXPECT_TRUE(Tensor::Allocate(DType::kF32, shape, &g).ok());
  for (int64_t i = 0; i < g.num_elements(); ++i) {
    g.data<float>()[i] = std::sin(static_cast<float>(i + 3 * k));
  }
  return g;
}

// One SGD step with a running sum: w <- w - 0.5 g, m <- m + g (m starts at
// zero). Outputs: the weight as read by this run (the weight value itself,
// so it shares the weight's buffer) and -w_new (a consumer of the update
// value that would overwrite it in place if liveness released it).
struct Sgd {
  int w = -1, m = -1, g = -1;
};
Sgd BuildSgd(ProgramBuilder& b, const Shape& shape, const std::string& file) {
  Sgd s;
  s.g = b.Input("g", DType::kF32, shape);
  s.w = b.Weight("w", file, 0, DType::kF32, DType::kF32, shape, Shape(shape.size(), 0), shape);
  s.m = b.ZerosWeight("m", DType::kF32, shape, Shape(shape.size(), 0), shape);
  const int half = b.Constant(F32({}, {0.5f}));
  const int step = b.Apply("mul", {s.g, half}, DType::kF32, shape);
  const int w_new = b.Apply("sub", {s.w, step}, DType::kF32, shape);
  const int m_new = b.Apply("add", {s.m, s.g}, DType::kF32, shape);
  const int neg = b.Apply("neg", {w_new}, DType::kF32, shape);
  b.SetUpdate(s.w, w_new);
  b.SetUpdate(s.m, m_new);
  b.Output("w_read", s.w);
  b.Output("neg_w_new", neg);
  return s;
}

TEST(Training, HostExecutorUpdatesWeightsRunAfterRun) {
  TempDir dir;
  const Shape shape = {2, 3};
  std::vector<float> w = WriteWeight(dir.File("w.bin"), 6), m(6, 0.0f);
  ProgramBuilder b;
  BuildSgd(b, shape, "w.bin");
  auto p = Make(b, dir.path());
  ASSERT_TRUE(p);
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, ExecutorOptions(), &e).ok());
  // Zeros weights count as weights.
  EXPECT_EQ(e->stats().weight_bytes, 2 * 6 * 4 + 4);
  std::vector<std::vector<float>> first_outputs;
  for (int k = 0; k < 3; ++k) {
    Tensor g = Grad(shape, k);
    std::vector<Tensor> out;
    Status st = e->Run({g}, &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    // The output is the weight this run read, not the updated one.
    EXPECT_EQ(Vec<float>(out[0]), w) << "step " << k;
    first_outputs.push_back(Vec<float>(out[0]));
    for (int i = 0; i < 6; ++i) {
      w[i] = w[i] - g.data<float>()[i] * 0.5f;
      m[i] = m[i] + g.data<float>()[i];
    }
    std::vector<float> neg;
    for (float v : w) neg.push_back(-v);
    EXPECT_EQ(Vec<float>(out[1]), neg);
    std::vector<PersistentTensor> state;
    ASSERT_TRUE(e->ReadPersistent(&state).ok());
    ASSERT_EQ(state.size(), 2u);
    EXPECT_EQ(state[0].weight->name(), "w");
    EXPECT_EQ(state[1].weight->name(), "m");
    EXPECT_TRUE(state[1].weight->zeros());
    EXPECT_EQ(Vec<float>(state[0].value), w) << "step " << k;
    EXPECT_EQ(Vec<float>(state[1].value), m) << "step " << k;
  }
  // Outputs handed out earlier keep their contents.
  EXPECT_NE(first_outputs[0], first_outputs[1]);
}

// A checkpoint's state written into the weights: the next run starts from
// it; an entry of the wrong type or a weight that is not training state is
// refused and nothing is written, not even the good entries before it.
TEST(Training, WritePersistentReplacesStateOrNothing) {
  TempDir dir;
  const Shape shape = {2, 3};
  WriteWeight(dir.File("w.bin"), 6);
  ProgramBuilder b;
  BuildSgd(b, shape, "w.bin");
  auto p = Make(b, dir.path());
  ASSERT_TRUE(p);
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, ExecutorOptions(), &e).ok());
  std::vector<PersistentTensor> state;
  ASSERT_TRUE(e->ReadPersistent(&state).ok());
  const std::vector<float> w = {1, 2, 3, 4, 5, 6}, m = {6, 5, 4, 3, 2, 1};
  state[0].value = F32(shape, w);
  state[1].value = F32(shape, m);
  Status st = e->WritePersistent(state);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<Tensor> out;
  Tensor g = Grad(shape, 0);
  ASSERT_TRUE(e->Run({g}, &out).ok());
  EXPECT_EQ(Vec<float>(out[0]), w);  // the run read the written weight
  std::vector<PersistentTensor> after;
  ASSERT_TRUE(e->ReadPersistent(&after).ok());
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(after[0].value.data<float>()[i], w[i] - g.data<float>()[i] * 0.5f);
    EXPECT_EQ(after[1].value.data<float>()[i], m[i] + g.data<float>()[i]);
  }
  // A wrong shape in the second entry: the first is not written either.
  std::vector<PersistentTensor> bad = after;
  bad[0].value = F32(shape, std::vector<float>(6, 9.0f));
  bad[1].value = F32({6}, m);
  st = e->WritePersistent(bad);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_HAS(st.ToString(), "WritePersistent: 'm' must be f32[2, 3]");
  std::vector<PersistentTensor> unchanged;
  ASSERT_TRUE(e->ReadPersistent(&unchanged).ok());
  EXPECT_EQ(Vec<float>(unchanged[0].value), Vec<float>(after[0].value));
  // A weight of another program.
  std::vector<PersistentTensor> foreign = {after[0]};
  proto::Weight other = *after[0].weight;
  foreign[0].weight = &other;
  st = e->WritePersistent(foreign);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_HAS(st.ToString(), "is not a training-state weight of this program");
}

TEST(Training, FailedRunLeavesWeightsUnchanged) {
  TempDir dir;
  const Shape shape = {2, 3};
  const std::vector<float> w0 = WriteWeight(dir.File("w.bin"), 6);
  ProgramBuilder b;
  Sgd s = BuildSgd(b, shape, "w.bin");
  // A gather after the updates are computed fails on a bad index.
  const int idx = b.Input("idx", DType::kI64, {1});
  b.Output("row", b.Apply("gather", {s.w, idx}, DType::kF32, {1, 3}, {{"axis", AttrInt(0)}}));
  auto p = Make(b, dir.path());
  ASSERT_TRUE(p);
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, ExecutorOptions(), &e).ok());
  std::vector<Tensor> out;
  Status st = e->Run({Grad(shape, 0), I64({1}, {5})}, &out);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  std::vector<PersistentTensor> state;
  ASSERT_TRUE(e->ReadPersistent(&state).ok());
  EXPECT_EQ(Vec<float>(state[0].value), w0);
  EXPECT_EQ(Vec<float>(state[1].value), std::vector<float>(6, 0.0f));
  // A good run afterwards applies exactly one step.
  st = e->Run({Grad(shape, 0), I64({1}, {1})}, &out);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_TRUE(e->ReadPersistent(&state).ok());
  Tensor g = Grad(shape, 0);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(state[0].value.data<float>()[i], w0[i] - g.data<float>()[i] * 0.5f);
    EXPECT_EQ(state[1].value.data<float>()[i], g.data<float>()[i]);
  }
}

// sgd_update (momentum 0.5, lr 0.25) writes the new weight and momentum
// into their own buffers: the results are the hand-computed ones run after
// run, the run allocates no copy of the state, and a run that fails after
// the update leaves the executor refusing runs until the state is written.
TEST(Training, OptimizerUpdatesWriteTheStateInPlace) {
  TempDir dir;
  const int64_t n = 4096;
  const Shape shape = {n};
  const std::vector<float> w0 = WriteWeight(dir.File("w.bin"), n);
  ProgramBuilder b;
  const int g = b.Input("g", DType::kF32, shape);
  const int idx = b.Input("idx", DType::kI64, {1});
  const int w = b.Weight("w", "w.bin", 0, DType::kF32, DType::kF32, shape, {0}, shape);
  const int m = b.ZerosWeight("m", DType::kF32, shape, {0}, shape);
  const int one = b.Constant(F32({}, {1.0f})), lr = b.Constant(F32({}, {0.25f}));
  const int w_new = b.Value(DType::kF32, shape), m_new = b.Value(DType::kF32, shape);
  b.Op("sgd_update", {w, g, m, one, lr}, {w_new, m_new},
       {{"momentum", AttrFloat(0.5)}, {"weight_decay", AttrFloat(0.0)}, {"nesterov", AttrInt(0)}});
  b.SetUpdate(w, w_new);
  b.SetUpdate(m, m_new);
  // After the update: a gather that fails on a bad index.
  const int table = b.Constant(F32({2, 1}, {1.0f, 2.0f}));
  b.Output("row", b.Apply("gather", {table, idx}, DType::kF32, {1, 1}, {{"axis", AttrInt(0)}}));
  auto p = Make(b, dir.path());
  ASSERT_TRUE(p);
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, ExecutorOptions(), &e).ok());
  std::vector<float> wk = w0, mk(n, 0.0f);
  std::vector<Tensor> out;
  for (int k = 0; k < 2; ++k) {
    Tensor gk = Grad(shape, k);
    ASSERT_TRUE(e->Run({gk, I64({1}, {1})}, &out).ok());
    for (int64_t i = 0; i < n; ++i) {
      mk[i] = mk[i] * 0.5f + gk.data<float>()[i];
      wk[i] = wk[i] + -0.25f * mk[i];
    }
    // Only the gather's row is allocated: no copy of w or m.
    EXPECT_LT(e->stats().peak_live_bytes, 1024);
  }
  std::vector<PersistentTensor> state;
  ASSERT_TRUE(e->ReadPersistent(&state).ok());
  EXPECT_EQ(Vec<float>(state[0].value), wk);
  EXPECT_EQ(Vec<float>(state[1].value), mk);

  Status st = e->Run({Grad(shape, 2), I64({1}, {7})}, &out);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  st = e->Run({Grad(shape, 2), I64({1}, {1})}, &out);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_HAS(st.ToString(), "updating training state in place");
  ASSERT_TRUE(e->WritePersistent(state).ok());
  ASSERT_TRUE(e->Run({Grad(shape, 2), I64({1}, {1})}, &out).ok());
}

// AdamW (lr 0.5, decay as a parameter scale 0.999) on an f32 master with its
// bf16 compute copy kept as a weight (the update's fourth result): the
// master follows a double-precision Adam and the copy the run reads is the
// master rounded, run after run. When every reader of the copy runs before
// the update, the update writes the new copy into the copy's own buffer
// (the run allocates nothing for it); a reader after the update keeps it
// out of that buffer and still sees this run's copy. With the parameter
// read through a temporary (as a tensor-parallel all-reduce of it is), the
// temporary dies at the update: only the new parameter may reuse it, not
// the moments, whose loop reads the parameter after writing them.
TEST(Training, AdamWritesTheComputeCopyInPlaceAfterItsReaders) {
  enum Variant { kReadersBefore, kReaderAfter, kParameterThroughATemporary };
  for (const Variant variant : {kReadersBefore, kReaderAfter, kParameterThroughATemporary}) {
    SCOPED_TRACE(variant);
    TempDir dir;
    const int64_t n = 4096;
    const Shape shape = {n};
    const std::vector<float> w0 = WriteWeight(dir.File("w.bin"), n);
    ProgramBuilder b;
    const int g = b.Input("g", DType::kF32, shape);
    const int w = b.Weight("w", "w.bin", 0, DType::kF32, DType::kF32, shape, {0}, shape);
    const int c =
        b.Weight("w/compute_copy", "w.bin", 0, DType::kF32, DType::kBF16, shape, {0}, shape);
    b.proto().mutable_weights(b.proto().weights_size() - 1)->set_copy_of("w");
    // Through temporaries, the moments are kept in bf16 and widened for
    // the update, as `optimizer_state: bf16` does.
    const bool temporaries = variant == kParameterThroughATemporary;
    const DType state_dtype = temporaries ? DType::kBF16 : DType::kF32;
    const int m = b.ZerosWeight("m", state_dtype, shape, {0}, shape);
    const int v = b.ZerosWeight("v", state_dtype, shape, {0}, shape);
    b.Output("y", b.Apply("cast", {c}, DType::kF32, shape));
    auto scalar = [&](float x) { return b.Constant(F32({}, {x})); };
    auto widened = [&](int x) {
      return temporaries ? b.Apply("cast", {x}, DType::kF32, shape) : x;
    };
    const int param = temporaries ? b.Apply("add", {w, scalar(0.0f)}, DType::kF32, shape) : w;
    const int w_new = b.Value(DType::kF32, shape), m_new = b.Value(DType::kF32, shape);
    const int v_new = b.Value(DType::kF32, shape), c_new = b.Value(DType::kBF16, shape);
    b.Op("adam_update",
         {param, g, widened(m), widened(v), scalar(1.0f), scalar(0.999f), scalar(0.5f),
          scalar(1.0f)},
         {w_new, m_new, v_new, c_new},
         {{"beta1", AttrFloat(0.9)},
          {"beta2", AttrFloat(0.999)},
          {"eps", AttrFloat(1e-8)},
          {"weight_decay", AttrFloat(0.0)}});
    if (variant == kReaderAfter) b.Output("y_after", b.Apply("cast", {c}, DType::kF32, shape));
    auto narrowed = [&](int x) {
      return temporaries ? b.Apply("cast", {x}, state_dtype, shape) : x;
    };
    for (auto [weight, update] :
         {std::pair{w, w_new}, {m, narrowed(m_new)}, {v, narrowed(v_new)}, {c, c_new}})
      b.SetUpdate(weight, update);
    auto p = Make(b, dir.path());
    ASSERT_TRUE(p);
    std::unique_ptr<Executor> e;
    ASSERT_TRUE(Executor::Create(p, nullptr, ExecutorOptions(), &e).ok());
    std::vector<double> wd(w0.begin(), w0.end()), md(n, 0.0), vd(n, 0.0);
    for (int k = 0; k < 3; ++k) {
      std::vector<PersistentTensor> state;
      ASSERT_TRUE(e->ReadPersistent(&state).ok());
      const std::vector<float> master = Vec<float>(state[0].value);
      for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(master[i], wd[i], 1e-5 * (1 + std::abs(wd[i])));
      ASSERT_EQ(state[1].weight->copy_of(), "w");
      const uint16_t* copy = state[1].value.data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(copy[i], FloatToBF16(master[i])) << k << " " << i;
      state.clear();  // holding the state would keep the update out of its buffers
      const Tensor gk = Grad(shape, k);
      std::vector<Tensor> out;
      ASSERT_TRUE(e->Run({gk}, &out).ok());
      for (const Tensor& y : out)
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(y.data<float>()[i], BF16ToFloat(FloatToBF16(master[i]))) << k << " " << i;
      // The outputs (f32), the temporary parameter and moments (f32), and
      // with a late reader the new copy (bf16).
      int64_t held = static_cast<int64_t>(out.size()) * n * 4;
      if (temporaries) held += 3 * n * 4;
      if (variant == kReaderAfter)
        EXPECT_GE(e->stats().peak_live_bytes, held + n * 2);
      else
        EXPECT_LT(e->stats().peak_live_bytes, held + 1024);
      for (int64_t i = 0; i < n; ++i) {
        const double gi = gk.data<float>()[i];
        md[i] = 0.9 * md[i] + 0.1 * gi;
        vd[i] = 0.999 * vd[i] + 0.001 * gi * gi;
        wd[i] = 0.999 * wd[i] - 0.5 * md[i] / (std::sqrt(vd[i]) + 1e-8);
        if (temporaries) {
          md[i] = BF16ToFloat(FloatToBF16(static_cast<float>(md[i])));
          vd[i] = BF16ToFloat(FloatToBF16(static_cast<float>(vd[i])));
        }
      }
    }
  }
}

TEST(Training, AliasedUpdatesSwapAndBigCopiesUseThreads) {
  // a <- identity(b), b <- identity(a): both updates alias the other
  // weight's buffer, so the result must not depend on the copy order. c is
  // big enough (8 MiB) to be copied by several threads.
  TempDir dir;
  const int64_t big = int64_t{1} << 21;
  const std::vector<float> c0 = WriteWeight(dir.File("c.bin"), big);
  ProgramBuilder b;
  const int a = b.ZerosWeight("a", DType::kF32, {2}, {0}, {2});
  const int bw = b.ZerosWeight("b", DType::kF32, {2}, {0}, {2});
  const int c = b.Weight("c", "c.bin", 0, DType::kF32, DType::kF32, {big}, {0}, {big});
  const int x = b.Input("x", DType::kF32, {2});
  const int a_new = b.Apply("add", {bw, x}, DType::kF32, {2});  // b + x
  const int b_new = b.Apply("identity", {a}, DType::kF32, {2});
  const int one = b.Constant(F32({}, {1.0f}));
  const int c_new = b.Apply("add", {c, one}, DType::kF32, {big});
  b.SetUpdate(a, a_new);
  b.SetUpdate(bw, b_new);
  b.SetUpdate(c, c_new);
  // Outputs aliasing updated weights: a itself and a reshape of c.
  b.Output("a", a);
  b.Output("c2", b.Apply("reshape", {c}, DType::kF32, {2, big / 2}));
  auto p = Make(b, dir.path());
  ASSERT_TRUE(p);
  ExecutorOptions opts;
  opts.threads = 4;
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, opts, &e).ok());
  std::vector<float> av = {0, 0}, bv = {0, 0};
  for (int k = 1; k <= 3; ++k) {
    std::vector<Tensor> out;
    ASSERT_TRUE(e->Run({F32({2}, {1.0f * k, 10.0f * k})}, &out).ok());
    EXPECT_EQ(Vec<float>(out[0]), av);
    EXPECT_EQ(out[1].data<float>()[big - 1], c0[big - 1] + static_cast<float>(k - 1));
    const std::vector<float> a_next = {bv[0] + 1.0f * k, bv[1] + 10.0f * k};
    bv = av;
    av = a_next;
    std::vector<PersistentTensor> state;
    ASSERT_TRUE(e->ReadPersistent(&state).ok());
    ASSERT_EQ(state.size(), 3u);
    EXPECT_EQ(Vec<float>(state[0].value), av) << "step " << k;
    EXPECT_EQ(Vec<float>(state[1].value), bv) << "step " << k;
    const float* cv = state[2].value.data<float>();
    bool all = true;
    for (int64_t i = 0; i < big && all; ++i) all = cv[i] == c0[i] + static_cast<float>(k);
    EXPECT_TRUE(all) << "step " << k;
  }
}

TEST(Training, SharedAndReturnedUpdateValuesKeepTheirContents) {
  // Update values usually hand their bytes to the weight (a swap, no copy).
  // Not when another weight takes the same value (p and q <- v), nor when
  // the value is also an output (r <- u, output u): those are copied, and
  // outputs handed out keep their contents after later runs.
  ProgramBuilder b;
  const int pw = b.ZerosWeight("p", DType::kF32, {3}, {0}, {3});
  const int qw = b.ZerosWeight("q", DType::kF32, {3}, {0}, {3});
  const int rw = b.ZerosWeight("r", DType::kF32, {3}, {0}, {3});
  const int x = b.Input("x", DType::kF32, {3});
  const int v = b.Apply("add", {pw, x}, DType::kF32, {3});  // p + x
  const int u = b.Apply("add", {rw, v}, DType::kF32, {3});  // r + p + x
  b.SetUpdate(pw, v);
  b.SetUpdate(qw, v);
  b.SetUpdate(rw, u);
  b.Output("u", u);
  TempDir dir;
  auto prog = Make(b, dir.path());
  ASSERT_TRUE(prog);
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(prog, nullptr, ExecutorOptions(), &e).ok());
  std::vector<float> p(3, 0.0f), r(3, 0.0f);
  std::vector<std::vector<float>> outs;
  std::vector<Tensor> kept;
  for (int k = 1; k <= 3; ++k) {
    std::vector<Tensor> out;
    ASSERT_TRUE(e->Run({F32({3}, {1.0f * k, 2.0f * k, -3.0f * k})}, &out).ok());
    const std::vector<float> xs = {1.0f * k, 2.0f * k, -3.0f * k};
    for (int i = 0; i < 3; ++i) {
      p[i] += xs[i];
      r[i] += p[i];
    }
    EXPECT_EQ(Vec<float>(out[0]), r) << "step " << k;
    outs.push_back(r);
    kept.push_back(out[0]);
    std::vector<PersistentTensor> state;
    ASSERT_TRUE(e->ReadPersistent(&state).ok());
    ASSERT_EQ(state.size(), 3u);
    EXPECT_EQ(Vec<float>(state[0].value), p) << "step " << k;
    EXPECT_EQ(Vec<float>(state[1].value), p) << "step " << k;
    EXPECT_EQ(Vec<float>(state[2].value), r) << "step " << k;
  }
  for (size_t k = 0; k < kept.size(); ++k) EXPECT_EQ(Vec<float>(kept[k]), outs[k]) << k;
}

TEST(Training, ScheduleAppliesUpdatesAfterEachRun) {
  TempDir dir;
  const Shape shape = {2, 3};
  std::vector<float> w = WriteWeight(dir.File("w.bin"), 6);
  ProgramBuilder b;
  BuildSgd(b, shape, "w.bin");
  proto::PipelineSchedule* sch = b.proto().mutable_schedule();
  sch->set_microbatches(2);
  sch->set_kind("gpipe");
  sch->set_num_stages(1);
  for (int m = 0; m < 2; ++m) sch->add_actions()->set_microbatch(m);
  auto p = Make(b, dir.path());
  ASSERT_TRUE(p);
  std::unique_ptr<Executor> e;
  ASSERT_TRUE(Executor::Create(p, nullptr, ExecutorOptions(), &e).ok());
  std::vector<std::vector<Tensor>> out;
  ASSERT_TRUE(e->RunSchedule({{Grad(shape, 0)}, {Grad(shape, 1)}}, &out).ok());
  for (int k = 0; k < 2; ++k) {
    Tensor g = Grad(shape, k);
    for (int i = 0; i < 6; ++i) w[i] = w[i] - g.data<float>()[i] * 0.5f;
  }
  std::vector<PersistentTensor> state;
  ASSERT_TRUE(e->ReadPersistent(&state).ok());
  EXPECT_EQ(Vec<float>(state[0].value), w);
}

// Two ranks: w [4, 3] and its zeros state m are split by rows; the bias
// [3] is replicated and updated with the all-reduced column sums of g, so
// both replicas stay equal.
TEST(Training, LocalSessionTwoRanksAssemblesTrainedState) {
  TempDir dir;
  std::vector<float> w = WriteWeight(dir.File("w.bin"), 12);
  std::vector<float> bias(3, 0.0f), m(12, 0.0f);
  std::vector<std::shared_ptr<const Program>> progs;
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r, 2);
    const proto::Slice rows = MakeSlice({4, 3}, {2 * r, 0}, {2, 3});
    const int g = b.Input("g", DType::kF32, {2, 3}, rows);
    const int wv = b.Weight("w", "w.bin", 0, DType::kF32, DType::kF32, {4, 3}, {2 * r, 0}, {2, 3});
    const int mv = b.ZerosWeight("m", DType::kF32, {4, 3}, {2 * r, 0}, {2, 3});
    const int bv = b.ZerosWeight("bias", DType::kF32, {3}, {0}, {3});
    const int half = b.Constant(F32({}, {0.5f}));
    const int step = b.Apply("mul", {g, half}, DType::kF32, {2, 3});
    b.SetUpdate(wv, b.Apply("sub", {wv, step}, DType::kF32, {2, 3}));
    b.SetUpdate(mv, b.Apply("add", {mv, g}, DType::kF32, {2, 3}));
    const int part = b.Apply("reduce_sum", {g}, DType::kF32, {3},
                             {{"axes", AttrInts({0})}, {"keepdims", AttrInt(0)}});
    const int col =
        b.Apply("all_reduce", {part}, DType::kF32, {3}, {{"reduction", AttrString("sum")}}, {0, 1});
    b.SetUpdate(bv, b.Apply("sub", {bv, col}, DType::kF32, {3}));
    b.Output("col", col);
    progs.push_back(Make(b, dir.path(), StrCat("rank-", r, ".pb")));
  }
  std::unique_ptr<LocalSession> session;
  Status st = LocalSession::Create(progs, LocalRunOptions(), &session);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int k = 0; k < 3; ++k) {
    Tensor g = Grad({4, 3}, k);
    std::vector<std::vector<Tensor>> ins, outs;
    ASSERT_TRUE(ScatterInputs(progs, {{"g", g}}, &ins).ok());
    st = session->Run(ins, &outs);
    ASSERT_TRUE(st.ok()) << st.ToString();
    const float* gv = g.data<float>();
    for (int i = 0; i < 12; ++i) {
      w[i] = w[i] - gv[i] * 0.5f;
      m[i] = m[i] + gv[i];
    }
    for (int j = 0; j < 3; ++j) {
      // Each rank sums its two rows, then the all-reduce adds the ranks.
      const float col = (gv[j] + gv[3 + j]) + (gv[6 + j] + gv[9 + j]);
      bias[j] = bias[j] - col;
    }
    std::vector<std::vector<PersistentTensor>> state;
    ASSERT_TRUE(session->ReadPersistent(&state).ok());
    ASSERT_EQ(state.size(), 2u);
    ASSERT_EQ(state[1].size(), 3u);
    EXPECT_EQ(Vec<float>(state[1][0].value),
              std::vector<float>(w.begin() + 6, w.end()));  // rank 1's rows
    std::vector<NamedTensor> global;
    st = AssemblePersistent(state, &global);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(global.size(), 3u);
    EXPECT_EQ(global[0].name, "w");
    EXPECT_EQ(global[0].tensor.shape(), (Shape{4, 3}));
    EXPECT_EQ(Vec<float>(global[0].tensor), w) << "step " << k;
    EXPECT_EQ(global[1].name, "m");
    EXPECT_EQ(Vec<float>(global[1].tensor), m) << "step " << k;
    EXPECT_EQ(global[2].name, "bias");
    // Summation order inside reduce_sum is the kernel's: compare loosely.
    ExpectF32(global[2].tensor, {3}, bias, 1e-6f);
  }
  // Each rank's executor is reachable.
  EXPECT_EQ(session->executor(1).program().rank(), 1);
  // A piece no rank holds is reported with the weight's name.
  std::vector<std::vector<PersistentTensor>> state;
  ASSERT_TRUE(session->ReadPersistent(&state).ok());
  state.pop_back();
  std::vector<NamedTensor> global;
  EXPECT_HAS(AssemblePersistent(state, &global).message(),
             "weight 'w': element 6 of the global tensor is held by no rank");
}

TEST(Training, SavedProgramKeepsUpdatesAndZeros) {
  TempDir dir;
  WriteWeight(dir.File("w.bin"), 6);
  ProgramBuilder b;
  Sgd s = BuildSgd(b, {2, 3}, "w.bin");
  ASSERT_TRUE(SaveProgram(b.Build(), dir.File("p.pb")).ok());
  std::shared_ptr<const Program> p;
  Status st = LoadProgram(dir.File("p.pb"), &p);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(p->updates().size(), 2u);
  EXPECT_TRUE(p->proto().weights(0).has_update());
  EXPECT_TRUE(p->proto().weights(1).zeros());
  EXPECT_EQ(p->value(p->updates()[0].value).id, s.w);
  // Value id 0 is a valid update target (hence `optional`): g is %0 here.
  EXPECT_EQ(s.g, 0);
  // A version-1 reader would ignore the updates, so version 1 is refused.
  proto::RankProgram old = b.Build();
  old.set_format_version(1);
  ASSERT_TRUE(SaveProgram(old, dir.File("old.pb")).ok());
  st = LoadProgram(dir.File("old.pb"), &p);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_HAS(st.message(), "format_version 1 is not supported");
}

TEST(Training, ValidationRejectsBadUpdatesAndZeros) {
  TempDir dir;
  WriteWeight(dir.File("w.bin"), 6);
  {  // An update of another type.
    ProgramBuilder b;
    const int w = b.Weight("w", "w.bin", 0, DType::kF32, DType::kF32, {2, 3}, {0, 0}, {2, 3});
    const int t = b.Apply("transpose", {w}, DType::kF32, {3, 2}, {{"perm", AttrInts({1, 0})}});
    b.SetUpdate(w, t);
    Status st = CreateFrom(b, dir.path());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_HAS(st.message(), "weight 0 'w' is f32[2, 3] but its update %1 f32[3, 2]");
  }
  {  // Same shape, another dtype.
    ProgramBuilder b;
    const int w = b.Weight("w", "w.bin", 0, DType::kF32, DType::kF32, {2, 3}, {0, 0}, {2, 3});
    b.SetUpdate(w, b.Apply("cast", {w}, DType::kF64, {2, 3}));
    EXPECT_HAS(CreateFrom(b, dir.path()).message(), "has another type");
  }
  {  // A zeros weight that names a file.
    ProgramBuilder b;
    const int m = b.ZerosWeight("m", DType::kF32, {2, 3}, {0, 0}, {2, 3});
    b.proto().mutable_weights(0)->set_file("w.bin");
    b.Output("m", m);
    EXPECT_HAS(CreateFrom(b, dir.path()).message(), "weight 0 'm' is zeros but names file 'w.bin'");
  }
  {  // A weight that is neither read from a file nor zeros.
    ProgramBuilder b;
    b.Weight("w", "", 0, DType::kF32, DType::kF32, {2}, {0}, {2});
    EXPECT_HAS(CreateFrom(b, dir.path()).message(), "weight 0 'w' has no file (and is not zeros)");
  }
  {  // An update that is a program input.
    ProgramBuilder b;
    const int x = b.Input("x", DType::kF32, {2, 3});
    const int w = b.Weight("w", "w.bin", 0, DType::kF32, DType::kF32, {2, 3}, {0, 0}, {2, 3});
    b.SetUpdate(w, x);
    EXPECT_HAS(CreateFrom(b, dir.path()).message(),
               "weight 0 'w' has update %0 'x' f32[2, 3], which is a program input");
  }
  {  // An update that is a weight or a constant.
    ProgramBuilder b;
    const int w = b.Weight("w", "w.bin", 0, DType::kF32, DType::kF32, {2, 3}, {0, 0}, {2, 3});
    const int m = b.ZerosWeight("m", DType::kF32, {2, 3}, {0, 0}, {2, 3});
    b.SetUpdate(w, m);
    EXPECT_HAS(CreateFrom(b, dir.path()).message(), "which is a weight or constant");
  }
  {  // An update that is not declared, or declared and never defined.
    ProgramBuilder b;
    const int w = b.Weight("w", "w.bin", 0, DType::kF32, DType::kF32, {2, 3}, {0, 0}, {2, 3});
    b.SetUpdate(w, 42);
    EXPECT_HAS(CreateFrom(b, dir.path()).message(), "has update %42, which is not declared");
    b.SetUpdate(w, b.Value(DType::kF32, {2, 3}));
    EXPECT_HAS(CreateFrom(b, dir.path()).message(), "which is never defined");
  }
  {  // A zeros weight's dtype may be left unspecified, not another one.
    ProgramBuilder b;
    b.ZerosWeight("m", DType::kF32, {2}, {0}, {2});
    b.proto().mutable_weights(0)->set_dtype(proto::DTYPE_UNSPECIFIED);
    EXPECT_TRUE(CreateFrom(b, dir.path()).ok());
    b.proto().mutable_weights(0)->set_dtype(proto::F16);
    EXPECT_HAS(CreateFrom(b, dir.path()).message(), "is stored as f16");
  }
}

}  // namespace
}  // namespace distrt
