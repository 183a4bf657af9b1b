// The executor on a CUDA device: device kernels and cuBLASLt matmul against
// the host executor, the host fallback, training state on the device, ranks
// sharing one GPU with host-staged collectives, and the nccl communicator
// (collectives queued on its stream from the executor, a 2-rank all-reduce,
// a 2-rank Megatron MLP, and the collective conformance suite through the
// host-staging adapter). Tests that need a GPU skip with "skipped: no CUDA
// device" here; the no-device tests check that every entry point fails
// cleanly on such a machine.
#include "distrt/cuda.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <thread>

#include "comm_harness.h"
#include "test_util.h"

namespace distrt {
namespace testing {
namespace {

#define NEED_DEVICES(k)                                                                            \
  do {                                                                                             \
    std::string why_;                                                                              \
    const int have_ = CudaDeviceCount(&why_);                                                      \
    if (have_ == 0) GTEST_SKIP() << "skipped: " << why_;                                           \
    if (have_ < (k)) GTEST_SKIP() << "skipped: needs " << (k) << " CUDA devices, found " << have_; \
  } while (0)

std::shared_ptr<const Program> Make(const ProgramBuilder& b) {
  std::shared_ptr<const Program> p;
  Status st = Program::Create(b.Build(), StrCat("rank-", b.Build().rank(), ".pb"), ".", &p);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return p;
}

Tensor Random(const Shape& shape, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(NumElements(shape)));
  uint32_t s = seed * 2654435761u + 12345u;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) % 2001) / 1000.0f - 1.0f;  // [-1, 1]
  }
  return *Tensor::FromVector<float>(shape, v);
}

std::shared_ptr<Device> Gpu(int index = 0) {
  std::shared_ptr<Device> d;
  Status st = OpenCudaDevice(index, &d);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return d;
}

ExecutorOptions OnGpu(int index = 0) {
  ExecutorOptions o;
  o.device = Gpu(index);
  return o;
}

// Runs `program` on the host executor and on GPU 0; expects equal outputs
// (f32 within tol) and returns where each instruction ran.
std::vector<std::string> CompareWithCpu(std::shared_ptr<const Program> program,
                                        const std::vector<Tensor>& inputs, float tol = 1e-4f,
                                        RunStats* stats = nullptr) {
  std::unique_ptr<Executor> cpu;
  Status st = Executor::Create(program, nullptr, ExecutorOptions(), &cpu);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return {};
  std::vector<Tensor> want, got;
  st = cpu->Run(inputs, &want);
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::unique_ptr<Executor> gpu;
  st = Executor::Create(program, nullptr, OnGpu(), &gpu);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return {};
  st = gpu->Run(inputs, &got);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].type(), want[i].type());
    if (want[i].dtype() == DType::kF32) {
      std::vector<float> g = got[i].ToVector<float>(), w = want[i].ToVector<float>();
      for (size_t k = 0; k < g.size() && k < w.size(); ++k) {
        if (std::isnan(w[k])) {
          EXPECT_TRUE(std::isnan(g[k])) << "output " << i << " element " << k;
        } else if (std::isinf(w[k])) {
          EXPECT_EQ(g[k], w[k]) << "output " << i << " element " << k;
        } else {
          EXPECT_NEAR(g[k], w[k], tol * (1 + std::fabs(w[k])))
              << "output " << i << " element " << k;
        }
      }
    } else {
      EXPECT_TRUE(got[i].Equals(want[i])) << "output " << i;
    }
  }
  if (stats) *stats = gpu->stats();
  return gpu->Placement();
}

// ---- without a GPU ---------------------------------------------------------------

