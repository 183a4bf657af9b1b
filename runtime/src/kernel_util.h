// Internal helpers for kernels: dtype dispatch, broadcasting loops, copies.
#ifndef DISTRT_SRC_KERNEL_UTIL_H_
#define DISTRT_SRC_KERNEL_UTIL_H_

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernel.h"
#include "portable/hd.h"
#include "wrap_arith.h"

namespace distrt {

// The dispatchers below run BODY (their trailing arguments) with
// `using T = <c++ type>` for the dtypes of their family; any other dtype
// returns an Unimplemented error naming the op and dtype.
#define DISTRT_CASE_(DT, CT, ...) \
  case DType::DT: {               \
    using T = CT;                 \
    __VA_ARGS__;                  \
    break;                        \
  }
// The families' cases, shared by the dispatchers (and kernels_cast.cpp).
#define DISTRT_FLOAT_CASES_(...)         \
  DISTRT_CASE_(kF32, float, __VA_ARGS__) \
  DISTRT_CASE_(kF64, double, __VA_ARGS__)
#define DISTRT_INT_CASES_(...)             \
  DISTRT_CASE_(kI64, int64_t, __VA_ARGS__) \
  DISTRT_CASE_(kI32, int32_t, __VA_ARGS__) \
  DISTRT_CASE_(kI16, int16_t, __VA_ARGS__) \
  DISTRT_CASE_(kI8, int8_t, __VA_ARGS__)   \
  DISTRT_CASE_(kU8, uint8_t, __VA_ARGS__)    \
  DISTRT_CASE_(kU16, uint16_t, __VA_ARGS__)  \
  DISTRT_CASE_(kU32, uint32_t, __VA_ARGS__)  \
  DISTRT_CASE_(kU64, uint64_t, __VA_ARGS__)
// The 16-bit floats. A kernel computes with them through the element
// trait portable::Elem<T> (portable/hd.h): Load gives an element as its
// compute type (f32 for these, the type itself for every other), Store
// rounds it back. A body written with Load/Store takes f16 and bf16 by
// adding these cases to its dispatch; nothing outside the kernel changes.
#define DISTRT_HALF_CASES_(...)          \
  DISTRT_CASE_(kF16, f16_t, __VA_ARGS__) \
  DISTRT_CASE_(kBF16, bf16_t, __VA_ARGS__)
#define DISTRT_UNSUPPORTED_(dtype, opname) \
  default:                                 \
    return UnimplementedError("'", opname, "' does not support dtype ", DTypeName(dtype));
// Numeric types with arithmetic: f32 f64 i64 i32 i16 i8 u8 u16 u32 u64.
#define DISTRT_DISPATCH_NUMERIC(dtype, opname, ...) \
  switch (dtype) {                                  \
    DISTRT_FLOAT_CASES_(__VA_ARGS__)                \
    DISTRT_INT_CASES_(__VA_ARGS__)                  \
    DISTRT_UNSUPPORTED_(dtype, opname)              \
  }
// Numeric plus bool (stored as uint8_t 0/1).
#define DISTRT_DISPATCH_NUMERIC_BOOL(dtype, opname, ...) \
  switch (dtype) {                                       \
    DISTRT_FLOAT_CASES_(__VA_ARGS__)                     \
    DISTRT_INT_CASES_(__VA_ARGS__)                       \
    DISTRT_CASE_(kBool, uint8_t, __VA_ARGS__)            \
    DISTRT_UNSUPPORTED_(dtype, opname)                   \
  }
// Floating types: f32 f64.
#define DISTRT_DISPATCH_FLOAT(dtype, opname, ...) \
  switch (dtype) {                                \
    DISTRT_FLOAT_CASES_(__VA_ARGS__)              \
    DISTRT_UNSUPPORTED_(dtype, opname)            \
  }

// Broadcasting: the output shape with every operand's strides (0 where the
// operand is broadcast), adjacent dims merged when no operand changes its
// pattern between them. The last merged dim is the inner loop.
struct BroadcastPlan {
  std::vector<int64_t> dims;                  // merged output dims (>= 1 entry)
  std::vector<std::vector<int64_t>> strides;  // per operand, per merged dim
  int64_t inner = 1;                          // dims.back()
  int64_t rows = 1;                           // product of the other dims
  int64_t total = 1;
};
BroadcastPlan MakeBroadcastPlan(const Shape& out, const std::vector<Shape>& operands);

// Visits rows [row_begin, row_end) of a plan, calling
// fn(row, offsets[operand]) with the element offset of each operand's row start.
template <typename Fn>
void ForEachRow(const BroadcastPlan& p, int64_t row_begin, int64_t row_end, Fn&& fn) {
  const size_t nd = p.dims.size() - 1;  // outer dims
  const size_t nops = p.strides.size();
  // Small plans (all of a model's, in practice) keep the odometer on the
  // stack: no allocation per call.
  constexpr size_t kSmall = 8;
  int64_t idx_small[kSmall] = {}, off_small[kSmall] = {};
  std::vector<int64_t> idx_big, off_big;
  int64_t* idx = idx_small;
  int64_t* off = off_small;
  if (nd > kSmall) {
    idx_big.assign(nd, 0);
    idx = idx_big.data();
  }
  if (nops > kSmall) {
    off_big.assign(nops, 0);
    off = off_big.data();
  }
  int64_t rem = row_begin;
  for (size_t d = nd; d-- > 0;) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
  }
  for (size_t o = 0; o < nops; ++o) {
    int64_t s = 0;
    for (size_t d = 0; d < nd; ++d) s += idx[d] * p.strides[o][d];
    off[o] = s;
  }
  for (int64_t r = row_begin; r < row_end; ++r) {
    fn(r, static_cast<const int64_t*>(off));
    for (size_t d = nd; d-- > 0;) {  // odometer increment
      if (++idx[d] < p.dims[d]) {
        for (size_t o = 0; o < nops; ++o) off[o] += p.strides[o][d];
        break;
      }
      for (size_t o = 0; o < nops; ++o) off[o] -= (p.dims[d] - 1) * p.strides[o][d];
      idx[d] = 0;
    }
  }
}

