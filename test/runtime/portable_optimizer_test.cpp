// The CUDA optimizer update bodies (portable/optimizer.h), run on the host
// with HostFor over several steps, updating the parameter and states in
// place (outputs are the inputs' buffers, as the executor's
// updates_in_place arranges), against the host kernels run on copies.
#include <gtest/gtest.h>

#include "portable/host_launch.h"
#include "portable/optimizer.h"
#include "test_util.h"

namespace distrt {
namespace testing {
namespace {

using portable::HostFor;

constexpr int64_t kN = 203;

template <typename T>
Tensor Of(const Shape& s, const std::vector<T>& v) {
  return Make<T>(s, v);
}

template <typename T>
void ExpectClose(const std::vector<T>& got, const Tensor& want, double tol) {
  const std::vector<T> w = Vec<T>(want);
  ASSERT_EQ(got.size(), w.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], w[i], tol * (1 + std::fabs(w[i]))) << "element " << i;
}

struct AdamCase {
  double lr, beta1, beta2, eps, weight_decay, clip;
  bool decoupled;
};

template <typename T>
void CheckAdam(const AdamCase& c, double tol) {
  const std::vector<float> p0 = RandomUniform<float>(kN, 73);
  std::vector<T> p(p0.begin(), p0.end()), m(kN, T(0)), v(kN, T(0));
  Tensor pt = Of<T>({kN}, p), mt = Of<T>({kN}, m), vt = Of<T>({kN}, v);
  for (int t = 1; t <= 4; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    const std::vector<float> gf = RandomUniform<float>(kN, 80 + t);
    std::vector<T> g(gf.begin(), gf.end());
    g[3] = T(0);
    const T grad_scale = static_cast<T>(c.clip);
    const T param_scale = static_cast<T>(c.decoupled ? 1 - c.lr * c.weight_decay : 1.0);
    const T step = static_cast<T>(c.lr / (1 - std::pow(c.beta1, t)));
    const T bc2 = static_cast<T>(std::sqrt(1 - std::pow(c.beta2, t)));
    const double wd = c.decoupled ? 0.0 : c.weight_decay;
    std::vector<Tensor> want;
    Status st = RunOp("adam_update",
                      {pt, Of<T>({kN}, g), mt, vt, Of<T>({}, {grad_scale}),
                       Of<T>({}, {param_scale}), Of<T>({}, {step}), Of<T>({}, {bc2})},
                      {pt.type(), pt.type(), pt.type()},
                      {{"beta1", AttrFloat(c.beta1)},
                       {"beta2", AttrFloat(c.beta2)},
                       {"eps", AttrFloat(c.eps)},
                       {"weight_decay", AttrFloat(wd)}},
                      &want);
    ASSERT_TRUE(st.ok()) << st.ToString();
    // In place: p, m, v are read and written through the same pointers.
    HostFor(kN, portable::AdamBody<T>{p.data(), g.data(), m.data(), v.data(), p.data(), m.data(),
                                      v.data(), &grad_scale, &param_scale, &step, &bc2,
                                      static_cast<T>(c.beta1), static_cast<T>(1.0 - c.beta1),
                                      static_cast<T>(c.beta2), static_cast<T>(1.0 - c.beta2),
                                      static_cast<T>(c.eps), static_cast<T>(wd), wd != 0});
    ExpectClose(p, want[0], tol);
    ExpectClose(m, want[1], tol);
    ExpectClose(v, want[2], tol);
    pt = want[0];
    mt = want[1];
    vt = want[2];
  }
}

TEST(PortableOptimizer, AdamInPlaceMatchesHostKernel) {
  const AdamCase l2 = {1e-2, 0.9, 0.999, 1e-8, 0.1, 1.0, false};
  const AdamCase adamw = {3e-3, 0.8, 0.95, 1e-6, 0.05, 0.37, true};
  for (const AdamCase& c : {l2, adamw}) {
    CheckAdam<float>(c, 1e-6);
    CheckAdam<double>(c, 1e-14);
  }
}

template <typename T>
void CheckSgd(double momentum, double wd, bool nesterov, double clip, double tol) {
  const std::vector<float> p0 = RandomUniform<float>(kN, 89);
  std::vector<T> p(p0.begin(), p0.end()), buf(kN, T(0));
  Tensor pt = Of<T>({kN}, p), bt = Of<T>({kN}, buf);
  for (int t = 1; t <= 3; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    const std::vector<float> gf = RandomUniform<float>(kN, 90 + t);
    std::vector<T> g(gf.begin(), gf.end());
    const T grad_scale = static_cast<T>(clip), lr = static_cast<T>(0.05);
    std::vector<Tensor> want;
    Status st =
        RunOp("sgd_update", {pt, Of<T>({kN}, g), bt, Of<T>({}, {grad_scale}), Of<T>({}, {lr})},
              {pt.type(), pt.type()},
              {{"momentum", AttrFloat(momentum)},
               {"weight_decay", AttrFloat(wd)},
               {"nesterov", AttrInt(nesterov ? 1 : 0)}},
              &want);
    ASSERT_TRUE(st.ok()) << st.ToString();
    HostFor(kN, portable::SgdBody<T>{p.data(), g.data(), buf.data(), p.data(), buf.data(),
                                     &grad_scale, &lr, static_cast<T>(momentum), static_cast<T>(wd),
                                     wd != 0, nesterov});
    ExpectClose(p, want[0], tol);
    ExpectClose(buf, want[1], tol);
    pt = want[0];
    bt = want[1];
  }
}

TEST(PortableOptimizer, SgdInPlaceMatchesHostKernel) {
  CheckSgd<float>(0.9, 0.01, false, 1.0, 1e-6);
  CheckSgd<float>(0.9, 0.0, true, 0.5, 1e-6);
  CheckSgd<double>(0.8, 0.02, true, 0.7, 1e-14);
  CheckSgd<double>(0.0, 0.0, false, 1.0, 1e-14);
}

}  // namespace
}  // namespace testing
}  // namespace distrt