TEST(CudaNoDevice, EveryEntryPointFailsCleanly) {
  std::string why;
  if (CudaDeviceCount(&why) > 0) {
    GTEST_SKIP() << "skipped: a CUDA device is present; this test covers machines without one";
  }
  EXPECT_HAS(why, "no CUDA device");
  NcclId id;
  Status st = NewNcclId(&id);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_HAS(st.message(), "no CUDA device");
  std::unique_ptr<Communicator> comm;
  st = CreateNcclCommunicator(id, 0, 1, NcclCommOptions(), &comm);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_FALSE(comm);
  std::shared_ptr<Device> device;
  st = OpenCudaDevice(0, &device);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_HAS(st.message(), "no CUDA device");
  EXPECT_FALSE(device);
}

TEST(Nccl, IdHexRoundTripAndErrors) {
  NcclId id;
  for (size_t i = 0; i < sizeof(id.bytes); ++i) id.bytes[i] = static_cast<char>(i * 37 + 1);
  const std::string hex = NcclIdToHex(id);
  EXPECT_EQ(hex.size(), 256u);
  NcclId back;
  ASSERT_TRUE(NcclIdFromHex(hex, &back).ok());
  EXPECT_EQ(std::string(back.bytes, 128), std::string(id.bytes, 128));
  EXPECT_FALSE(NcclIdFromHex("abc", &back).ok());
  EXPECT_HAS(NcclIdFromHex(std::string(256, 'z'), &back).message(), "not hex");
}

// ---- device kernels ----------------------------------------------------------------

TEST(CudaDevice, MatmulThroughCublasMatchesCpu) {
  NEED_DEVICES(1);
  struct Case {
    Shape a, b, out;
  };
  const Case cases[] = {
      {{4, 5}, {5, 6}, {4, 6}},
      {{3, 4, 5}, {3, 5, 6}, {3, 4, 6}},           // same batch
      {{2, 3, 4, 5}, {5, 7}, {2, 3, 4, 7}},        // shared right operand
      {{4, 5}, {3, 5, 2}, {3, 4, 2}},              // shared left operand
      {{2, 1, 4, 5}, {1, 3, 5, 2}, {2, 3, 4, 2}},  // general broadcast: a GEMM per batch
      {{3, 0}, {0, 2}, {3, 2}},                    // k = 0
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(ShapeToString(c.a) + " x " + ShapeToString(c.b));
    ProgramBuilder b;
    int x = b.Input("a", DType::kF32, c.a);
    int w = b.Input("b", DType::kF32, c.b);
    b.Output("y", b.Apply("matmul", {x, w}, DType::kF32, c.out));
    auto place = CompareWithCpu(Make(b), {Random(c.a, 1), Random(c.b, 2)});
    EXPECT_EQ(place, std::vector<std::string>{"cuda:0"});
  }
}

// Operands stored transposed, a bias and the exact GELU epilogue (a linear
// layer as the exporter writes it), through cuBLASLt.
TEST(CudaDevice, MatmulTransposedBiasGeluMatchesCpu) {
  NEED_DEVICES(1);
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      for (int bias = 0; bias < 2; ++bias) {
        SCOPED_TRACE(StrCat("ta ", ta, " tb ", tb, " bias ", bias));
        const int64_t m = 33, k = 70, n = 45;
        const Shape as = ta ? Shape{k, m} : Shape{m, k}, bs = tb ? Shape{n, k} : Shape{k, n};
        ProgramBuilder b;
        int x = b.Input("a", DType::kF32, as);
        int w = b.Input("b", DType::kF32, bs);
        std::vector<int> ins = {x, w};
        if (bias) ins.push_back(b.Input("bias", DType::kF32, {n}));
        const int y =
            bias ? b.Apply("matmul", ins, DType::kF32, {m, n},
                           {{"transpose_lhs", AttrInt(ta)},
                            {"transpose_rhs", AttrInt(tb)},
                            {"epilogue", AttrString("gelu")}})
                 : b.Apply("matmul", ins, DType::kF32, {m, n},
                           {{"transpose_lhs", AttrInt(ta)}, {"transpose_rhs", AttrInt(tb)}});
        b.Output("y", y);
        std::vector<Tensor> values = {Random(as, 11), Random(bs, 12)};
        if (bias) values.push_back(Random({n}, 13));
        EXPECT_EQ(CompareWithCpu(Make(b), values), std::vector<std::string>{"cuda:0"});
      }
    }
  }
}

