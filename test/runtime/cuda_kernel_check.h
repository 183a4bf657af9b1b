// Helpers for the CUDA kernel tests (cuda_reduce_test, cuda_norm_test,
// cuda_optimizer_test): a program run on the host executor and on GPU 0
// with the host fallback off (a missing device kernel is an error), outputs
// compared, every instruction placed on the GPU. Without a GPU the tests
// skip ("skipped: ...").
#ifndef DISTRT_TEST_CUDA_KERNEL_CHECK_H_
#define DISTRT_TEST_CUDA_KERNEL_CHECK_H_

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "distrt/cuda.h"
#include "test_util.h"

namespace distrt {
namespace testing {

#define NEED_GPU()                                                        \
  do {                                                                    \
    std::string why_;                                                     \
    if (CudaDeviceCount(&why_) == 0) GTEST_SKIP() << "skipped: " << why_; \
  } while (0)

inline std::shared_ptr<const Program> MakeProgram(const ProgramBuilder& b) {
  std::shared_ptr<const Program> p;
  Status st = Program::Create(b.Build(), "rank-0.pb", ".", &p);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return p;
}

// GPU 0 with the host fallback off.
inline ExecutorOptions StrictGpu() {
  ExecutorOptions o;
  Status st = OpenCudaDevice(0, &o.device);
  EXPECT_TRUE(st.ok()) << st.ToString();
  o.allow_host_fallback = false;
  return o;
}

// Runs `program` on GPU 0 (strict); expects every instruction there.
inline std::vector<Tensor> RunOnGpu(std::shared_ptr<const Program> program,
                                    const std::vector<Tensor>& inputs) {
  std::unique_ptr<Executor> gpu;
  Status st = Executor::Create(program, nullptr, StrictGpu(), &gpu);
  EXPECT_TRUE(st.ok()) << st.ToString();
  if (!st.ok()) return {};
  for (const std::string& where : gpu->Placement()) EXPECT_EQ(where, "cuda:0");
  std::vector<Tensor> out;
  st = gpu->Run(inputs, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

inline std::vector<Tensor> RunOnCpu(std::shared_ptr<const Program> program,
                                    const std::vector<Tensor>& inputs) {
  std::unique_ptr<Executor> cpu;
  Status st = Executor::Create(program, nullptr, ExecutorOptions(), &cpu);
  EXPECT_TRUE(st.ok()) << st.ToString();
  std::vector<Tensor> out;
  if (st.ok()) st = cpu->Run(inputs, &out);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return out;
}

// want and got agree: NaN where want is NaN, equal infinities, else within
// tol * (1 + |want|).
inline void ExpectValuesClose(const std::vector<double>& got, const std::vector<double>& want,
                              double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t k = 0; k < got.size() && bad < 10; ++k) {
    bool ok;
    if (std::isnan(want[k]))
      ok = std::isnan(got[k]);
    else if (std::isinf(want[k]))
      ok = got[k] == want[k];
    else
      ok = std::fabs(got[k] - want[k]) <= tol * (1 + std::fabs(want[k]));
    if (!ok) {
      ++bad;
      ADD_FAILURE() << what << " element " << k << ": got " << got[k] << ", want " << want[k];
    }
  }
}

// A float tensor's values as doubles (f32, f64, bf16, f16).
inline std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> out;
  switch (t.dtype()) {
    case DType::kF32:
      for (float v : t.ToVector<float>()) out.push_back(v);
      break;
    case DType::kF64:
      out = t.ToVector<double>();
      break;
    case DType::kBF16:
      for (bf16_t v : t.ToVector<bf16_t>()) out.push_back(BF16ToFloat(v.bits));
      break;
    case DType::kF16:
      for (f16_t v : t.ToVector<f16_t>()) out.push_back(HalfToFloat(v.bits));
      break;
    default:
      ADD_FAILURE() << "not a float tensor: " << t.type().ToString();
  }
  return out;
}

// The program on the host and strictly on GPU 0: float outputs within tol,
// others (argmax's i64) equal.
inline void ExpectGpuMatchesCpu(std::shared_ptr<const Program> program,
                                const std::vector<Tensor>& inputs, double tol) {
  const std::vector<Tensor> want = RunOnCpu(program, inputs);
  const std::vector<Tensor> got = RunOnGpu(program, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string what = "output " + std::to_string(i);
    ASSERT_EQ(got[i].type(), want[i].type()) << what;
    if (IsFloat(want[i].dtype()))
      ExpectValuesClose(AsDoubles(got[i]), AsDoubles(want[i]), tol, what);
    else
      EXPECT_TRUE(got[i].Equals(want[i])) << what;
  }
}

// Values of [-1, 1) as `dtype` (rounded for bf16/f16) and the same values
// as f32: a 16-bit program on the GPU is checked against the f32 one on
// the host.
inline Tensor RandomOf(DType dtype, const Shape& shape, uint32_t seed, float scale = 1.0f,
                       Tensor* as_f32 = nullptr) {
  std::vector<float> v = RandomUniform<float>(NumElements(shape), seed);
  for (float& x : v) x *= scale;
  Tensor t;
  if (dtype == DType::kBF16 || dtype == DType::kF16) {
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      bits[i] = dtype == DType::kBF16 ? FloatToBF16(v[i]) : FloatToHalf(v[i]);
      v[i] = dtype == DType::kBF16 ? BF16ToFloat(bits[i]) : HalfToFloat(bits[i]);
    }
    if (dtype == DType::kBF16) {
      std::vector<bf16_t> b(v.size());
      for (size_t i = 0; i < v.size(); ++i) b[i].bits = bits[i];
      t = Make<bf16_t>(shape, b);
    } else {
      std::vector<f16_t> h(v.size());
      for (size_t i = 0; i < v.size(); ++i) h[i].bits = bits[i];
      t = Make<f16_t>(shape, h);
    }
  } else if (dtype == DType::kF64) {
    t = Make<double>(shape, std::vector<double>(v.begin(), v.end()));
  } else {
    t = Make<float>(shape, v);
  }
  if (as_f32) *as_f32 = Make<float>(shape, v);
  return t;
}

}  // namespace testing
}  // namespace distrt

#endif  // DISTRT_TEST_CUDA_KERNEL_CHECK_H_
