// resize and grid_sample.
//
// resize (ONNX Resize): separable interpolation, one pass per resized
// dimension in double precision. Each pass maps every output index of its
// dimension to a few input taps with weights (nearest: 1, linear: 2,
// cubic: 4); a dimension of scale 1 that maps every index to itself is
// skipped, so a local slice of an unresized dimension resizes like the
// whole.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernel_util.h"

namespace distrt {
namespace {

struct ResizeParams {
  std::vector<double> scales, roi;
  std::string mode, ctm, nearest_mode;
  double cubic_a = -0.75, extrapolation = 0.0;
  bool exclude_outside = false;
};

// A list-of-floats attribute (absent: empty).
Status GetFloats(const proto::Instruction& inst, const std::string& name,
                 std::vector<double>* out) {
  out->clear();
  auto it = inst.attrs().find(name);
  if (it == inst.attrs().end() || it->second.value_case() == proto::Attribute::VALUE_NOT_SET)
    return OkStatus();
  if (it->second.value_case() != proto::Attribute::kFloats) {
    return InvalidArgumentError("attribute '", name, "' must be a list of floats");
  }
  out->assign(it->second.floats().values().begin(), it->second.floats().values().end());
  return OkStatus();
}

Status ReadResizeParams(const proto::Instruction& inst, size_t rank, ResizeParams* p) {
  const AttrReader attrs(inst);
  DISTRT_RETURN_IF_ERROR(GetFloats(inst, "scales", &p->scales));
  if (p->scales.size() != rank) {
    return InvalidArgumentError("resize needs one scale per dimension (", rank, ")");
  }
  DISTRT_RETURN_IF_ERROR(GetFloats(inst, "roi", &p->roi));
  DISTRT_RETURN_IF_ERROR(attrs.GetString("mode", "nearest", &p->mode));
  DISTRT_RETURN_IF_ERROR(
      attrs.GetString("coordinate_transformation_mode", "half_pixel", &p->ctm));
  DISTRT_RETURN_IF_ERROR(attrs.GetString("nearest_mode", "round_prefer_floor", &p->nearest_mode));
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("cubic_coeff_a", -0.75, &p->cubic_a));
  DISTRT_RETURN_IF_ERROR(attrs.GetFloat("extrapolation_value", 0.0, &p->extrapolation));
  int64_t exclude;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("exclude_outside", 0, &exclude));
  p->exclude_outside = exclude != 0;
  if (p->mode != "nearest" && p->mode != "linear" && p->mode != "cubic") {
    return InvalidArgumentError("resize: unknown mode '", p->mode, "'");
  }
  if (p->ctm == "tf_crop_and_resize" && p->roi.size() != 2 * rank) {
    return InvalidArgumentError("resize: tf_crop_and_resize needs ", 2 * rank, " roi entries");
  }
  return OkStatus();
}

Status CheckResizeTypes(const TensorType& x, const TensorType& y, const ResizeParams& p) {
  if (y.dtype != x.dtype || y.shape.size() != x.shape.size()) {
    return InvalidArgumentError("resize: output ", y.ToString(), " does not fit input ",
                                x.ToString());
  }
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (p.scales[d] == 1.0 ? y.shape[d] != x.shape[d] : y.shape[d] < 1) {
      return InvalidArgumentError("resize: output ", y.ToString(), " does not fit input ",
                                  x.ToString(), " at dimension ", d);
    }
  }
  if (p.mode != "nearest" && !IsFloat(x.dtype)) {
    return UnimplementedError("resize: ", p.mode, " mode needs a floating-point input, got ",
                              DTypeName(x.dtype));
  }
  return OkStatus();
}

Status VerifyResize(const VerifyContext& ctx) {
  ResizeParams p;
  DISTRT_RETURN_IF_ERROR(ReadResizeParams(*ctx.inst, ctx.inputs[0].shape.size(), &p));
  return CheckResizeTypes(ctx.inputs[0], ctx.outputs[0], p);
}

// The taps of one output index along one dimension.
struct Taps {
  int64_t index[4];
  double weight[4];
  int count = 0;
  bool outside = false;  // tf_crop_and_resize: the extrapolation value
};

