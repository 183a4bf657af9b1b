// The fused optimizer kernels (adam_update, sgd_update) over several steps,
// their outputs fed back as the next step's states, against the update
// written out in double from the textbook formulas (Kingma & Ba with
// PyTorch's bias-correction placement; Loshchilov & Hutter's decoupled
// decay; SGD with momentum and Nesterov as torch.optim.SGD documents).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "test_util.h"

namespace distrt {
namespace {

using namespace distrt::testing;  // NOLINT

constexpr int64_t kN = 37;  // odd, so no vector width divides it

std::vector<double> Random(uint32_t seed, double lo, double hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(kN);
  for (double& x : v) x = u(gen);
  return v;
}

Tensor FloatTensor(DType dt, const std::vector<double>& v) {
  if (dt == DType::kF64) return F64({kN}, v);
  return F32({kN}, std::vector<float>(v.begin(), v.end()));
}
Tensor Scalar(DType dt, double x) {
  if (dt == DType::kF64) return F64({}, {x});
  return F32({}, {static_cast<float>(x)});
}
std::vector<double> Values(const Tensor& t) {
  if (t.dtype() == DType::kF64) return Vec<double>(t);
  std::vector<float> f = Vec<float>(t);
  return {f.begin(), f.end()};
}
void ExpectClose(const Tensor& got, const std::vector<double>& want, double rtol) {
  std::vector<double> g = Values(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], want[i], rtol * (1.0 + std::fabs(want[i]))) << "element " << i;
}

struct AdamCase {
  bool decoupled;  // AdamW
  double lr, beta1, beta2, eps, weight_decay, clip;
};

// Three steps of Adam/AdamW: the kernel takes the per-step scalars the
// training step computes (lr / (1 - beta1^t), sqrt(1 - beta2^t), the
// decoupled shrink 1 - lr * wd, the clipping coefficient).
void CheckAdam(DType dt, const AdamCase& c) {
  std::vector<double> p = Random(1, -1, 1), m(kN, 0.0), v(kN, 0.0);
  if (dt == DType::kF32)
    for (double& x : p) x = static_cast<float>(x);
  Tensor pt = FloatTensor(dt, p), mt = FloatTensor(dt, m), vt = FloatTensor(dt, v);
  for (int t = 1; t <= 3; ++t) {
    std::vector<double> g = Random(10 + t, -2, 2);
    if (dt == DType::kF32)
      for (double& x : g) x = static_cast<float>(x);
    // Reference.
    const double bc1 = 1 - std::pow(c.beta1, t), bc2 = 1 - std::pow(c.beta2, t);
    for (int64_t i = 0; i < kN; ++i) {
      double gi = g[i] * c.clip;
      if (c.decoupled)
        p[i] *= 1 - c.lr * c.weight_decay;
      else
        gi += c.weight_decay * p[i];
      m[i] = c.beta1 * m[i] + (1 - c.beta1) * gi;
      v[i] = c.beta2 * v[i] + (1 - c.beta2) * gi * gi;
      const double mhat = m[i] / bc1, vhat = v[i] / bc2;
      // PyTorch adds eps to sqrt(v) / sqrt(bc2), i.e. sqrt(vhat).
      p[i] -= c.lr * mhat / (std::sqrt(vhat) + c.eps);
    }
    // Kernel.
    std::vector<Tensor> out;
    Status st = RunOp("adam_update",
                      {pt, FloatTensor(dt, g), mt, vt, Scalar(dt, c.clip),
                       Scalar(dt, c.decoupled ? 1 - c.lr * c.weight_decay : 1.0),
                       Scalar(dt, c.lr / bc1), Scalar(dt, std::sqrt(bc2))},
                      {pt.type(), pt.type(), pt.type()},
                      {{"beta1", AttrFloat(c.beta1)},
                       {"beta2", AttrFloat(c.beta2)},
                       {"eps", AttrFloat(c.eps)},
                       {"weight_decay", AttrFloat(c.decoupled ? 0.0 : c.weight_decay)}},
                      &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(out.size(), 3u);
    const double tol = dt == DType::kF64 ? 1e-12 : 2e-5;
    SCOPED_TRACE("step " + std::to_string(t));
    ExpectClose(out[0], p, tol);
    ExpectClose(out[1], m, tol);
    ExpectClose(out[2], v, tol);
    pt = out[0];
    mt = out[1];
    vt = out[2];
  }
}

TEST(OptimizerKernels, AdamWithL2Decay) {
  for (DType dt : {DType::kF64, DType::kF32})
    CheckAdam(dt, {false, 1e-2, 0.9, 0.999, 1e-8, 0.1, 1.0});
}

TEST(OptimizerKernels, AdamWDecoupledDecayAndClipping) {
  for (DType dt : {DType::kF64, DType::kF32})
    CheckAdam(dt, {true, 3e-3, 0.8, 0.95, 1e-6, 0.05, 0.37});
}

void CheckSgd(DType dt, double lr, double momentum, double wd, bool nesterov, double clip) {
  std::vector<double> p = Random(2, -1, 1), buf(kN, 0.0);
  if (dt == DType::kF32)
    for (double& x : p) x = static_cast<float>(x);
  Tensor pt = FloatTensor(dt, p), bt = FloatTensor(dt, buf);
  for (int t = 1; t <= 3; ++t) {
    std::vector<double> g = Random(20 + t, -2, 2);
    if (dt == DType::kF32)
      for (double& x : g) x = static_cast<float>(x);
    for (int64_t i = 0; i < kN; ++i) {
      double d = g[i] * clip + wd * p[i];
      // torch.optim.SGD starts the buffer at the first gradient.
      buf[i] = t == 1 ? d : momentum * buf[i] + d;
      p[i] -= lr * (nesterov ? d + momentum * buf[i] : buf[i]);
    }
    std::vector<Tensor> out;
    Status st = RunOp("sgd_update", {pt, FloatTensor(dt, g), bt, Scalar(dt, clip), Scalar(dt, lr)},
                      {pt.type(), pt.type()},
                      {{"momentum", AttrFloat(momentum)},
                       {"weight_decay", AttrFloat(wd)},
                       {"nesterov", AttrInt(nesterov ? 1 : 0)}},
                      &out);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_EQ(out.size(), 2u);
    const double tol = dt == DType::kF64 ? 1e-12 : 2e-5;
    SCOPED_TRACE("step " + std::to_string(t));
    ExpectClose(out[0], p, tol);
    ExpectClose(out[1], buf, tol);
    pt = out[0];
    bt = out[1];
  }
}

TEST(OptimizerKernels, SgdMomentumWithDecay) {
  for (DType dt : {DType::kF64, DType::kF32}) CheckSgd(dt, 0.05, 0.9, 0.01, false, 1.0);
}

TEST(OptimizerKernels, SgdNesterovClipped) {
  for (DType dt : {DType::kF64, DType::kF32}) CheckSgd(dt, 0.1, 0.7, 0.0, true, 0.5);
}

TEST(OptimizerKernels, MismatchedStateIsRejected) {
  std::vector<Tensor> out;
  Tensor p = F32({4}, {1, 2, 3, 4}), s = F32({}, {1});
  Status st = RunOp(
      "sgd_update", {p, F32({3}, {1, 2, 3}), p, s, s}, {p.type(), p.type()},
      {{"momentum", AttrFloat(0.9)}, {"weight_decay", AttrFloat(0.0)}, {"nesterov", AttrInt(0)}},
      &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("operand 1 is f32[3], expected f32[4]"), std::string::npos)
      << st.ToString();
  st = RunOp(
      "sgd_update", {p, p, p, F32({1}, {1}), s}, {p.type(), p.type()},
      {{"momentum", AttrFloat(0.9)}, {"weight_decay", AttrFloat(0.0)}, {"nesterov", AttrInt(0)}},
      &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.ToString().find("expected a f32 scalar"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace distrt
