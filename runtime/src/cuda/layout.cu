#include <cstring>

#include "cuda/launch.cuh"
#include "cuda/layout.h"
#include "cuda/type_dispatch.cuh"

namespace distrt {
namespace cuda {

namespace {

constexpr int kTile = 32;      // a tile of kTile x kTile elements
constexpr int kTileRows = 8;   // rows of threads per block: each moves kTile / kTileRows

// A copy whose destination is contiguous along the iteration's innermost
// dim while the source is contiguous along another dim `j` (a transpose's
// swap: K^T, [B, S, H, D] <-> [B, H, D, S]). Element by element, a warp
// would read 32 elements `src_stride` apart, one memory sector each; a
// tile staged in shared memory is read along j and written along the
// innermost dim, both coalesced. `outer` maps the other dims' index to the
// tile's base offsets.
struct TiledTranspose {
  portable::CopyMap outer;  // the dims other than j and the innermost
  int64_t rows;             // extent of j
  int64_t cols;             // extent of the innermost dim
  int64_t src_col_stride;   // source stride of the innermost dim
  int64_t dst_row_stride;   // destination stride of j
};

template <typename U>
__global__ void TiledTransposeKernel(const U* __restrict__ src, U* __restrict__ dst,
                                     TiledTranspose t, int64_t tiles) {
  __shared__ U tile[kTile][kTile + 1];  // +1: no shared-memory bank conflicts
  const int64_t row_tiles = (t.rows + kTile - 1) / kTile;
  const int64_t col_tiles = (t.cols + kTile - 1) / kTile;
  for (int64_t k = blockIdx.x; k < tiles; k += gridDim.x) {
    int64_t rest = k;
    const int64_t ct = rest % col_tiles;
    rest /= col_tiles;
    const int64_t rt = rest % row_tiles;
    const int64_t b = rest / row_tiles;
    int64_t s0, d0;
    t.outer.Offsets(b, &s0, &d0);
    const int64_t r0 = rt * kTile, c0 = ct * kTile;
    // read along j (source stride 1): threadIdx.x walks rows
    for (int y = threadIdx.y; y < kTile; y += kTileRows) {
      const int64_t r = r0 + threadIdx.x, c = c0 + y;
      if (r < t.rows && c < t.cols) tile[y][threadIdx.x] = src[s0 + r + c * t.src_col_stride];
    }
    __syncthreads();
    // write along the innermost dim (destination stride 1): threadIdx.x walks columns
    for (int y = threadIdx.y; y < kTile; y += kTileRows) {
      const int64_t r = r0 + y, c = c0 + threadIdx.x;
      if (r < t.rows && c < t.cols) dst[d0 + c + r * t.dst_row_stride] = tile[threadIdx.x][y];
    }
    __syncthreads();
  }
}

// The tiled form of `map` when it is a transpose's swap of two dims of at
// least a tile's width; false otherwise.
bool AsTiledTranspose(const portable::CopyMap& map, TiledTranspose* t) {
  const int last = map.rank - 1;
  if (map.rank < 2 || map.dst_strides[last] != 1 || map.src_strides[last] == 1 ||
      map.dims[last] < kTile / 2)
    return false;
  int j = -1;
  for (int d = 0; d < last; ++d)
    if (map.src_strides[d] == 1) j = d;
  if (j < 0 || map.dims[j] < kTile / 2) return false;
  t->outer = portable::CopyMap();
  t->outer.src_base = map.src_base;
  t->outer.dst_base = map.dst_base;
  for (int d = 0; d < last; ++d) {
    if (d == j) continue;
    const int k = t->outer.rank++;
    t->outer.dims[k] = map.dims[d];
    t->outer.src_strides[k] = map.src_strides[d];
    t->outer.dst_strides[k] = map.dst_strides[d];
    t->outer.count *= map.dims[d];
  }
  t->rows = map.dims[j];
  t->cols = map.dims[last];
  t->src_col_stride = map.src_strides[last];
  t->dst_row_stride = map.dst_strides[j];
  return true;
}

}  // namespace

cudaError_t LaunchCopy(size_t unit, const void* src, void* dst, const portable::CopyMap& map,
                       cudaStream_t stream) {
  TiledTranspose t;
  if (unit <= 8 && map.count > 0 && AsTiledTranspose(map, &t)) {
    return ForCopyUnit(unit, [&](auto tag) {
      using U = decltype(tag);
      const int64_t tiles =
          t.outer.count * ((t.rows + kTile - 1) / kTile) * ((t.cols + kTile - 1) / kTile);
      const int blocks = static_cast<int>(tiles < 65535 * 16 ? tiles : 65535 * 16);
      TiledTransposeKernel<U><<<blocks, dim3(kTile, kTileRows), 0, stream>>>(
          static_cast<const U*>(src), static_cast<U*>(dst), t, tiles);
      return cudaGetLastError();
    });
  }
  return ForCopyUnit(unit, [&](auto tag) {
    using U = decltype(tag);
    portable::CopyBody<U> body{static_cast<const U*>(src), static_cast<U*>(dst), map};
    return LaunchFor(map.count, body, stream);
  });
}

cudaError_t LaunchPad(size_t elem, const void* x, void* y, const void* fill,
                      const portable::PadMap& map, int64_t n, cudaStream_t stream) {
  return ForElemSize(elem, [&](auto tag) {
    using U = decltype(tag);
    portable::PadBody<U> body{static_cast<const U*>(x), static_cast<U*>(y), U{}, map};
    std::memcpy(&body.fill, fill, sizeof(U));
    return LaunchFor(n, body, stream);
  });
}

cudaError_t LaunchRange(DType dtype, const void* start, const void* limit, const void* delta,
                        void* y, int64_t n, portable::ErrorSlot* error, cudaStream_t stream) {
  auto launch = [&](auto tag) {
    using T = decltype(tag);
    portable::RangeBody<T> body{static_cast<const T*>(start), static_cast<const T*>(limit),
                                static_cast<const T*>(delta), static_cast<T*>(y), n, error};
    return LaunchFor(n, body, stream);
  };
  switch (dtype) {
    case DType::kF32:
      return launch(float{});
    case DType::kF64:
      return launch(double{});
    case DType::kI64:
      return launch(int64_t{});
    case DType::kI32:
      return launch(int32_t{});
    case DType::kI16:
      return launch(int16_t{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace cuda
}  // namespace distrt
