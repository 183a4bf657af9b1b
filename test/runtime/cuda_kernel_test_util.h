// Helpers for the GPU tests of the CUDA kernel families
// (cuda_{logic,arith,cast,layout,index}_test.cpp): programs run by the
// Executor on GPU 0 with the host fallback off (a missing or refusing
// kernel fails), compared with the host executor. Every test starts with
// NEED_GPU(), which skips it where there is no CUDA device.
#ifndef DISTRT_TEST_CUDA_KERNEL_TEST_UTIL_H_
#define DISTRT_TEST_CUDA_KERNEL_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>

#include "distrt/cuda.h"
#include "kernel_util.h"  // CastBuffer
#include "portable_test_util.h"

namespace distrt {
namespace testing {

#define NEED_GPU()                                            \
  do {                                                        \
    std::string why_;                                         \
    if (CudaDeviceCount(&why_) == 0) GTEST_SKIP() << "skipped: " << why_; \
  } while (0)

inline std::shared_ptr<const Program> MakeProgram(const ProgramBuilder& b) {
  std::shared_ptr<const Program> p;
  Status st = Program::Create(b.Build(), "<cuda test>", ".", &p);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return p;
}

// An executor on GPU 0; with `strict`, the host fallback is off.
inline Status GpuExecutor(std::shared_ptr<const Program> program, bool strict,
                          std::unique_ptr<Executor>* exec) {
  ExecutorOptions o;
  Status st = OpenCudaDevice(0, &o.device);
  if (!st.ok()) return st;
  o.allow_host_fallback = !strict;
  return Executor::Create(program, nullptr, o, exec);
}

inline Status RunOnCpu(std::shared_ptr<const Program> program, const std::vector<Tensor>& inputs,
                       std::vector<Tensor>* outputs) {
  std::unique_ptr<Executor> cpu;
  DISTRT_RETURN_IF_ERROR(Executor::Create(program, nullptr, ExecutorOptions(), &cpu));
  return cpu->Run(inputs, outputs);
}

// Element i of a float tensor (any float dtype) as double.
inline double FloatAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32:
      return t.data<float>()[i];
    case DType::kF64:
      return t.data<double>()[i];
    case DType::kBF16:
      return BF16ToFloat(t.data<bf16_t>()[i].bits);
    case DType::kF16:
      return HalfToFloat(t.data<f16_t>()[i].bits);
    default:
      return NAN;
  }
}

// Float tensors agree within `tol` (relative + absolute; NaN matches any
// NaN, whatever its bits); other dtypes byte for byte.
inline void ExpectClose(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.type(), want.type()) << what;
  if (!IsFloat(want.dtype())) {
    EXPECT_TRUE(got.Equals(want)) << what << "\ngot  " << got.DebugString(64) << "\nwant "
                                  << want.DebugString(64);
    return;
  }
  int bad = 0;
  for (int64_t i = 0; i < want.num_elements() && bad < 10; ++i) {
    const double g = FloatAt(got, i), w = FloatAt(want, i);
    bool ok;
    if (std::isnan(w)) {
      ok = std::isnan(g);
    } else if (std::isinf(w)) {
      ok = g == w;
    } else {
      ok = std::fabs(g - w) <= tol * (1 + std::fabs(w));
    }
    if (!ok) {
      ADD_FAILURE() << what << " element " << i << ": got " << g << ", want " << w;
      ++bad;
    }
  }
}

// Runs `program` on the host executor and on GPU 0 (host fallback off),
// expects equal outputs and every instruction on cuda:0.
inline void CompareWithCpu(std::shared_ptr<const Program> program,
                           const std::vector<Tensor>& inputs, double tol = 0) {
  std::vector<Tensor> want, got;
  Status st = RunOnCpu(program, inputs, &want);
  ASSERT_TRUE(st.ok()) << st.ToString();
  std::unique_ptr<Executor> gpu;
  st = GpuExecutor(program, /*strict=*/true, &gpu);
  ASSERT_TRUE(st.ok()) << st.ToString();
  st = gpu->Run(inputs, &got);
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ExpectClose(got[i], want[i], tol, StrCat("output ", i));
  const std::vector<std::string> place = gpu->Placement();
  for (size_t i = 0; i < place.size(); ++i) EXPECT_EQ(place[i], "cuda:0") << "instruction " << i;
}

// The f32 tensor of a 16-bit float tensor's values, and back (rounded).
inline Tensor ToF32(const Tensor& t) {
  Tensor f = Zeros(DType::kF32, t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) f.data<float>()[i] = static_cast<float>(FloatAt(t, i));
  return f;
}
inline Tensor FromF32(const Tensor& f, DType dt) {
  Tensor t = Zeros(dt, f.shape());
  EXPECT_TRUE(CastBuffer(f.raw(), DType::kF32, t.raw(), dt, f.num_elements()).ok());
  return t;
}

}  // namespace testing
}  // namespace distrt

#endif  // DISTRT_TEST_CUDA_KERNEL_TEST_UTIL_H_
