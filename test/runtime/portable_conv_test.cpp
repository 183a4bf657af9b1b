// The CUDA convolution kernels' bodies (portable/conv.h), run on the host as
// cuda/conv.cu launches them, against the host kernels conv,
// conv_grad_input and conv_grad_weight: 1-D, 2-D and 3-D, strides, pads
// (asymmetric, and wider than the kernel), dilations, groups (depthwise
// too), bias or none, no input channels, conv_grad_weight in one chunk and
// split (with one lane and with a simulated warp's lanes), f64, and
// bf16/f16 (f32 arithmetic, one rounding). Inputs are multiples of 1/256
// in [-1, 1]: every sum here is exact in f32, so f32 and f64 results must
// match the host's bit for bit whatever the summation order, and a 16-bit
// result must be the rounding of the host's f32 result.
#include <gtest/gtest.h>

#include <random>

#include "conv_util.h"
#include "portable/conv.h"
#include "portable/host_launch.h"
#include "sim_warp.h"
#include "test_util.h"

namespace distrt {
namespace testing {
namespace {

using portable::ConvSizes;
using portable::HostFor;
using portable::HostRows;
using portable::Window;

std::vector<float> Grid(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> k(-256, 256);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(k(gen)) / 256.0f;
  return v;
}

struct ConvCase {
  const char* name;
  Shape x, w;
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
  bool bias;
};

const ConvCase kCases[] = {
    {"2d pad 1", {2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
    {"2d stride 2, asymmetric pads, dilation",
     {1, 2, 9, 8},
     {3, 2, 3, 2},
     {2, 3},
     {0, 1, 2, 0},
     {2, 1},
     1,
     false},
    {"groups", {2, 6, 5, 5}, {4, 3, 3, 3}, {1, 2}, {1, 0, 1, 2}, {1, 1}, 2, true},
    {"depthwise", {1, 4, 6, 6}, {4, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 4, true},
    {"1d", {2, 3, 11}, {5, 3, 4}, {3}, {2, 1}, {2}, 1, true},
    {"3d",
     {1, 2, 5, 6, 4},
     {3, 2, 2, 3, 2},
     {2, 1, 1},
     {1, 0, 1, 1, 0, 0},
     {1, 2, 1},
     1,
     true},
    {"1x1", {2, 5, 4, 4}, {3, 5, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, false},
    {"pads wider than the kernel", {1, 2, 3, 3}, {2, 2, 1, 1}, {1, 1}, {2, 2, 2, 2}, {1, 1}, 1,
     true},
    {"stride above the kernel", {2, 2, 10}, {3, 2, 2}, {4}, {1, 0}, {1}, 1, false},
    {"long sums", {4, 3, 20, 20}, {2, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, false},
};

// The case's attributes, as the host kernels read them.
proto::Instruction CaseInst(const ConvCase& c) {
  proto::Instruction inst;
  auto& a = *inst.mutable_attrs();
  a["strides"] = AttrInts(c.strides);
  a["pads"] = AttrInts(c.pads);
  a["dilations"] = AttrInts(c.dilations);
  a["group"] = AttrInt(c.group);
  return inst;
}

struct Geometry {
  ConvSizes z;
  Window win;
  Shape y;
};

// What cuda/kernels_conv.cpp derives from the host's ReadSpatial.
Geometry GeometryOf(const ConvCase& c) {
  Geometry g;
  const proto::Instruction inst = CaseInst(c);
  Spatial sp;
  const std::vector<int64_t> kernel(c.w.begin() + 2, c.w.end());
  Status st = ReadSpatial(AttrReader(inst), c.x, kernel, false, &sp);
  EXPECT_TRUE(st.ok()) << st.ToString();
  for (int j = 0; j < 3; ++j) {
    g.win.in[j] = sp.in[j];
    g.win.k[j] = sp.k[j];
    g.win.s[j] = sp.s[j];
    g.win.d[j] = sp.d[j];
    g.win.pb[j] = sp.pb[j];
    g.win.pe[j] = sp.pe[j];
    g.win.out[j] = sp.out[j];
  }
  g.z.n = c.x[0];
  g.z.c = c.x[1];
  g.z.m = c.w[0];
  g.z.cg = c.x[1] / c.group;
  g.z.mg = c.w[0] / c.group;
  g.y = {c.x[0], c.w[0]};
  for (int j = 3 - sp.rank; j < 3; ++j) g.y.push_back(sp.out[j]);
  return g;
}

Tensor HostConvOp(const char* op, const ConvCase& c, const std::vector<Tensor>& in,
                  const TensorType& out) {
  return Run1(op, in, out,
              {{"strides", AttrInts(c.strides)},
               {"pads", AttrInts(c.pads)},
               {"dilations", AttrInts(c.dilations)},
               {"group", AttrInt(c.group)}});
}

// The three bodies on one case's values (x, w, bias, dy) of storage type T.
template <typename T>
struct BodyResults {
  std::vector<T> y, dx, dw;
};

enum class Lanes { kOne, kSim };

template <typename T>
BodyResults<T> RunBodies(const Geometry& g, const std::vector<T>& x, const std::vector<T>& w,
                         const std::vector<T>* bias, const std::vector<T>& dy, int64_t chunks,
                         Lanes lanes) {
  using C = typename portable::Elem<T>::Compute;
  BodyResults<T> r;
  r.y.resize(static_cast<size_t>(NumElements(g.y)));
  HostFor(static_cast<int64_t>(r.y.size()),
          portable::ConvBody<T>{x.data(), w.data(), bias ? bias->data() : nullptr, r.y.data(),
                                g.z, g.win});
  r.dx.resize(x.size());
  HostFor(static_cast<int64_t>(r.dx.size()),
          portable::ConvGradInputBody<T>{dy.data(), w.data(), r.dx.data(), g.z, g.win});
  const int64_t wsize = static_cast<int64_t>(w.size());
  r.dw.resize(w.size());
  std::vector<C> partial(static_cast<size_t>(chunks * wsize));
  portable::ConvGradWeightBody<T> body{x.data(), dy.data(), r.dw.data(),
                                       chunks > 1 ? partial.data() : nullptr,
                                       g.z, g.win, chunks};
  if (lanes == Lanes::kSim)
    SimWarpRows<8>(chunks * wsize, body);
  else
    HostRows(chunks * wsize, body);
  if (chunks > 1) {
    HostFor(wsize, portable::ConvGradWeightFinishBody<T>{partial.data(), r.dw.data(), wsize,
                                                         chunks});
  }
  return r;
}

template <typename T>
void ExpectEqualValues(const std::vector<T>& got, const std::vector<T>& want,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 10; ++i) {
    if (got[i] != want[i]) {
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << ", want " << want[i];
      ++bad;
    }
  }
}

TEST(PortableConv, BodiesMatchHostKernelsInF32AndF64) {
  uint32_t seed = 1;
  for (const ConvCase& c : kCases) {
    SCOPED_TRACE(c.name);
    const Geometry g = GeometryOf(c);
    const std::vector<float> x = Grid(NumElements(c.x), seed++), w = Grid(NumElements(c.w), seed++),
                             b = Grid(c.w[0], seed++), dy = Grid(NumElements(g.y), seed++);
    // Host kernels.
    std::vector<Tensor> in = {F32(c.x, x), F32(c.w, w)};
    if (c.bias) in.push_back(F32({c.w[0]}, b));
    const std::vector<float> want_y =
        Vec<float>(HostConvOp("conv", c, in, {DType::kF32, g.y}));
    const std::vector<float> want_dx = Vec<float>(
        HostConvOp("conv_grad_input", c, {F32(g.y, dy), F32(c.w, w)}, {DType::kF32, c.x}));
    const std::vector<float> want_dw = Vec<float>(
        HostConvOp("conv_grad_weight", c, {F32(c.x, x), F32(g.y, dy)}, {DType::kF32, c.w}));
    const int64_t wsize = NumElements(c.w);
    const int64_t auto_chunks = portable::ConvGradWeightChunks(wsize, g.z.n * g.win.out_size());
    for (const int64_t chunks : {int64_t{1}, int64_t{3}, auto_chunks}) {
      for (const Lanes lanes : {Lanes::kOne, Lanes::kSim}) {
        SCOPED_TRACE("chunks " + std::to_string(chunks) +
                     (lanes == Lanes::kSim ? ", 8 lanes" : ", 1 lane"));
        const BodyResults<float> r =
            RunBodies<float>(g, x, w, c.bias ? &b : nullptr, dy, chunks, lanes);
        ExpectEqualValues(r.y, want_y, "conv");
        ExpectEqualValues(r.dx, want_dx, "conv_grad_input");
        ExpectEqualValues(r.dw, want_dw, "conv_grad_weight");
      }
    }
    // f64 against the host's f64 kernels.
    const std::vector<double> xd(x.begin(), x.end()), wd(w.begin(), w.end()),
        bd(b.begin(), b.end()), dyd(dy.begin(), dy.end());
    std::vector<Tensor> ind = {F64(c.x, xd), F64(c.w, wd)};
    if (c.bias) ind.push_back(F64({c.w[0]}, bd));
    const BodyResults<double> r =
        RunBodies<double>(g, xd, wd, c.bias ? &bd : nullptr, dyd, 2, Lanes::kOne);
    ExpectEqualValues(r.y, Vec<double>(HostConvOp("conv", c, ind, {DType::kF64, g.y})), "conv f64");
    ExpectEqualValues(r.dx,
                      Vec<double>(HostConvOp("conv_grad_input", c, {F64(g.y, dyd), F64(c.w, wd)},
                                             {DType::kF64, c.x})),
                      "conv_grad_input f64");
    ExpectEqualValues(r.dw,
                      Vec<double>(HostConvOp("conv_grad_weight", c, {F64(c.x, xd), F64(g.y, dyd)},
                                             {DType::kF64, c.w})),
                      "conv_grad_weight f64");
  }
}

// No input channels (c = 0): conv gives the bias, the gradients are empty
// or zero.
TEST(PortableConv, NoInputChannelsGivesTheBias) {
  const ConvCase c = {"c = 0", {2, 0, 4, 4}, {3, 0, 2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true};
  const Geometry g = GeometryOf(c);
  const std::vector<float> b = {0.5f, -1.0f, 2.0f};
  std::vector<float> y(static_cast<size_t>(NumElements(g.y)), 7.0f);
  HostFor(static_cast<int64_t>(y.size()),
          portable::ConvBody<float>{nullptr, nullptr, b.data(), y.data(), g.z, g.win});
  const std::vector<float> want = Vec<float>(HostConvOp(
      "conv", c, {F32(c.x, {}), F32(c.w, {}), F32({3}, b)}, {DType::kF32, g.y}));
  ExpectEqualValues(y, want, "conv");
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(y[i], b[(i / 9) % 3]) << i;
}

// bf16 and f16: the host's f32 result of the rounded values (exact here),
// rounded once.
template <typename H>
void ExpectRoundingOf(const std::vector<H>& got, const std::vector<float>& want,
                      float (*to)(uint16_t), uint16_t (*from)(float), const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 10; ++i) {
    if (got[i].bits != from(want[i])) {
      ADD_FAILURE() << what << " element " << i << ": got " << to(got[i].bits) << ", want "
                    << want[i] << " rounded, " << to(from(want[i]));
      ++bad;
    }
  }
}

template <typename H>
std::vector<H> Round16(const std::vector<float>& v, uint16_t (*from)(float), float (*to)(uint16_t),
                       std::vector<float>* back) {
  std::vector<H> h(v.size());
  back->resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    h[i].bits = from(v[i]);
    (*back)[i] = to(h[i].bits);
  }
  return h;
}

template <typename H>
void CheckHalf(uint16_t (*from)(float), float (*to)(uint16_t), const char* type) {
  uint32_t seed = 100;
  for (const ConvCase& c : kCases) {
    SCOPED_TRACE(std::string(c.name) + " " + type);
    const Geometry g = GeometryOf(c);
    std::vector<float> xf, wf, bf, dyf;
    const std::vector<H> x = Round16<H>(Grid(NumElements(c.x), seed++), from, to, &xf);
    const std::vector<H> w = Round16<H>(Grid(NumElements(c.w), seed++), from, to, &wf);
    const std::vector<H> b = Round16<H>(Grid(c.w[0], seed++), from, to, &bf);
    const std::vector<H> dy = Round16<H>(Grid(NumElements(g.y), seed++), from, to, &dyf);
    std::vector<Tensor> in = {F32(c.x, xf), F32(c.w, wf)};
    if (c.bias) in.push_back(F32({c.w[0]}, bf));
    const BodyResults<H> r = RunBodies<H>(g, x, w, c.bias ? &b : nullptr, dy, 2, Lanes::kOne);
    ExpectRoundingOf(r.y, Vec<float>(HostConvOp("conv", c, in, {DType::kF32, g.y})), to, from,
                     "conv");
    ExpectRoundingOf(r.dx,
                     Vec<float>(HostConvOp("conv_grad_input", c, {F32(g.y, dyf), F32(c.w, wf)},
                                           {DType::kF32, c.x})),
                     to, from, "conv_grad_input");
    ExpectRoundingOf(r.dw,
                     Vec<float>(HostConvOp("conv_grad_weight", c, {F32(c.x, xf), F32(g.y, dyf)},
                                           {DType::kF32, c.w})),
                     to, from, "conv_grad_weight");
  }
}

TEST(PortableConv, HalfTypesRoundTheF32ResultOnce) {
  CheckHalf<bf16_t>(FloatToBF16, BF16ToFloat, "bf16");
  CheckHalf<f16_t>(FloatToHalf, HalfToFloat, "f16");
}

// Values whose sum is not exact: the 16-bit bodies sum in f32 and round
// once (a 16-bit accumulator would lose the small terms entirely).
TEST(PortableConv, HalfTypesAccumulateInF32) {
  // 1-D, one channel, 64 taps of 1 * (1 + 2^-8 ... ): x = 1, w = 2^-9 each,
  // the sum 64 * 2^-9 = 0.125 plus 1 from the bias. In bf16 arithmetic 1 +
  // 2^-9 rounds back to 1 at every step.
  const ConvCase c = {"sum", {1, 1, 64}, {1, 1, 64}, {1}, {0, 0}, {1}, 1, true};
  const Geometry g = GeometryOf(c);
  std::vector<bf16_t> x(64), w(64), b(1), y(1);
  for (int i = 0; i < 64; ++i) {
    x[i].bits = FloatToBF16(1.0f);
    w[i].bits = FloatToBF16(1.0f / 512);
  }
  b[0].bits = FloatToBF16(1.0f);
  HostFor(1, portable::ConvBody<bf16_t>{x.data(), w.data(), b.data(), y.data(), g.z, g.win});
  EXPECT_EQ(BF16ToFloat(y[0].bits), 1.125f);
}

}  // namespace
}  // namespace testing
}  // namespace distrt
