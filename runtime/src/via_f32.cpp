#include "via_f32.h"

#include <atomic>
#include <cstdio>
#include <cstring>

#include "kernel_util.h"
#include "portable/hd.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DISTRT_HAS_F16C_PATH 1
#endif

namespace distrt {

namespace {

// What PrepareViaF32 made: the f32 kernel's own state (may be null), and
// per 16-bit constant input its f32 form: the widened copy when the f32
// kernel reads the constant every run, or a tensor of its type without
// bytes when the kernel's state holds all it needs (the constant's own bytes
// may be gone by the first run). Both stand for the constant while no
// WritePersistent changed it (`version`).
struct ViaF32State : KernelState {
  std::shared_ptr<KernelState> inner;
  std::vector<Tensor> constant;
  uint64_t version = 0;
};

// A constant's f32 copy, shared by the instructions that read it while they
// prepare (one packed copy per weight, as for f32 weights).
struct WideConstant : KernelState {
  Tensor value;
};

// Elements per parallel chunk of a conversion (a few cache lines' worth of
// work is not worth a thread).
constexpr int64_t kConvertGrain = 1 << 16;

DISTRT_SIMD_CLONES void WidenBF16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(x[i]) << 16;
    std::memcpy(&y[i], &bits, 4);
  }
}

DISTRT_SIMD_CLONES void NarrowBF16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = portable::FloatToBF16Bits(x[i]);
}

void WidenF16Scalar(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = portable::HalfBitsToFloat(x[i]);
}

void NarrowF16Scalar(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = portable::FloatToHalfBits(x[i]);
}

#ifdef DISTRT_HAS_F16C_PATH
// F16C converts 8 halves per instruction, rounding to nearest even as the
// scalar conversions do (x86-64-v3 CPUs all have it).
__attribute__((target("avx2,f16c"))) void WidenF16C(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
  WidenF16Scalar(x + i, y + i, n - i);
}

__attribute__((target("avx2,f16c"))) void NarrowF16C(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  NarrowF16Scalar(x + i, y + i, n - i);
}

bool HasF16C() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  return has;
}
#endif

void WidenF16(const uint16_t* x, float* y, int64_t n) {
#ifdef DISTRT_HAS_F16C_PATH
  if (HasF16C()) return WidenF16C(x, y, n);
#endif
  WidenF16Scalar(x, y, n);
}

void NarrowF16(const float* x, uint16_t* y, int64_t n) {
#ifdef DISTRT_HAS_F16C_PATH
  if (HasF16C()) return NarrowF16C(x, y, n);
#endif
  NarrowF16Scalar(x, y, n);
}

}  // namespace

bool RunsViaF32(const KernelDef& def, const VerifyContext& ctx) {
  if (def.device != DeviceKind::kCpu || def.half_native || def.communicates) return false;
  bool half = false;
  for (const TensorType& t : ctx.inputs) half = half || IsHalfFloat(t.dtype);
  for (const TensorType& t : ctx.outputs) half = half || IsHalfFloat(t.dtype);
  return half && !(def.half_native_for && def.half_native_for(ctx));
}

TensorType WidenedType(const TensorType& t) {
  return IsHalfFloat(t.dtype) ? TensorType{DType::kF32, t.shape} : t;
}

Status VerifyViaF32(const KernelDef& def, const VerifyContext& ctx) {
  if (def.verify == nullptr) return OkStatus();
  VerifyContext wide = ctx;
  for (TensorType& t : wide.inputs) t = WidenedType(t);
  for (TensorType& t : wide.outputs) t = WidenedType(t);
  return def.verify(wide);
}