// Marks a hot float loop for two clones, baseline x86-64 and x86-64-v3
// (AVX2 + FMA), the one the CPU supports picked when the program loads: the
// build targets baseline x86-64, where GCC vectorises 4 floats at a time.
// DISTRT_ARITHMETIC_CLONES adds an x86-64-v4 (AVX-512) clone, for loops
// whose time goes to arithmetic (erf, exp, conversions to double) rather
// than to memory: on an AMD Zen 5 their AVX-512 clones ran in about half
// the time (`dist-run --calibrate`: gelu 0.66 -> 0.31, gelu_grad 1.13 ->
// 0.56 ns per element), while the streaming loops (element-wise arithmetic,
// casts, Adam) ran 10-40% slower in AVX-512 than in AVX2, so they keep the
// two clones. Plain functions on other compilers and targets.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DISTRT_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define DISTRT_ARITHMETIC_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define DISTRT_SIMD_CLONES
#define DISTRT_ARITHMETIC_CLONES
#endif

// Elements per parallel chunk for cheap elementwise work.
constexpr int64_t kElementwiseGrain = 1 << 15;

// y[i] = x[i] * Phi(x[i]), the exact GELU (float through ErfF32); `gelu`
// and matmul's epilogue (kernels_unary.cpp).
void GeluErfLoop(const float* x, float* y, int64_t n);
void GeluErfLoop(const double* x, double* y, int64_t n);

// Copies a window (offsets/sizes) out of a row-major source of shape
// `src_shape` into a contiguous destination; element size in bytes.
void CopyWindow(const uint8_t* src, const Shape& src_shape, const Shape& offsets,
                const Shape& sizes, size_t elem, uint8_t* dst);
// The inverse: writes a contiguous `sizes` block into a window of dst.
void PasteWindow(const uint8_t* src, const Shape& sizes, uint8_t* dst, const Shape& dst_shape,
                 const Shape& offsets, size_t elem);

// Converts n elements between dtypes (numpy-like: float->int truncates,
// ->bool is x != 0, NaN->int gives the type's minimum).
// f32 to and from bf16/f16 take the vectorised conversions, split over
// `pool` (may be null).
Status CastBuffer(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n,
                  ThreadPool* pool = nullptr);

// y = x.transpose(perm) for a row-major x of `shape`, by element bytes.
void TransposeBytes(const uint8_t* x, const Shape& shape, const std::vector<int64_t>& perm,
                    size_t elem, uint8_t* y, ThreadPool* pool);
// Validates a permutation of [0, rank).
Status CheckPerm(const std::vector<int64_t>& perm, int rank);

// Sets OpenBLAS to one thread, once per process (distrt parallelises GEMMs
// over its own per-rank pool instead; see docs/runtime.md).
void ConfigureBlasThreads();

// C[m x n] = A[m x k] * B[k x n] (row-major, contiguous), single-threaded.
void GemmRowMajor(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n);
void GemmRowMajor(const double* a, const double* b, double* c, int64_t m, int64_t k, int64_t n);
// C[m x n] (+)= op(A) * op(B), row-major with leading dimensions,
// single-threaded: op(A) is A [m x k], or with trans_a the transpose of A
// stored [k x m]; likewise B. `accumulate` adds to C instead of
// overwriting it.
void GemmRowMajorEx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                    int64_t lda, const float* b, int64_t ldb, bool accumulate, float* c,
                    int64_t ldc);
void GemmRowMajorEx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a,
                    int64_t lda, const double* b, int64_t ldb, bool accumulate, double* c,
                    int64_t ldc);

}  // namespace distrt

#endif  // DISTRT_SRC_KERNEL_UTIL_H_
