#include "kernel_util.h"

namespace distrt {

BroadcastPlan MakeBroadcastPlan(const Shape& out, const std::vector<Shape>& operands) {
  BroadcastPlan p;
  const size_t r = out.size(), nops = operands.size();
  std::vector<std::vector<int64_t>> full(nops, std::vector<int64_t>(r, 0));
  for (size_t o = 0; o < nops; ++o) {
    const Shape& s = operands[o];
    size_t lead = r - s.size();
    int64_t acc = 1;
    for (size_t d = r; d-- > lead;) {
      int64_t dim = s[d - lead];
      full[o][d] = (dim == 1 && out[d] != 1) ? 0 : acc;
      acc *= dim;
    }
  }
  p.strides.assign(nops, {});
  for (size_t d = 0; d < r; ++d) {
    if (out[d] == 1) continue;
    bool merge = !p.dims.empty();
    for (size_t o = 0; merge && o < nops; ++o) {
      if (p.strides[o].back() != full[o][d] * out[d]) merge = false;
    }
    if (merge) {
      p.dims.back() *= out[d];
      for (size_t o = 0; o < nops; ++o) p.strides[o].back() = full[o][d];
    } else {
      p.dims.push_back(out[d]);
      for (size_t o = 0; o < nops; ++o) p.strides[o].push_back(full[o][d]);
    }
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    for (size_t o = 0; o < nops; ++o) p.strides[o].push_back(0);
  }
  p.inner = p.dims.back();
  p.rows = 1;
  for (size_t d = 0; d + 1 < p.dims.size(); ++d) p.rows *= p.dims[d];
  p.total = p.rows * p.inner;
  return p;
}

namespace {
// Shared odometer for window copies: `src_is_window` selects the direction.
void WindowCopy(const uint8_t* src, uint8_t* dst, const Shape& big_shape, const Shape& offsets,
                const Shape& sizes, size_t elem, bool big_is_src) {
  const size_t r = sizes.size();
  int64_t n = NumElements(sizes);
  if (n <= 0) return;
  if (r == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  // Find the first dim k such that dims after k are taken whole.
  size_t k = r - 1;
  while (k > 0 && offsets[k] == 0 && sizes[k] == big_shape[k]) --k;
  std::vector<int64_t> bstr = Strides(big_shape);
  const int64_t run = sizes[k] * bstr[k];  // contiguous elements per copy
  const size_t run_bytes = static_cast<size_t>(run) * elem;
  int64_t base = 0;
  for (size_t d = 0; d < r; ++d) base += offsets[d] * bstr[d];
  std::vector<int64_t> idx(k, 0);
  int64_t runs = 1;
  for (size_t d = 0; d < k; ++d) runs *= sizes[d];
  int64_t off = base;
  uint8_t* small = big_is_src ? dst : const_cast<uint8_t*>(src);
  for (int64_t i = 0; i < runs; ++i) {
    if (big_is_src) {
      std::memcpy(small + static_cast<size_t>(i) * run_bytes, src + static_cast<size_t>(off) * elem,
                  run_bytes);
    } else {
      std::memcpy(dst + static_cast<size_t>(off) * elem, src + static_cast<size_t>(i) * run_bytes,
                  run_bytes);
    }
    for (size_t d = k; d-- > 0;) {
      if (++idx[d] < sizes[d]) {
        off += bstr[d];
        break;
      }
      off -= (sizes[d] - 1) * bstr[d];
      idx[d] = 0;
    }
  }
}
}  // namespace

void CopyWindow(const uint8_t* src, const Shape& src_shape, const Shape& offsets,
                const Shape& sizes, size_t elem, uint8_t* dst) {
  WindowCopy(src, dst, src_shape, offsets, sizes, elem, /*big_is_src=*/true);
}

void PasteWindow(const uint8_t* src, const Shape& sizes, uint8_t* dst, const Shape& dst_shape,
                 const Shape& offsets, size_t elem) {
  WindowCopy(src, dst, dst_shape, offsets, sizes, elem, /*big_is_src=*/false);
}

}  // namespace distrt