TEST(CudaDevice, ElementwiseKernelsMatchCpu) {
  NEED_DEVICES(1);
  ProgramBuilder b;
  const Shape s = {3, 1, 5}, t = {4, 1};
  int x = b.Input("x", DType::kF32, s);
  int y = b.Input("y", DType::kF32, t);
  int pos = b.Apply("abs", {x}, DType::kF32, s);
  const char* unary[] = {"neg", "abs", "exp",   "tanh", "sigmoid", "erf", "relu",
                         "sin", "cos", "floor", "ceil", "round",   "sign"};
  for (const char* op : unary) b.Output(op, b.Apply(op, {x}, DType::kF32, s));
  b.Output("log", b.Apply("log", {pos}, DType::kF32, s));
  b.Output("sqrt", b.Apply("sqrt", {pos}, DType::kF32, s));
  b.Output("reciprocal", b.Apply("reciprocal", {pos}, DType::kF32, s));
  b.Output("gelu", b.Apply("gelu", {x}, DType::kF32, s));
  b.Output("gelu_tanh",
           b.Apply("gelu", {x}, DType::kF32, s, {{"approximate", AttrString("tanh")}}));
  b.Output("leaky", b.Apply("leaky_relu", {x}, DType::kF32, s, {{"alpha", AttrFloat(0.2)}}));
  b.Output("gelu_grad", b.Apply("gelu_grad", {x, pos}, DType::kF32, s));
  const Shape bs = {3, 4, 5};
  for (const char* op : {"add", "sub", "mul", "div", "max", "min"}) {
    b.Output(std::string("b_") + op, b.Apply(op, {x, y}, DType::kF32, bs));
  }
  b.Output("pow", b.Apply("pow", {pos, y}, DType::kF32, bs));
  b.Output("same", b.Apply("add", {x, x}, DType::kF32, s));
  int r = b.Apply("reshape", {x}, DType::kF32, {15});
  b.Output("reshaped", b.Apply("exp", {r}, DType::kF32, {15}));
  Tensor xv = Random(s, 3);
  xv.data<float>()[2] = NAN;   // NaN through max/min/relu
  xv.data<float>()[4] = 2.5f;  // round half to even
  auto place = CompareWithCpu(Make(b), {xv, Random(t, 4)}, 2e-5f);
  for (size_t i = 0; i < place.size(); ++i)
    EXPECT_EQ(place[i], "cuda:0") << "instruction " << i;
}

// A program whose run cannot fit the GPU is refused at Create, from its
// liveness plan, with both sizes named, before anything is allocated.
TEST(CudaDevice, ProgramLargerThanTheDeviceIsRefusedAtCreate) {
  NEED_DEVICES(1);
  ProgramBuilder b;
  const Shape huge = {int64_t{1} << 20, int64_t{1} << 20};  // 4 TiB of f32
  int x = b.Input("x", DType::kF32, {1});
  int big = b.Apply("expand", {x}, DType::kF32, huge);
  b.Output("y", b.Apply("reduce_sum", {big}, DType::kF32, {}, {{"axes", AttrInts({0, 1})}, {"keepdims", AttrInt(0)}}));
  std::unique_ptr<Executor> exec;
  Status st = Executor::Create(Make(b), nullptr, OnGpu(), &exec);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.ToString();
  EXPECT_HAS(st.message(), "a run needs about 4194304 MiB of cuda:0's memory at once");
  EXPECT_HAS(st.message(), "MiB are free");
}

