// The CUDA kernels for the ops MoE and ring attention used to run on the
// host (cuda/kernels_cumsum.cpp, kernels_top_k.cpp, kernels_elements.cpp,
// kernels_einsum.cpp) against the host executor, every instruction on
// cuda:0 (host fallback off): cumsum's modes, top_k with ties and NaN,
// gather_elements / scatter_elements (duplicates: the last wins; "add"),
// one_hot, and einsum on a MoE layer's equations (GEMM plan) and on a
// diagonal (general contraction); 16-bit floats within rounding; the
// refused cases run on the host. Skipped without a GPU.
#include <gtest/gtest.h>

#include "cuda_kernel_test_util.h"

namespace distrt {
namespace testing {
namespace {

TEST(CudaMoeOps, CumSumEveryModeMatchesCpu) {
  NEED_GPU();
  for (DType dt : {DType::kF32, DType::kBF16, DType::kI64, DType::kI32}) {
    SCOPED_TRACE(DTypeName(dt));
    ProgramBuilder b;
    const int x = b.Input("x", dt, {64, 8});
    b.Output("a0", b.Apply("cumsum", {x}, dt, {64, 8}));
    b.Output("a1", b.Apply("cumsum", {x}, dt, {64, 8},
                           {{"axis", AttrInt(-1)}, {"exclusive", AttrInt(1)}}));
    b.Output("a2", b.Apply("cumsum", {x}, dt, {64, 8},
                           {{"axis", AttrInt(0)}, {"reverse", AttrInt(1)}, {"exclusive", AttrInt(1)}}));
    CompareWithCpu(MakeProgram(b), {RandomOf(dt, {64, 8}, 91)});  // same order of additions
  }
}

TEST(CudaMoeOps, TopKTiesAndNanMatchCpu) {
  NEED_GPU();
  // Rows longer than a warp, with ties and NaN.
  Tensor x = RandomOf(DType::kF32, {40, 70}, 92);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    float& v = x.data<float>()[i];
    v = std::round(v);
    if (i % 13 == 0) v = NAN;
  }
  for (DType dt : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dt));
    ProgramBuilder b;
    const int in = b.Input("x", dt, {40, 70});
    b.Output("top", b.Apply("top_k", {in}, DType::kI64, {40, 8}, {{"k", AttrInt(8)}}));
    b.Output("low", b.Apply("top_k", {in}, DType::kI64, {40, 3},
                            {{"k", AttrInt(3)}, {"smallest", AttrInt(1)}}));
    b.Output("axis0", b.Apply("top_k", {in}, DType::kI64, {2, 70},
                              {{"k", AttrInt(2)}, {"axis", AttrInt(0)}}));
    CompareWithCpu(MakeProgram(b), {dt == DType::kF32 ? x : FromF32(x, dt)});
  }
}

TEST(CudaMoeOps, GatherScatterElementsAndOneHotMatchCpu) {
  NEED_GPU();
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 6 * 9; ++i) ids.push_back((i * 7) % 10 - 5);  // [-5, 5), duplicates
  const Tensor idx = I64({6, 9}, ids);
  for (DType dt : {DType::kF32, DType::kI64}) {
    SCOPED_TRACE(DTypeName(dt));
    ProgramBuilder b;
    const int data = b.Input("data", dt, {6, 5});
    const int i = b.Input("idx", DType::kI64, {6, 9});
    const int upd = b.Input("upd", dt, {6, 9});
    b.Output("g", b.Apply("gather_elements", {data, i}, dt, {6, 9}, {{"axis", AttrInt(1)}}));
    b.Output("s", b.Apply("scatter_elements", {data, i, upd}, dt, {6, 5}, {{"axis", AttrInt(1)}}));
    b.Output("sa", b.Apply("scatter_elements", {data, i, upd}, dt, {6, 5},
                           {{"axis", AttrInt(1)}, {"reduction", AttrString("add")}}));
    const int values = b.Input("values", dt, {2});
    b.Output("oh", b.Apply("one_hot", {i, values}, dt, {6, 5, 9},
                           {{"depth", AttrInt(5)}, {"axis", AttrInt(1)}}));
    CompareWithCpu(MakeProgram(b),
                   {RandomOf(dt, {6, 5}, 93), idx, RandomOf(dt, {6, 9}, 94), RandomOf(dt, {2}, 95)},
                   1e-5);
  }
}

