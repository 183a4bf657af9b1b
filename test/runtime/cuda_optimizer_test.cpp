// The CUDA optimizer updates (adam_update, sgd_update) through the executor
// on GPU 0, host fallback off: training programs whose parameter and
// states are weights updated by the kernel, several steps with per-step
// scalars fed as 0-d inputs, the state written in place (no copy of it is
// allocated), against the host executor's state after every step.
#include "cuda_kernel_check.h"

namespace distrt {
namespace testing {
namespace {

constexpr int64_t kN = 100003;  // several blocks, and no vector width divides it

struct Step {
  std::vector<double> scalars;  // the update's 0-d inputs after g
};

// p, states (zeros weights, updated by `op`), g and the scalars as inputs;
// the output is the sum of g (a small output that leaves the state alone).
std::shared_ptr<const Program> UpdateProgram(DType dt, const char* op, int states, int scalars,
                                             Attrs attrs) {
  ProgramBuilder b;
  const Shape s = {kN};
  const int p = b.ZerosWeight("p", dt, s, {0}, s);
  const int g = b.Input("g", dt, s);
  std::vector<int> st;
  for (int k = 0; k < states; ++k)
    st.push_back(b.ZerosWeight("s" + std::to_string(k), dt, s, {0}, s));
  std::vector<int> in = {p, g};
  in.insert(in.end(), st.begin(), st.end());
  for (int k = 0; k < scalars; ++k) in.push_back(b.Input("c" + std::to_string(k), dt, {}));
  std::vector<int> out;
  for (int k = 0; k <= states; ++k) out.push_back(b.Value(dt, s));
  b.Op(op, in, out, attrs);
  b.SetUpdate(p, out[0]);
  for (int k = 0; k < states; ++k)
    b.SetUpdate(st[static_cast<size_t>(k)], out[static_cast<size_t>(k) + 1]);
  b.Output("gsum", b.Apply("reduce_sum", {g}, dt, {}, {{"keepdims", AttrInt(0)}}));
  return MakeProgram(b);
}

Tensor ScalarOf(DType dt, double v) {
  return dt == DType::kF64 ? Make<double>({}, {v}) : Make<float>({}, {static_cast<float>(v)});
}

// Starts both executors from the same random parameter, runs the steps on
// both, and compares the state after each.
void CheckSteps(std::shared_ptr<const Program> program, DType dt, const std::vector<Step>& steps,
                double tol) {
  std::unique_ptr<Executor> cpu, gpu;
  ASSERT_TRUE(Executor::Create(program, nullptr, ExecutorOptions(), &cpu).ok());
  Status st = Executor::Create(program, nullptr, StrictGpu(), &gpu);
  ASSERT_TRUE(st.ok()) << st.ToString();
  if (!getenv("FAKE_GPU"))
    for (const std::string& where : gpu->Placement()) EXPECT_EQ(where, "cuda:0");
  std::vector<PersistentTensor> state;
  ASSERT_TRUE(cpu->ReadPersistent(&state).ok());
  state[0].value = RandomOf(dt, {kN}, 90);
  ASSERT_TRUE(cpu->WritePersistent(state).ok());
  st = gpu->WritePersistent(state);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (size_t k = 0; k < steps.size(); ++k) {
    SCOPED_TRACE("step " + std::to_string(k + 1));
    std::vector<Tensor> in = {RandomOf(dt, {kN}, 100 + static_cast<uint32_t>(k), 2.0f)};
    for (double c : steps[k].scalars) in.push_back(ScalarOf(dt, c));
    std::vector<Tensor> want, got;
    ASSERT_TRUE(cpu->Run(in, &want).ok());
    st = gpu->Run(in, &got);
    ASSERT_TRUE(st.ok()) << st.ToString();
    // In place: g's upload and small scalars, no copy of p or a state.
    EXPECT_LT(gpu->stats().peak_live_bytes, 2 * kN * static_cast<int64_t>(DTypeSize(dt)));
    std::vector<PersistentTensor> cs, gs;
    ASSERT_TRUE(cpu->ReadPersistent(&cs).ok());
    st = gpu->ReadPersistent(&gs);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(gs.size(), cs.size());
    for (size_t i = 0; i < gs.size(); ++i) {
      EXPECT_EQ(gs[i].weight->name(), cs[i].weight->name());
      ExpectValuesClose(AsDoubles(gs[i].value), AsDoubles(cs[i].value), tol,
                        "state " + gs[i].weight->name());
    }
  }
}

// Adam's per-step scalars as the training step computes them: the clipping
// coefficient, AdamW's shrink 1 - lr * wd, lr / (1 - beta1^t),
// sqrt(1 - beta2^t).
std::vector<Step> AdamSteps(double lr, double beta1, double beta2, double wd, double clip, int n) {
  std::vector<Step> steps;
  for (int t = 1; t <= n; ++t) {
    steps.push_back(
        {{clip, 1 - lr * wd, lr / (1 - std::pow(beta1, t)), std::sqrt(1 - std::pow(beta2, t))}});
  }
  return steps;
}

TEST(CudaOptimizer, AdamWUpdatesInPlaceMatchCpu) {
  NEED_GPU();
  // AdamW: decoupled decay in the shrink, no L2 term; a clipping scale.
  auto program = UpdateProgram(DType::kF32, "adam_update", 2, 4,
                               {{"beta1", AttrFloat(0.9)},
                                {"beta2", AttrFloat(0.95)},
                                {"eps", AttrFloat(1e-8)},
                                {"weight_decay", AttrFloat(0.0)}});
  CheckSteps(program, DType::kF32, AdamSteps(3e-3, 0.9, 0.95, 0.1, 0.37, 4), 1e-5);
}

TEST(CudaOptimizer, AdamL2UpdatesInPlaceMatchCpu) {
  NEED_GPU();
  for (DType dt : {DType::kF32, DType::kF64}) {
    SCOPED_TRACE(DTypeName(dt));
    auto program = UpdateProgram(dt, "adam_update", 2, 4,
                                 {{"beta1", AttrFloat(0.8)},
                                  {"beta2", AttrFloat(0.999)},
                                  {"eps", AttrFloat(1e-6)},
                                  {"weight_decay", AttrFloat(0.05)}});
    CheckSteps(program, dt, AdamSteps(1e-2, 0.8, 0.999, 0.0, 1.0, 3),
               dt == DType::kF64 ? 1e-12 : 1e-5);
  }
}

TEST(CudaOptimizer, SgdUpdatesInPlaceMatchCpu) {
  NEED_GPU();
  for (int nesterov = 0; nesterov < 2; ++nesterov) {
    SCOPED_TRACE("nesterov " + std::to_string(nesterov));
    auto program = UpdateProgram(DType::kF32, "sgd_update", 1, 2,
                                 {{"momentum", AttrFloat(0.9)},
                                  {"weight_decay", AttrFloat(nesterov ? 0.0 : 0.01)},
                                  {"nesterov", AttrInt(nesterov)}});
    CheckSteps(program, DType::kF32, {{{1.0, 0.05}}, {{0.5, 0.05}}, {{1.0, 0.02}}}, 1e-5);
  }
}

}  // namespace
}  // namespace testing
}  // namespace distrt