// argmax has CUDA kernels for floating inputs only: on an i32 input it runs
// on the host between two device kernels, its input copied to the host and
// its output back.
TEST(CudaDevice, HostFallbackIsCorrectAndCounted) {
  NEED_DEVICES(1);
  ProgramBuilder b;
  int x = b.Input("x", DType::kF32, {2, 8});
  int c = b.Apply("cast", {x}, DType::kI32, {2, 8});  // device
  int a = b.Apply("argmax", {c}, DType::kI64, {2}, {{"axis", AttrInt(1)}, {"keepdims", AttrInt(0)}});  // host
  int f = b.Apply("cast", {a}, DType::kF32, {2});  // device
  b.Output("f", f);
  RunStats stats;
  // Integers in [-8, 8): ties resolved the same way (the first index) on both.
  std::vector<float> v = Random({2, 8}, 5).ToVector<float>();
  for (float& e : v) e = std::floor(e * 8);
  auto place = CompareWithCpu(Make(b), {*Tensor::FromVector<float>({2, 8}, v)}, 0.f, &stats);
  EXPECT_EQ(place, (std::vector<std::string>{"cuda:0", "cpu", "cuda:0"}));
  EXPECT_EQ(stats.host_instructions, 1);
  EXPECT_EQ(stats.bytes_to_host, 16 * 4 + 2 * 4);   // argmax's input, the output
  EXPECT_EQ(stats.bytes_to_device, 16 * 4 + 2 * 8);  // the input x, argmax's result

  // With the fallback off, the first host-only instruction is an error.
  ExecutorOptions strict = OnGpu();
  strict.allow_host_fallback = false;
  std::unique_ptr<Executor> exec;
  Status st = Executor::Create(Make(b), nullptr, strict, &exec);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented);
  EXPECT_HAS(st.message(), "no cuda kernel for argmax on i32");
}

// Training state on the device: zeros weights updated by device kernels
// (mul/sub/add), through an alias (identity of another updated weight: the
// copy must use its value from before the run) and through the host
// fallback (argmax of an i32 tensor, written into an i64 state), three runs,
// against the CPU executor.
TEST(CudaDevice, WeightUpdatesMatchCpuExecutor) {
  NEED_DEVICES(1);
  ProgramBuilder b;
  const int g = b.Input("g", DType::kF32, {4, 8});
  const int w = b.ZerosWeight("w", DType::kF32, {4, 8}, {0, 0}, {4, 8});
  const int m = b.ZerosWeight("m", DType::kF32, {4, 8}, {0, 0}, {4, 8});
  const int prev = b.ZerosWeight("prev", DType::kF32, {4, 8}, {0, 0}, {4, 8});
  const int half = b.Constant(*Tensor::FromVector<float>({}, {0.5f}));
  const int step = b.Apply("mul", {g, half}, DType::kF32, {4, 8});
  b.SetUpdate(w, b.Apply("sub", {w, step}, DType::kF32, {4, 8}));
  const int sm = b.Apply("softmax", {g}, DType::kF32, {4, 8}, {{"axis", AttrInt(1)}});
  b.SetUpdate(m, b.Apply("add", {m, sm}, DType::kF32, {4, 8}));
  const int pick = b.ZerosWeight("pick", DType::kI64, {4}, {0}, {4});
  const int gi = b.Apply("cast", {b.Apply("mul", {g, b.Constant(*Tensor::FromVector<float>({}, {8.f}))}, DType::kF32, {4, 8})}, DType::kI32, {4, 8});
  b.SetUpdate(pick, b.Apply("argmax", {gi}, DType::kI64, {4}, {{"axis", AttrInt(1)}, {"keepdims", AttrInt(0)}}));
  b.SetUpdate(prev, b.Apply("identity", {w}, DType::kF32, {4, 8}));
  b.Output("w", w);
  auto program = Make(b);
  std::unique_ptr<Executor> cpu;
  ASSERT_TRUE(Executor::Create(program, nullptr, ExecutorOptions(), &cpu).ok());
  std::unique_ptr<Executor> gpu;
  Status st = Executor::Create(program, nullptr, OnGpu(), &gpu);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (int k = 0; k < 3; ++k) {
    std::vector<Tensor> want, got;
    const Tensor x = Random({4, 8}, 20 + k);
    ASSERT_TRUE(cpu->Run({x}, &want).ok());
    st = gpu->Run({x}, &got);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ExpectF32(got[0], {4, 8}, Vec<float>(want[0]), 1e-5f);
    std::vector<PersistentTensor> cs, gs;
    ASSERT_TRUE(cpu->ReadPersistent(&cs).ok());
    st = gpu->ReadPersistent(&gs);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(gs.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(gs[i].weight->name(), cs[i].weight->name());
      if (cs[i].value.dtype() == DType::kI64) {
        EXPECT_TRUE(gs[i].value.Equals(cs[i].value)) << gs[i].weight->name();
      } else {
        ExpectF32(gs[i].value, {4, 8}, Vec<float>(cs[i].value), 1e-5f);
      }
    }
  }
}

