// Helpers for distrt tests: run a single kernel, build tensors, temp dirs.
#ifndef DISTRT_TEST_TEST_UTIL_H_
#define DISTRT_TEST_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "distrt/distrt.h"
#include "expect_has.h"

namespace distrt {
namespace testing {

using Attrs = std::initializer_list<std::pair<const std::string, proto::Attribute>>;

// Runs one instruction `op` on `inputs` with declared output types, on an
// executor of `threads` intra-op threads; returns the kernel's status
// (validation errors included).
Status RunOp(const std::string& op, const std::vector<Tensor>& inputs,
             const std::vector<TensorType>& out_types, Attrs attrs,
             std::vector<Tensor>* outputs, int threads = 1);
// Single-output convenience; fails the test on error.
Tensor Run1(const std::string& op, const std::vector<Tensor>& inputs,
                const TensorType& out_type, Attrs attrs = {}, int threads = 1);

template <typename T>
Tensor Make(const Shape& shape, const std::vector<T>& values) {
  auto t = Tensor::FromVector<T>(shape, values);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : Tensor();
}
inline Tensor F32(const Shape& shape, const std::vector<float>& v) {
  return Make<float>(shape, v);
}
inline Tensor I64(const Shape& shape, const std::vector<int64_t>& v) {
  return Make<int64_t>(shape, v);
}
inline Tensor I32(const Shape& shape, const std::vector<int32_t>& v) {
  return Make<int32_t>(shape, v);
}
inline Tensor F64(const Shape& shape, const std::vector<double>& v) {
  return Make<double>(shape, v);
}
Tensor Bool(const Shape& shape, const std::vector<int>& v);
// n values drawn uniformly from [-1, 1) by a seeded generator (float or
// double).
template <typename T>
std::vector<T> RandomUniform(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<T> dist(T(-1), T(1));
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = dist(gen);
  return v;
}
// 0, 1, 2, ... as float (scaled).
Tensor Iota(const Shape& shape, float scale = 1.0f, float offset = 0.0f);

template <typename T>
std::vector<T> Vec(const Tensor& t) {
  return t.ToVector<T>();
}

// Expects t to be f32 with `shape` and values within tol (relative + absolute).
void ExpectF32(const Tensor& t, const Shape& shape, const std::vector<float>& expected,
               float tol = 1e-5f);

// A fresh temporary directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes raw bytes to a file.
void WriteFile(const std::string& path, const void* data, size_t bytes);

}  // namespace testing
}  // namespace distrt

#endif  // DISTRT_TEST_TEST_UTIL_H_