Status PrepareViaF32(const KernelDef& def, PrepareContext& ctx) {
  if (def.prepare == nullptr) return OkStatus();
  const size_t n = ctx.inputs.size();
  PrepareContext inner;
  inner.inst = ctx.inst;
  inner.threads = ctx.threads;
  inner.states = ctx.states;
  inner.state_tracker = ctx.state_tracker;
  inner.constant_inputs.assign(n, nullptr);
  inner.data_unneeded.assign(n, false);
  for (size_t k = 0; k < n; ++k) {
    inner.inputs.push_back(WidenedType(ctx.inputs[k]));
    const Tensor* c = ctx.constant_inputs[k];
    if (c == nullptr || !IsHalfFloat(c->dtype())) {
      inner.constant_inputs[k] = c;
      continue;
    }
    std::shared_ptr<KernelState>& slot = ctx.states->Slot(
        StrCat("f32 copy of ", reinterpret_cast<uintptr_t>(c->buffer().get())));
    if (slot == nullptr) {
      auto made = std::make_shared<WideConstant>();
      DISTRT_RETURN_IF_ERROR(Tensor::Allocate(DType::kF32, c->shape(), &made->value,
                                              ctx.state_tracker, /*zero=*/false));
      WidenToF32(c->raw(), c->dtype(), made->value.data<float>(), c->num_elements(), nullptr);
      slot = std::move(made);
    }
    inner.constant_inputs[k] = &static_cast<WideConstant*>(slot.get())->value;
  }
  DISTRT_RETURN_IF_ERROR(def.prepare(inner));
  auto state = std::make_shared<ViaF32State>();
  state->inner = std::move(inner.prepared);
  state->constant.resize(n);
  bool kept = state->inner != nullptr;
  for (size_t k = 0; k < n; ++k) {
    const bool half_constant =
        ctx.constant_inputs[k] != nullptr && IsHalfFloat(ctx.inputs[k].dtype);
    if (inner.data_unneeded[k]) {
      ctx.data_unneeded[k] = true;
      if (!half_constant) continue;
      // Reserved, never touched, then freed: the f32 type without the bytes.
      DISTRT_RETURN_IF_ERROR(Tensor::Allocate(DType::kF32, ctx.inputs[k].shape,
                                              &state->constant[k], nullptr, /*zero=*/false));
      state->constant[k].buffer()->ReleaseData();
      kept = true;
    } else if (half_constant) {
      // Read every run (a weight the GEMM does not pack on this CPU): keep
      // the f32 copy instead of widening it each run; the 16-bit bytes may
      // go. The model then holds f32 weights, as an f32 program does.
      state->constant[k] = *inner.constant_inputs[k];
      ctx.data_unneeded[k] = true;
      kept = true;
    }
  }
  if (kept) ctx.prepared = std::move(state);
  return OkStatus();
}

Status RunViaF32(const KernelDef& def, KernelContext& ctx) {
  const auto* state = static_cast<const ViaF32State*>(ctx.prepared);  // only PrepareViaF32's
  const int n = ctx.num_inputs();
  KernelContext inner;
  inner.inst = ctx.inst;
  inner.device = ctx.device;
  inner.pool = ctx.pool;
  inner.comm = ctx.comm;
  inner.rank = ctx.rank;
  inner.tag_offset = ctx.tag_offset;
  inner.tracker = ctx.tracker;
  inner.persistent_version = ctx.persistent_version;
  inner.prepared = state != nullptr ? state->inner.get() : nullptr;
  inner.donatable.assign(static_cast<size_t>(n), false);
  std::vector<Tensor> wide(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    const Tensor& x = ctx.input(k);
    const size_t kk = static_cast<size_t>(k);
    if (!IsHalfFloat(x.dtype())) {
      inner.inputs.push_back(&x);
      inner.donatable[kk] = kk < ctx.donatable.size() && ctx.donatable[kk];
      continue;
    }
    if (state != nullptr && state->constant[kk].defined() &&
        (x.raw() == nullptr ||
         (state->constant[kk].raw() != nullptr && state->version == ctx.persistent_version))) {
      inner.inputs.push_back(&state->constant[kk]);  // widened at load
      continue;
    }
    DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(DType::kF32, x.shape(), &wide[kk]));
    WidenToF32(x.raw(), x.dtype(), wide[kk].data<float>(), x.num_elements(), ctx.pool);
    inner.inputs.push_back(&wide[kk]);
    inner.donatable[kk] = def.in_place_ok;  // only this call holds the copy
  }
  const size_t m = ctx.output_types.size();
  for (const TensorType& t : ctx.output_types) inner.output_types.push_back(WidenedType(t));
  // An optimizer update writes an f32 state in place itself; a 16-bit one
  // is written in place below, when its result is rounded back.
  if (!ctx.write_into.empty()) {
    inner.write_into.assign(m, nullptr);
    for (size_t k = 0; k < m; ++k)
      if (!IsHalfFloat(ctx.output_types[k].dtype)) inner.write_into[k] = ctx.write_into[k];
  }
  std::vector<Tensor> wide_out(m);
  inner.outputs = &wide_out;
  DISTRT_RETURN_IF_ERROR(def.run(inner));
  wide.clear();  // before the outputs are allocated: their memory may be reused
  for (size_t k = 0; k < m; ++k) {
    if (!wide_out[k].defined()) return InternalError("kernel produced no output ", k);
    DISTRT_RETURN_IF_ERROR(CheckOutputType(inner.output_types[k], wide_out[k].type()));
    const TensorType& t = ctx.output_types[k];
    if (!IsHalfFloat(t.dtype)) {
      (*ctx.outputs)[k] = std::move(wide_out[k]);
      continue;
    }
    Tensor* y;
    DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(static_cast<int>(k), &y));
    NarrowFromF32(wide_out[k].data<float>(), y->raw(), t.dtype, y->num_elements(), ctx.pool);
    wide_out[k] = Tensor();
  }
  return OkStatus();
}