// A checkpoint's state uploaded into the device weights
// (Executor::WritePersistent): the next run starts from it, as the CPU
// executor's does; a wrong type is refused.
TEST(CudaDevice, WritePersistentMatchesCpuExecutor) {
  NEED_DEVICES(1);
  ProgramBuilder b;
  const int g = b.Input("g", DType::kF32, {4, 8});
  const int w = b.ZerosWeight("w", DType::kF32, {4, 8}, {0, 0}, {4, 8});
  b.SetUpdate(w, b.Apply("add", {w, g}, DType::kF32, {4, 8}));
  b.Output("w", w);
  auto program = Make(b);
  std::unique_ptr<Executor> cpu;
  ASSERT_TRUE(Executor::Create(program, nullptr, ExecutorOptions(), &cpu).ok());
  std::unique_ptr<Executor> gpu;
  Status st = Executor::Create(program, nullptr, OnGpu(), &gpu);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::vector<PersistentTensor> state;
  ASSERT_TRUE(cpu->ReadPersistent(&state).ok());
  state[0].value = Random({4, 8}, 30);
  ASSERT_TRUE(cpu->WritePersistent(state).ok());
  st = gpu->WritePersistent(state);
  ASSERT_TRUE(st.ok()) << st.ToString();
  const Tensor x = Random({4, 8}, 31);
  std::vector<Tensor> want, got;
  ASSERT_TRUE(cpu->Run({x}, &want).ok());
  st = gpu->Run({x}, &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectF32(got[0], {4, 8}, Vec<float>(want[0]), 0);
  std::vector<PersistentTensor> cs, gs;
  ASSERT_TRUE(cpu->ReadPersistent(&cs).ok());
  ASSERT_TRUE(gpu->ReadPersistent(&gs).ok());
  ExpectF32(gs[0].value, {4, 8}, Vec<float>(cs[0].value), 1e-6f);
  state[0].value = Random({8, 4}, 32);
  st = gpu->WritePersistent(state);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

// ---- nccl --------------------------------------------------------------------------

// Runs fn(rank, nccl communicator) on n threads, one GPU each.
std::vector<Status> RunNccl(int n, const std::function<Status(int, Communicator*)>& fn) {
  NcclId id;
  Status st = NewNcclId(&id);
  if (!st.ok()) return std::vector<Status>(static_cast<size_t>(n), st);
  std::vector<Status> out(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      NcclCommOptions o;
      o.device = r;
      o.timeout = std::chrono::seconds(60);
      std::unique_ptr<Communicator> c;
      out[r] = CreateNcclCommunicator(id, r, n, o, &c);
      if (out[r].ok()) out[r] = fn(r, c.get());
      if (!out[r].ok() && c) c->Abort(out[r]);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

TEST(Nccl, TwoRankAllReduceOnDeviceBuffers) {
  NEED_DEVICES(2);
  const int64_t count = 1 << 20;
  auto st = RunNccl(2, [&](int r, Communicator* c) -> Status {
    std::vector<float> h(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) h[i] = static_cast<float>(r + 1 + i % 7);
    void* d = nullptr;
    if (cudaSetDevice(r) != cudaSuccess || cudaMalloc(&d, count * 4) != cudaSuccess) {
      return InternalError("cudaMalloc");
    }
    cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice);
    Status s = c->AllReduce({0, 1}, d, d, count, DType::kF32, ReduceOp::kSum);
    cudaMemcpy(h.data(), d, count * 4, cudaMemcpyDeviceToHost);
    cudaFree(d);
    DISTRT_RETURN_IF_ERROR(s);
    for (int64_t i = 0; i < count; ++i) {
      if (h[i] != static_cast<float>(3 + 2 * (i % 7)))
        return InternalError("element ", i, " is ", h[i]);
    }
    return OkStatus();
  });
  for (const Status& s : st) EXPECT_TRUE(s.ok()) << s.ToString();
}

// x [4, 6] -> fc1 [6, 8] column-parallel -> gelu -> fc2 [8, 6] row-parallel
// -> all_reduce, as two rank programs.
std::vector<std::shared_ptr<const Program>> MegatronMlp(const Tensor& w1, const Tensor& w2) {
  std::vector<std::shared_ptr<const Program>> progs;
  for (int r = 0; r < 2; ++r) {
    ProgramBuilder b(r, 2);
    Tensor w1r, w2r;
    EXPECT_TRUE(Tensor::Allocate(DType::kF32, {6, 4}, &w1r).ok());
    EXPECT_TRUE(Tensor::Allocate(DType::kF32, {4, 6}, &w2r).ok());
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 4; ++j)
        w1r.data<float>()[i * 4 + j] = w1.data<float>()[i * 8 + r * 4 + j];
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 6; ++j)
        w2r.data<float>()[i * 6 + j] = w2.data<float>()[(r * 4 + i) * 6 + j];
    int in = b.Input("x", DType::kF32, {4, 6});
    int h = b.Apply("matmul", {in, b.Constant(w1r)}, DType::kF32, {4, 4});
    int g = b.Apply("gelu", {h}, DType::kF32, {4, 4});
    int p = b.Apply("matmul", {g, b.Constant(w2r)}, DType::kF32, {4, 6});
    int y =
        b.Apply("all_reduce", {p}, DType::kF32, {4, 6}, {{"reduction", AttrString("sum")}}, {0, 1});
    b.Output("y", y);
    progs.push_back(Make(b));
  }
  return progs;
}

void ExpectSameOutputs(const std::vector<std::vector<Tensor>>& got,
                       const std::vector<std::vector<Tensor>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    std::vector<float> g = got[r][0].ToVector<float>(), w = want[r][0].ToVector<float>();
    ASSERT_EQ(g.size(), w.size());
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-4f * (1 + std::fabs(w[i])));
  }
}