// The input coordinate of output index `o` (ONNX's coordinate
// transformations; `width` is scale * in, unrounded, as ONNX defines it).
double SourceCoordinate(const ResizeParams& p, size_t d, int64_t o, int64_t in, bool* outside) {
  const double scale = p.scales[d], width = scale * static_cast<double>(in), x = o;
  *outside = false;
  if (p.ctm == "asymmetric") return x / scale;
  if (p.ctm == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (p.ctm == "align_corners") return width == 1 ? 0.0 : x * (in - 1) / (width - 1);
  if (p.ctm == "pytorch_half_pixel") return width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (p.ctm == "tf_crop_and_resize") {
    const size_t rank = p.scales.size();
    const double start = p.roi[d], extent = p.roi[d + rank] - start;
    double c = width == 1 ? extent * (in - 1) / 2 : x * extent * (in - 1) / (width - 1);
    c += start * (in - 1);
    *outside = c < 0 || c > in - 1;
    return c;
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

Taps TapsOf(const ResizeParams& p, size_t d, int64_t o, int64_t in) {
  Taps t;
  const double c = SourceCoordinate(p, d, o, in, &t.outside);
  if (t.outside) return t;
  // `lo` is the input index at or just left of c, with the ratio in (0, 1]:
  // an integer coordinate sits at ratio 1 (ONNX's neighbour convention).
  const double lo = std::ceil(c) - 1;
  const double r = c - lo;
  auto clamp = [&](double i) { return std::min<int64_t>(std::max<int64_t>(0, int64_t(i)), in - 1); };
  if (p.mode == "nearest") {
    bool up;
    if (r == 1.0 || p.nearest_mode == "ceil")
      up = true;
    else if (p.nearest_mode == "floor")
      up = false;
    else if (p.nearest_mode == "round_prefer_ceil")
      up = r >= 0.5;
    else
      up = r > 0.5;  // round_prefer_floor
    t.index[0] = clamp(up ? lo + 1 : lo);
    t.weight[0] = 1.0;
    t.count = 1;
    return t;
  }
  double w[4];
  int first;
  if (p.mode == "linear") {
    w[0] = 1 - r;
    w[1] = r;
    t.count = 2;
    first = 0;
  } else {
    const double a = p.cubic_a, s = 1 - r;
    // Keys' kernel at distances r + 1, r, 1 - r, 2 - r.
    w[0] = ((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a;
    w[1] = ((a + 2) * r - (a + 3)) * r * r + 1;
    w[2] = ((a + 2) * s - (a + 3)) * s * s + 1;
    w[3] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
    t.count = 4;
    first = -1;
  }
  double sum = 0;
  for (int k = 0; k < t.count; ++k) {
    const double i = lo + first + k;
    if (p.exclude_outside && (i < 0 || i > in - 1)) w[k] = 0;
    sum += w[k];
  }
  for (int k = 0; k < t.count; ++k) {
    t.index[k] = clamp(lo + first + k);
    t.weight[k] = p.exclude_outside ? w[k] / sum : w[k];
  }
  return t;
}

// Whether every output index of the dimension reads its own input index.
bool IsIdentity(const std::vector<Taps>& taps) {
  for (size_t o = 0; o < taps.size(); ++o) {
    const Taps& t = taps[o];
    if (t.outside) return false;
    for (int k = 0; k < t.count; ++k)
      if (t.weight[k] != 0 && (t.index[k] != static_cast<int64_t>(o) || t.weight[k] != 1.0))
        return false;
  }
  return true;
}

Status RunResize(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t rank = x.shape().size();
  ResizeParams p;
  DISTRT_RETURN_IF_ERROR(ReadResizeParams(*ctx.inst, rank, &p));
  const TensorType& yt = ctx.output_types[0];
  DISTRT_RETURN_IF_ERROR(CheckResizeTypes(x.type(), yt, p));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  if (out->num_elements() == 0) return OkStatus();
  if (x.num_elements() == 0) return InvalidArgumentError("resize: the input is empty");

  std::vector<double> cur(static_cast<size_t>(x.num_elements()));
  DISTRT_RETURN_IF_ERROR(CastBuffer(x.raw(), x.dtype(), cur.data(), DType::kF64, x.num_elements()));
  Shape shape = x.shape();
  // Output elements outside a crop box, per dimension.
  std::vector<std::vector<char>> outside(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t in = shape[d], n = yt.shape[d];
    std::vector<Taps> taps(static_cast<size_t>(n));
    outside[d].assign(static_cast<size_t>(n), 0);
    for (int64_t o = 0; o < n; ++o) {
      taps[o] = TapsOf(p, d, o, in);
      outside[d][o] = taps[o].outside;
    }
    if (n == in && IsIdentity(taps)) continue;
    // One pass along d: [outer, in, inner] -> [outer, n, inner].
    int64_t outer = 1, inner = 1;
    for (size_t e = 0; e < d; ++e) outer *= shape[e];
    for (size_t e = d + 1; e < rank; ++e) inner *= shape[e];
    std::vector<double> next(static_cast<size_t>(outer * n * inner), 0.0);
    ParallelFor(ctx.pool, outer, 1, [&](int64_t a0, int64_t a1) {
      for (int64_t a = a0; a < a1; ++a)
        for (int64_t o = 0; o < n; ++o) {
          double* dst = &next[(a * n + o) * inner];
          const Taps& t = taps[o];
          for (int k = 0; k < t.count; ++k) {
            const double* src = &cur[(a * in + t.index[k]) * inner];
            const double w = t.weight[k];
            for (int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
          }
        }
    });
    cur.swap(next);
    shape[d] = n;
  }
  // A point outside the crop box in any dimension is the extrapolation value.
  if (p.ctm == "tf_crop_and_resize") {
    std::vector<int64_t> idx(rank, 0);
    for (size_t i = 0; i < cur.size(); ++i) {
      for (size_t d = 0; d < rank; ++d)
        if (outside[d][idx[d]]) {
          cur[i] = p.extrapolation;
          break;
        }
      for (size_t d = rank; d-- > 0;) {
        if (++idx[d] < shape[d]) break;
        idx[d] = 0;
      }
    }
  }
  return CastBuffer(cur.data(), DType::kF64, out->raw(), out->dtype(), out->num_elements());
}

// grid_sample (ONNX GridSample, PyTorch's grid_sample): input [N, C, H, W],
// grid [N, Ho, Wo, 2] of (x, y) in [-1, 1], output [N, C, Ho, Wo].
struct GridSampleParams {
  std::string mode, padding;
  bool align = false;
};

Status ReadGridSampleParams(const AttrReader& attrs, GridSampleParams* p) {
  DISTRT_RETURN_IF_ERROR(attrs.GetString("mode", "bilinear", &p->mode));
  DISTRT_RETURN_IF_ERROR(attrs.GetString("padding_mode", "zeros", &p->padding));
  int64_t align;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("align_corners", 0, &align));
  p->align = align != 0;
  if (p->mode != "bilinear" && p->mode != "nearest" && p->mode != "bicubic") {
    return InvalidArgumentError("grid_sample: unknown mode '", p->mode, "'");
  }
  if (p->padding != "zeros" && p->padding != "border" && p->padding != "reflection") {
    return InvalidArgumentError("grid_sample: unknown padding_mode '", p->padding, "'");
  }
  return OkStatus();
}

Status GridSampleShape(const TensorType& x, const TensorType& g, Shape* out) {
  if (x.shape.size() != 4 || g.shape.size() != 4 || g.shape[3] != 2 || g.shape[0] != x.shape[0] ||
      g.dtype != x.dtype || !IsFloat(x.dtype)) {
    return InvalidArgumentError("grid_sample needs a float input [N, C, H, W] and a grid [N, Ho, ",
                                "Wo, 2] of its dtype, got ", x.ToString(), " and ", g.ToString());
  }
  *out = {x.shape[0], x.shape[1], g.shape[1], g.shape[2]};
  return OkStatus();
}

Status VerifyGridSample(const VerifyContext& ctx) {
  GridSampleParams p;
  DISTRT_RETURN_IF_ERROR(ReadGridSampleParams(ctx.attrs(), &p));
  Shape s;
  DISTRT_RETURN_IF_ERROR(GridSampleShape(ctx.inputs[0], ctx.inputs[1], &s));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, s});
}

// Folds a coordinate into [low/2, high/2] by reflecting at the bounds.
double Reflect(double c, double twice_low, double twice_high) {
  if (twice_low == twice_high) return 0;
  const double low = twice_low / 2, span = (twice_high - twice_low) / 2;
  c = std::fabs(c - low);
  const double extra = std::fmod(c, span);
  const int64_t flips = static_cast<int64_t>(std::floor(c / span));
  return flips % 2 == 0 ? extra + low : span - extra + low;
}

// A pixel coordinate after the padding mode (zeros: unchanged).
double PadCoordinate(const GridSampleParams& p, double c, int64_t size) {
  if (p.padding == "zeros") return c;
  if (p.padding == "reflection")
    c = p.align ? Reflect(c, 0, 2.0 * (size - 1)) : Reflect(c, -1, 2.0 * size - 1);
  return std::min(std::max(c, 0.0), static_cast<double>(size - 1));
}

struct GridSampler {
  const GridSampleParams& p;
  const double* plane;  // one [H, W] channel
  int64_t h, w;

  double At(int64_t y, int64_t x) const {
    return y < 0 || y >= h || x < 0 || x >= w ? 0.0 : plane[y * w + x];
  }
  // Bicubic taps read their own padded coordinates.
  double Bounded(int64_t y, int64_t x) const {
    const int64_t py = static_cast<int64_t>(PadCoordinate(p, static_cast<double>(y), h));
    const int64_t px = static_cast<int64_t>(PadCoordinate(p, static_cast<double>(x), w));
    return At(py, px);
  }
  double Sample(double gx, double gy) const {
    // Normalised [-1, 1] to pixel coordinates.
    double x = p.align ? (gx + 1) / 2 * (w - 1) : ((gx + 1) * w - 1) / 2;
    double y = p.align ? (gy + 1) / 2 * (h - 1) : ((gy + 1) * h - 1) / 2;
    if (p.mode == "bicubic") {
      const double x0 = std::floor(x), y0 = std::floor(y);
      double wx[4], wy[4];
      Cubic(x - x0, wx);
      Cubic(y - y0, wy);
      double acc = 0;
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i)
          acc += wy[j] * wx[i] * Bounded(int64_t(y0) - 1 + j, int64_t(x0) - 1 + i);
      return acc;
    }
    x = PadCoordinate(p, x, w);
    y = PadCoordinate(p, y, h);
    if (p.mode == "nearest") return At(int64_t(std::nearbyint(y)), int64_t(std::nearbyint(x)));
    const double x0 = std::floor(x), y0 = std::floor(y), tx = x - x0, ty = y - y0;
    const int64_t ix = static_cast<int64_t>(x0), iy = static_cast<int64_t>(y0);
    return (1 - ty) * ((1 - tx) * At(iy, ix) + tx * At(iy, ix + 1)) +
           ty * ((1 - tx) * At(iy + 1, ix) + tx * At(iy + 1, ix + 1));
  }
  // Keys' cubic kernel with a = -0.75 at distances t + 1, t, 1 - t, 2 - t.
  static void Cubic(double t, double* c) {
    const double a = -0.75;
    auto near = [&](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };
    auto far = [&](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };
    c[0] = far(t + 1);
    c[1] = near(t);
    c[2] = near(1 - t);
    c[3] = far(2 - t);
  }
};

Status RunGridSample(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& g = ctx.input(1);
  GridSampleParams p;
  DISTRT_RETURN_IF_ERROR(ReadGridSampleParams(ctx.attrs(), &p));
  Shape s;
  DISTRT_RETURN_IF_ERROR(GridSampleShape(x.type(), g.type(), &s));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{x.dtype(), s}));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  if (out->num_elements() == 0) return OkStatus();
  std::vector<double> xs(static_cast<size_t>(x.num_elements())),
      gs(static_cast<size_t>(g.num_elements())), ys(static_cast<size_t>(out->num_elements()));
  DISTRT_RETURN_IF_ERROR(CastBuffer(x.raw(), x.dtype(), xs.data(), DType::kF64, x.num_elements()));
  DISTRT_RETURN_IF_ERROR(CastBuffer(g.raw(), g.dtype(), gs.data(), DType::kF64, g.num_elements()));
  const int64_t n = s[0], c = s[1], points = s[2] * s[3], h = x.dim(2), w = x.dim(3);
  ParallelFor(ctx.pool, n * c, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t plane = p0; plane < p1; ++plane) {
      const GridSampler sampler{p, &xs[plane * h * w], h, w};
      const double* grid = &gs[(plane / c) * points * 2];
      double* y = &ys[plane * points];
      for (int64_t i = 0; i < points; ++i) y[i] = sampler.Sample(grid[2 * i], grid[2 * i + 1]);
    }
  });
  return CastBuffer(ys.data(), DType::kF64, out->raw(), out->dtype(), out->num_elements());
}

}  // namespace

void RegisterResizeKernels(KernelRegistry& r) {
  r.Add({"resize", 1, 1, 1, RunResize, VerifyResize});
  r.Add({"grid_sample", 2, 2, 1, RunGridSample, VerifyGridSample});
}

}  // namespace distrt