int64_t ViaF32ScratchBytes(const std::vector<TensorType>& inputs,
                           const std::vector<TensorType>& outputs) {
  int64_t bytes = 0;
  for (const TensorType& t : inputs)
    if (IsHalfFloat(t.dtype)) bytes += NumElements(t.shape) * 4;
  for (const TensorType& t : outputs)
    if (IsHalfFloat(t.dtype)) bytes += NumElements(t.shape) * 4;
  return bytes;
}

bool CpuHasHalfArithmetic(DType dtype) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
  if (dtype == DType::kBF16)
    return __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
  return __builtin_cpu_supports("avx512fp16");
#else
  (void)dtype;
  return false;
#endif
}

void NoteRunsViaF32(DType dtype) {
  static std::atomic<bool> said_bf16{false}, said_f16{false};
  std::atomic<bool>& said = dtype == DType::kBF16 ? said_bf16 : said_f16;
  if (said.exchange(true)) return;
  const std::string name = DTypeName(dtype);
  if (CpuHasHalfArithmetic(dtype)) {
    std::fprintf(stderr, "distrt: %s ops without a native %s kernel run as f32 with conversions\n",
                 name.c_str(), name.c_str());
  } else {
    std::fprintf(stderr, "distrt: this CPU has no %s instructions; %s ops run as f32 with conversions\n",
                 name.c_str(), name.c_str());
  }
}

void WidenToF32(const void* src, DType src_dtype, float* dst, int64_t n, ThreadPool* pool) {
  const auto* x = static_cast<const uint16_t*>(src);
  const bool bf16 = src_dtype == DType::kBF16;
  ParallelFor(pool, n, kConvertGrain, [&](int64_t lo, int64_t hi) {
    if (bf16) {
      WidenBF16(x + lo, dst + lo, hi - lo);
    } else {
      WidenF16(x + lo, dst + lo, hi - lo);
    }
  });
}

void NarrowFromF32(const float* src, void* dst, DType dst_dtype, int64_t n, ThreadPool* pool) {
  auto* y = static_cast<uint16_t*>(dst);
  const bool bf16 = dst_dtype == DType::kBF16;
  ParallelFor(pool, n, kConvertGrain, [&](int64_t lo, int64_t hi) {
    if (bf16) {
      NarrowBF16(src + lo, y + lo, hi - lo);
    } else {
      NarrowF16(src + lo, y + lo, hi - lo);
    }
  });
}

}  // namespace distrt