// Two ranks on one GPU (each its own device object and stream) on the
// local communicator: collectives staged through the host, as
// `--backend local --device cuda` runs multi-rank programs on one GPU.
TEST(CudaDevice, TwoRanksShareOneGpuWithHostStagedCollectives) {
  NEED_DEVICES(1);
  Tensor w1 = Random({6, 8}, 7), w2 = Random({8, 6}, 8), x = Random({4, 6}, 9);
  auto progs = MegatronMlp(w1, w2);
  std::vector<std::vector<Tensor>> want, got;
  ASSERT_TRUE(RunLocal(progs, {{x}, {x}}, &want).ok());
  LocalRunOptions options;
  options.devices = {Gpu(0), Gpu(0)};
  options.allow_host_fallback = false;
  std::vector<RunStats> stats;
  Status st = RunLocal(progs, {{x}, {x}}, &got, options, &stats);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ExpectSameOutputs(got, want);
  for (const RunStats& s : stats) EXPECT_EQ(s.host_instructions, 0);
}

// The nccl communicator's Start from an executor: a one-rank world, so one
// GPU runs it; the all-reduce is queued on the communicator's stream behind
// the matmul and the gelu after it waits on an event.
TEST(Nccl, OneRankAllReduceQueuedFromTheExecutor) {
  NEED_DEVICES(1);
  ProgramBuilder b(0, 1);
  int x = b.Input("x", DType::kF32, {64, 32});
  int w = b.Input("w", DType::kF32, {32, 48});
  int h = b.Apply("matmul", {x, w}, DType::kF32, {64, 48});
  int s = b.Apply("all_reduce", {h}, DType::kF32, {64, 48}, {{"reduction", AttrString("avg")}},
                  {0});
  b.Output("y", b.Apply("gelu", {s}, DType::kF32, {64, 48}));
  auto program = Make(b);
  const std::vector<Tensor> in = {Random({64, 32}, 40), Random({32, 48}, 41)};
  std::vector<std::vector<Tensor>> want;
  ASSERT_TRUE(RunLocal({program}, {in}, &want).ok());
  std::vector<std::vector<Tensor>> got(1);
  auto st = RunNccl(1, [&](int r, Communicator* c) -> Status {
    std::unique_ptr<Executor> e;
    ExecutorOptions o = OnGpu(0);
    o.allow_host_fallback = false;
    DISTRT_RETURN_IF_ERROR(Executor::Create(program, c, o, &e));
    for (int k = 0; k < 3; ++k) DISTRT_RETURN_IF_ERROR(e->Run(in, &got[0]));
    return OkStatus();
  });
  ASSERT_TRUE(st[0].ok()) << st[0].ToString();
  ExpectSameOutputs(got, want);
}

