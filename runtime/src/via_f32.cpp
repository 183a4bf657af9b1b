#include "via_f32.h"

#include <atomic>
#include <cstdio>
#include <cstring>

#include "kernel_util.h"
#include "portable/hd.h"

namespace distrt {

namespace {

// What PrepareViaF32 made: the f32 kernel's own state, and per input a
// defined f32 tensor without bytes where the f32 kernel said it will not
// read that constant again (its bytes may be gone by the first run).
struct ViaF32State : KernelState {
  std::shared_ptr<KernelState> inner;
  std::vector<Tensor> shell;
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

// portable::FloatToBF16Bits without the branch, so that it vectorises.
DISTRT_SIMD_CLONES void NarrowBF16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &x[i], 4);
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = (bits >> 16) | 0x40u;
    y[i] = static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
  }
}

void WidenF16(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = portable::HalfBitsToFloat(x[i]);
}

void NarrowF16(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = portable::FloatToHalfBits(x[i]);
}

}  // namespace

bool RunsViaF32(const KernelDef& def, const std::vector<TensorType>& inputs,
                const std::vector<TensorType>& outputs) {
  if (def.device != DeviceKind::kCpu || def.half_native || def.communicates) return false;
  for (const TensorType& t : inputs)
    if (IsHalfFloat(t.dtype)) return true;
  for (const TensorType& t : outputs)
    if (IsHalfFloat(t.dtype)) return true;
  return false;
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
      DISTRT_RETURN_IF_ERROR(
          Tensor::Allocate(DType::kF32, c->shape(), &made->value, nullptr, /*zero=*/false));
      WidenToF32(c->raw(), c->dtype(), made->value.data<float>(), c->num_elements(), nullptr);
      slot = std::move(made);
    }
    inner.constant_inputs[k] = &static_cast<WideConstant*>(slot.get())->value;
  }
  DISTRT_RETURN_IF_ERROR(def.prepare(inner));
  if (inner.prepared == nullptr) return OkStatus();
  auto state = std::make_shared<ViaF32State>();
  state->inner = std::move(inner.prepared);
  state->shell.resize(n);
  for (size_t k = 0; k < n; ++k) {
    if (!inner.data_unneeded[k]) continue;
    ctx.data_unneeded[k] = true;
    if (!IsHalfFloat(ctx.inputs[k].dtype)) continue;
    // Reserved, never touched, then freed: the f32 type without the bytes.
    DISTRT_RETURN_IF_ERROR(Tensor::Allocate(DType::kF32, ctx.inputs[k].shape, &state->shell[k],
                                            nullptr, /*zero=*/false));
    state->shell[k].buffer()->ReleaseData();
  }
  ctx.prepared = std::move(state);
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
    if (x.raw() == nullptr && state != nullptr && state->shell[kk].defined()) {
      inner.inputs.push_back(&state->shell[kk]);  // the f32 kernel's state has it
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
    inner.write_into.assign(m, -1);
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