TEST(CudaMoeOps, EinsumMoeEquationsMatchCpu) {
  NEED_GPU();
  const int64_t t = 32, e = 4, c = 8, d = 16, f = 24;
  for (DType dt : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(DTypeName(dt));
    ProgramBuilder b;
    const int disp = b.Input("dispatch", dt, {t, e, c});
    const int x = b.Input("x", dt, {t, d});
    const int w = b.Input("w", dt, {e, d, f});
    const int sq = b.Input("sq", dt, {d, d});
    const int ein = b.Apply("einsum", {disp, x}, dt, {e, c, d}, {{"equation", AttrString("tec,td->ecd")}});
    const int h = b.Apply("einsum", {ein, w}, dt, {e, c, f}, {{"equation", AttrString("ecd,edf->ecf")}});
    b.Output("h", h);
    b.Output("y", b.Apply("einsum", {disp, ein}, dt, {t, d}, {{"equation", AttrString("tec,ecd->td")}}));
    b.Output("dw", b.Apply("einsum", {ein, h}, dt, {e, d, f}, {{"equation", AttrString("ecd,ecf->edf")}}));
    b.Output("ddisp", b.Apply("einsum", {ein, x}, dt, {t, e, c}, {{"equation", AttrString("ecd,td->tec")}}));
    b.Output("diag", b.Apply("einsum", {sq}, dt, {d}, {{"equation", AttrString("ii->i")}}));
    // TF32 is off by default: f32 GEMMs agree with the host's closely.
    CompareWithCpu(MakeProgram(b),
                   {RandomOf(dt, {t, e, c}, 96, 1.0), RandomOf(dt, {t, d}, 97, 1.0),
                    RandomOf(dt, {e, d, f}, 98, 1.0), RandomOf(dt, {d, d}, 99, 1.0)},
                   dt == DType::kF32 ? 1e-4 : 5e-2);
  }
}

TEST(CudaMoeOps, RefusedCasesRunOnTheHost) {
  NEED_GPU();
  ProgramBuilder b;
  const int x = b.Input("x", DType::kF32, {4, 100});
  b.Output("big_k", b.Apply("top_k", {x}, DType::kI64, {4, 100}, {{"k", AttrInt(100)}}));
  const int i = b.Input("i", DType::kI64, {4, 3});
  const int u = b.Input("u", DType::kF32, {4, 3});
  b.Output("max", b.Apply("scatter_elements", {x, i, u}, DType::kF32, {4, 100},
                          {{"axis", AttrInt(1)}, {"reduction", AttrString("max")}}));
  auto program = MakeProgram(b);
  const std::vector<Tensor> inputs = {RandomOf(DType::kF32, {4, 100}, 100),
                                      I64({4, 3}, {0, 5, 5, 1, 2, 3, 99, -1, 7, 8, 8, 8}),
                                      RandomOf(DType::kF32, {4, 3}, 101)};
  std::vector<Tensor> want, got;
  ASSERT_TRUE(RunOnCpu(program, inputs, &want).ok());
  std::unique_ptr<Executor> gpu;
  ASSERT_TRUE(GpuExecutor(program, /*strict=*/false, &gpu).ok());
  Status st = gpu->Run(inputs, &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  for (size_t k = 0; k < got.size(); ++k) EXPECT_TRUE(got[k].Equals(want[k])) << "output " << k;
  const std::vector<std::string> place = gpu->Placement();
  ASSERT_EQ(place.size(), 2u);
  for (const std::string& p : place) EXPECT_NE(p, "cuda:0");
}

}  // namespace
}  // namespace testing
}  // namespace distrt