TEST(Nccl, TwoRankMegatronMlpMatchesLocal) {
  NEED_DEVICES(2);
  Tensor w1 = Random({6, 8}, 7), w2 = Random({8, 6}, 8), x = Random({4, 6}, 9);
  auto progs = MegatronMlp(w1, w2);
  std::vector<std::vector<Tensor>> want;
  ASSERT_TRUE(RunLocal(progs, {{x}, {x}}, &want).ok());
  std::vector<std::vector<Tensor>> got(2);
  std::vector<std::vector<std::string>> place(2);
  auto st = RunNccl(2, [&](int r, Communicator* c) -> Status {
    std::unique_ptr<Executor> e;
    DISTRT_RETURN_IF_ERROR(Executor::Create(progs[r], c, OnGpu(r), &e));
    place[r] = e->Placement();
    return e->Run({x}, &got[r]);
  });
  for (const Status& s : st) ASSERT_TRUE(s.ok()) << s.ToString();
  for (int r = 0; r < 2; ++r) {
    const std::string gpu = StrCat("cuda:", r);
    EXPECT_EQ(place[r], (std::vector<std::string>(4, gpu)));
  }
  ExpectSameOutputs(got, want);
}

// The conformance suite's harness: n threads, one GPU each, each with a
// nccl communicator seen through the host-staging adapter.
class NcclHarness : public CommHarness {
 public:
  std::string name() const override { return "nccl"; }
  int max_ranks() const override { return CudaDeviceCount(); }
  bool Available(std::string* why) const override { return CudaDeviceCount(why) > 0; }
  std::vector<Status> Run(int n, const RankFn& fn) override {
    return RunNccl(n, [&](int r, Communicator* c) -> Status {
      std::unique_ptr<Communicator> host;
      DISTRT_RETURN_IF_ERROR(NewHostStagingCommunicator(c, &host));
      return fn(r, host.get());
    });
  }
};

const bool registered = [] {
  RegisterHarness(std::unique_ptr<CommHarness>(new NcclHarness()));
  return true;
}();

}  // namespace
}  // namespace testing
}  // namespace distrt

#define DISTRT_CONFORMANCE_BACKENDS "nccl"
#include "comm_conformance.inc"
