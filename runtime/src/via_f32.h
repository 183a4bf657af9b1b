// bf16 and f16 instructions on host kernels written for f32: the executor
// widens the instruction's 16-bit float inputs to f32, runs the f32 kernel
// and rounds its 16-bit float outputs back (round to nearest even). That is
// the semantics the runtime gives 16-bit floats everywhere: compute in f32,
// store in the storage dtype. One place for every kernel: the executor
// plans it (RunsViaF32), the loader verifies through it, and the memory
// plan counts its f32 copies (ViaF32ScratchBytes). See docs/runtime.md,
// "bf16 and f16 on the host".
#ifndef DISTRT_SRC_VIA_F32_H_
#define DISTRT_SRC_VIA_F32_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernel.h"

namespace distrt {

inline bool IsHalfFloat(DType d) { return d == DType::kBF16 || d == DType::kF16; }

// Whether host kernel `def` runs instruction `ctx` (its types) through f32:
// some input or output is bf16/f16 and the kernel has no 16-bit path of its
// own (KernelDef::half_native: casts, collectives and to_partial, data
// movement; KernelDef::half_native_for: a bf16 GEMM on a CPU with bf16
// instructions).
bool RunsViaF32(const KernelDef& def, const VerifyContext& ctx);

// `t` with a bf16/f16 dtype replaced by f32; other types unchanged.
TensorType WidenedType(const TensorType& t);

// The kernel's verify on the widened types (what its f32 code will see).
Status VerifyViaF32(const KernelDef& def, const VerifyContext& ctx);
// The kernel's prepare on f32 copies of its bf16/f16 constants (a packed
// f32 weight for the GEMM), made once at load.
Status PrepareViaF32(const KernelDef& def, PrepareContext& ctx);
// Widen, run the f32 kernel, round back. Outputs declared f32 or integer
// keep their dtype.
Status RunViaF32(const KernelDef& def, KernelContext& ctx);
// The f32 copies a run of such an instruction holds besides its declared
// values: one per 16-bit float input and output.
int64_t ViaF32ScratchBytes(const std::vector<TensorType>& inputs,
                           const std::vector<TensorType>& outputs);

// Whether the CPU has bf16 (AVX512-BF16 or AMX) or f16 (AVX512-FP16)
// arithmetic.
bool CpuHasHalfArithmetic(DType dtype);

// Says once per process and dtype (on stderr) that 16-bit floats run as f32
// with conversions on this CPU.
void NoteRunsViaF32(DType dtype);

// n elements of bf16/f16 `src` to f32, and back (round to nearest even,
// NaN stays NaN), split over `pool` (may be null).
void WidenToF32(const void* src, DType src_dtype, float* dst, int64_t n, ThreadPool* pool);
void NarrowFromF32(const float* src, void* dst, DType dst_dtype, int64_t n, ThreadPool* pool);

// Elements widened at a time by ForEachWidenedBlock (a multiple of 8 that
// stays in L1).
constexpr int64_t kWidenedBlock = 2048;

// fn(offset, len, block) for n elements of bf16/f16 `src` in order, each
// block of up to kWidenedBlock of them widened to f32 in a buffer of this
// thread: for kernels that read a 16-bit operand as f32 in one pass.
template <typename F>
void ForEachWidenedBlock(const void* src, DType src_dtype, int64_t n, F fn) {
  float block[kWidenedBlock];
  const char* bytes = static_cast<const char*>(src);
  const int64_t size = static_cast<int64_t>(DTypeSize(src_dtype));
  for (int64_t b = 0; b < n; b += kWidenedBlock) {
    const int64_t len = std::min(kWidenedBlock, n - b);
    WidenToF32(bytes + b * size, src_dtype, block, len, nullptr);
    fn(b, len, block);
  }
}

// For element-wise kernels whose bf16/f16 operands and result have one
// shape: fn(in, out, len) on blocks of up to kWidenedBlock elements, in[k]
// input k's block widened to f32 in this thread's buffers, out rounded back
// into dst. The bits of the f32 kernel run on widened copies of whole
// tensors, without the copies' passes over memory.
template <size_t kInputs, typename F>
void MapWidenedBlocks(const void* const (&src)[kInputs], void* dst, DType dtype, int64_t n, F fn) {
  float in[kInputs][kWidenedBlock];
  float out[kWidenedBlock];
  const float* in_ptrs[kInputs];
  for (size_t k = 0; k < kInputs; ++k) in_ptrs[k] = in[k];
  const int64_t size = static_cast<int64_t>(DTypeSize(dtype));
  for (int64_t b = 0; b < n; b += kWidenedBlock) {
    const int64_t len = std::min(kWidenedBlock, n - b);
    for (size_t k = 0; k < kInputs; ++k)
      WidenToF32(static_cast<const char*>(src[k]) + b * size, dtype, in[k], len, nullptr);
    fn(in_ptrs, out, len);
    NarrowFromF32(out, static_cast<char*>(dst) + b * size, dtype, len, nullptr);
  }
}

}  // namespace distrt

#endif  // DISTRT_SRC_VIA_F32_H_
