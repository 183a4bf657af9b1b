// matmul with numpy semantics: 1-D promotion, broadcast batch dims. Floats go
// to OpenBLAS (single-threaded inside; distrt splits the work across its own
// pool, see docs/runtime.md), integers use a plain loop.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "gemm_onednn.h"
#include "kernel_util.h"
#include "matmul_shape.h"

namespace distrt {

void ConfigureBlasThreads() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

std::string BlasCoreName() {
  ConfigureBlasThreads();
  const char* name = openblas_get_corename();
  return name ? name : "";
}

std::string OneDnnGemmName() { return OneDnnEnabled() ? PackedWeights::KernelName() : ""; }

namespace {

Status VerifyMatmul(const VerifyContext& ctx) {
  if (ctx.inputs[0].dtype != ctx.inputs[1].dtype) {
    return InvalidArgumentError("matmul operands have different dtypes");
  }
  MatmulFlags f;
  MatmulShape s;
  DISTRT_RETURN_IF_ERROR(
      ProductShape(ctx.attrs(), ctx.inputs[0].shape, ctx.inputs[1].shape, &f, &s));
  bool gelu;
  DISTRT_RETURN_IF_ERROR(CheckEpilogue(ctx.attrs(), ctx.inputs, s, &gelu));
  return CheckOutputType(ctx.outputs[0], TensorType{ctx.inputs[0].dtype, s.out});
}

// out[r, :] = gelu?(out[r, :] + bias) for every row: the same operations,
// in the same order, as the add and gelu kernels would apply.
template <typename T>
void ApplyEpilogue(T* out, int64_t rows, int64_t n, const T* bias, bool gelu, ThreadPool* pool) {
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, n));
  ParallelFor(pool, rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* row = out + r * n;
      if (bias != nullptr)
        for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
      if (gelu) GeluErfLoop(row, row, n);
    }
  });
}

// Products smaller than this many multiply-adds (about 20 us of work) stay
// with OpenBLAS, whose call costs less: on the test GPT (32 x 64 x 192)
// oneDNN's matmuls took 0.090 ms per run against OpenBLAS's 0.069.
constexpr int64_t kOneDnnMinWork = int64_t{1} << 20;

// C[m x n] (+)= op(A)[m x k] * op(B)[k x n], row-major, with leading
// dimensions (a block of rows or columns of C is a strided view); op
// transposes the stored matrix when ta / tb; `accumulate` adds to C.
// `product_work`: the multiply-adds of the whole product when this is a
// thread's block of it (0: this call's), so that every block goes to the
// library the whole product would, and rounds as it would.
template <typename T>
void GemmStrided(const T* a, int64_t lda, bool ta, const T* b, int64_t ldb, bool tb, T* c,
                 int64_t ldc, int64_t m, int64_t k, int64_t n, bool accumulate = false,
                 int64_t product_work = 0) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  const auto op_a = ta ? CblasTrans : CblasNoTrans, op_b = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same<T, float>::value) {
    // oneDNN's kernels beat OpenBLAS's on the machines measured, with
    // either operand transposed; accumulation and tiny products stay with
    // OpenBLAS. See docs/runtime.md, "Matmul".
    if (!accumulate && (product_work > 0 ? product_work : m * k * n) >= kOneDnnMinWork &&
        OneDnnGemm(a, lda, ta, b, ldb, tb, c, ldc, m, k, n))
      return;
    cblas_sgemm(CblasRowMajor, op_a, op_b, static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(lda), b,
                static_cast<blasint>(ldb), accumulate ? 1.0f : 0.0f, c, static_cast<blasint>(ldc));
  } else if constexpr (std::is_same<T, double>::value) {
    cblas_dgemm(CblasRowMajor, op_a, op_b, static_cast<blasint>(m), static_cast<blasint>(n),
                static_cast<blasint>(k), 1.0, a, static_cast<blasint>(lda), b,
                static_cast<blasint>(ldb), accumulate ? 1.0 : 0.0, c, static_cast<blasint>(ldc));
  } else {
    for (int64_t i = 0; i < m; ++i) {
      T* row = c + i * ldc;
      if (!accumulate) std::fill(row, row + n, T(0));
      for (int64_t p = 0; p < k; ++p) {
        const T av = ta ? a[p * lda + i] : a[i * lda + p];
        for (int64_t j = 0; j < n; ++j)
          row[j] = WrapAdd(row[j], WrapMul(av, tb ? b[j * ldb + p] : b[p * ldb + j]));
      }
    }
  }
}

// C[m x n] = A[m x k] * B[k x n], row-major, contiguous.
template <typename T>
void Gemm(const T* a, const T* b, T* c, int64_t m, int64_t k, int64_t n) {
  GemmStrided(a, k, false, b, n, false, c, n, m, k, n);
}

// Rows of a thread's block of a product: enough to be worth a thread (about
// 2^20 multiply-adds), and 32 at least, so that every block has at least 16
// rows (ParallelFor's chunks are at least half the grain). oneDNN's blocked
// kernels round each row of a block of 16 rows or more as they round it in
// the whole product (Gemm.SameBitsOnAnyThreadCount); blocks of 1 and 7
// rows of a transposed lhs with k = 3072 rounded otherwise on a Zen 5.
int64_t RowGrain(int64_t k, int64_t n) {
  return std::max<int64_t>(32, (int64_t{1} << 20) / std::max<int64_t>(1, k * n));
}

// Columns of a thread's block of a product with few rows: about 2^20
// multiply-adds, and at least 32 columns (oneDNN's blocked kernel takes
// them).
int64_t ColumnGrain(int64_t k, int64_t rows) {
  return std::max<int64_t>(64, (int64_t{1} << 20) / std::max<int64_t>(1, k * rows));
}

// Fewer rows than this per thread is "a few rows" (a few tokens against a
// weight): threads then split a product's columns, not its rows.
constexpr int64_t kFewRowsPerThread = 32;

// Runs gemm(a, b, c, rows, cols) on each thread's block of the tall product
// [rows x k] x op(B) [k x n] (A transposed when f.ta, B when f.tb; a and b
// point at the block's first row and column, c at its first element, the
// leading dimensions the whole product's: lda, ldb, n). Rows are split over
// the threads; columns when there are fewer rows than columns and either
// the library packs the shared operand per call (OpenBLAS: each thread then
// packs only its columns) or there are too few rows for every thread.
// oneDNN runs a block of columns on dense copies of its operands
// (gemm_onednn.cpp).
template <typename T, typename BlockGemm>
void SplitTallProduct(const T* a, const T* b, T* c, int64_t rows, int64_t k, int64_t n,
                      const MatmulFlags& f, bool onednn, ThreadPool* pool, BlockGemm gemm) {
  const int threads = pool ? pool->size() : 1;
  const int64_t lda = f.ta ? rows : k, ldb = f.tb ? k : n;
  if (threads > 1 && rows < n && (!onednn || rows < kFewRowsPerThread * threads)) {
    ParallelFor(pool, n, ColumnGrain(k, rows), [&](int64_t j0, int64_t j1) {
      gemm(a, f.tb ? b + j0 * ldb : b + j0, c + j0, rows, j1 - j0);
    });
    return;
  }
  ParallelFor(pool, rows, RowGrain(k, n), [&](int64_t r0, int64_t r1) {
    gemm(f.ta ? a + r0 : a + r0 * lda, b, c + r0 * n, r1 - r0, n);
  });
}

// The element offsets of every batch's a and b matrices (broadcast batch
// dimensions), a batch's matrices being dense.
void BatchOffsets(const MatmulShape& s, std::vector<int64_t>* a_off, std::vector<int64_t>* b_off) {
  const int64_t batches = NumElements(s.batch);
  a_off->assign(static_cast<size_t>(batches), 0);
  b_off->assign(static_cast<size_t>(batches), 0);
  BroadcastPlan plan = MakeBroadcastPlan(s.batch, {s.a_batch, s.b_batch});
  const int64_t sa = plan.strides[0].back(), sb = plan.strides[1].back();
  ForEachRow(plan, 0, plan.rows, [&](int64_t r, const int64_t* off) {
    for (int64_t i = 0; i < plan.inner; ++i) {
      (*a_off)[static_cast<size_t>(r * plan.inner + i)] = (off[0] + i * sa) * s.m * s.k;
      (*b_off)[static_cast<size_t>(r * plan.inner + i)] = (off[1] + i * sb) * s.k * s.n;
    }
  });
}

template <typename T>
void BatchedGemm(const T* a, const T* b, T* c, const MatmulShape& s, const MatmulFlags& f,
                 ThreadPool* pool) {
  const int64_t m = s.m, k = s.k, n = s.n;
  const int64_t batches = NumElements(s.batch);
  const int64_t a_batches = NumElements(s.a_batch);
  const int64_t b_batches = NumElements(s.b_batch);
  // Small batched products (attention of a few tokens) take less time than
  // waking a worker: run them inline.
  if (batches * m * k * n < (int64_t{1} << 18)) pool = nullptr;
  const int threads = pool ? pool->size() : 1;
  // Rows per chunk so a chunk is worth a thread (~ 2^20 multiply-adds).
  const int64_t row_grain = RowGrain(k, n);
  const int64_t work = batches * m * k * n;

  // b shared by every batch and a not broadcast: one tall GEMM (the only
  // case with transposed operands: b a matrix, a a matrix when transposed).
  if (b_batches == 1 && a_batches == batches) {
    const int64_t rows = batches * m;
    const int64_t lda = f.ta ? rows : k, ldb = f.tb ? k : n;
    SplitTallProduct(a, b, c, rows, k, n, f, std::is_same<T, float>::value && OneDnnEnabled(), pool,
                     [&](const T* pa, const T* pb, T* pc, int64_t pm, int64_t pn) {
                       GemmStrided(pa, lda, f.ta, pb, ldb, f.tb, pc, n, pm, k, pn, false, work);
                     });
    return;
  }
  std::vector<int64_t> a_off, b_off;
  BatchOffsets(s, &a_off, &b_off);
  if (batches >= threads || m < 2 * row_grain) {
    ParallelFor(threads > 1 ? pool : nullptr, batches, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) Gemm(a + a_off[i], b + b_off[i], c + i * m * n, m, k, n);
    });
    return;
  }
  for (int64_t i = 0; i < batches; ++i) {  // few big matrices: split rows
    const T* pa = a + a_off[i];
    const T* pb = b + b_off[i];
    T* pc = c + i * m * n;
    ParallelFor(pool, m, row_grain, [&](int64_t r0, int64_t r1) {
      GemmStrided(pa + r0 * k, k, false, pb, n, false, pc + r0 * n, n, r1 - r0, k, n, false,
                  m * k * n);
    });
  }
}

// The first failure among the threads of one product.
struct FirstError {
  std::mutex mu;
  Status status;
  void Note(const Status& st) {
    if (st.ok()) return;
    std::lock_guard<std::mutex> lock(mu);
    if (status.ok()) status = st;
  }
};

// How a matmul multiplies by a packed constant weight, from shapes alone.
struct PackPlan {
  int64_t rows = 0, k = 0, n = 0, ldb = 0;
  bool tb = false;
  int slabs = 1;  // column slabs (one per thread when there are few rows)
};

// A packed weight with its geometry, kept across runs with the persistent
// version it was packed at.
struct MatmulState : KernelState {
  PackPlan plan;
  std::unique_ptr<PackedWeights> packed;
  uint64_t version = 0;
};

// Whether [rows x k] x op(B) of `dtype` packs B: a plain lhs, a matrix rhs,
// enough work for oneDNN, and a kernel that pays for it
// (PackedWeights::Worthwhile).
bool PlanPacking(const MatmulShape& s, const MatmulFlags& f, DType dtype, int pool_threads,
                 PackPlan* plan) {
  const int64_t rows = NumElements(s.batch) * s.m, k = s.k, n = s.n;
  if (f.ta || rows * k * n < kOneDnnMinWork || NumElements(s.b_batch) != 1 ||
      NumElements(s.a_batch) != NumElements(s.batch) || !PackedWeights::Worthwhile(k, n, dtype))
    return false;
  plan->rows = rows;
  plan->k = k;
  plan->n = n;
  plan->tb = f.tb;
  plan->ldb = f.tb ? k : n;
  // Few rows (decoding a few tokens): each thread takes its own columns,
  // packed as a slab of their own; otherwise threads split the rows.
  plan->slabs = pool_threads > 1 && rows < kFewRowsPerThread * pool_threads ? pool_threads : 1;
  return true;
}

// [rows x k] x op(B) with B a constant the executor holds, by the packed
// copy the instruction's prepare made (PrepareMatmul), packed again first
// if WritePersistent changed B. Sets `*done` when it computed the product;
// otherwise the caller's GEMM runs.
Status PackedGemm(KernelContext& ctx, const Tensor& a_tensor, const Tensor& b, Tensor* out,
                  bool* done) {
  *done = false;
  auto* state = static_cast<MatmulState*>(ctx.prepared);  // only PrepareMatmul's
  if (state == nullptr) return OkStatus();
  // (A weight whose bytes were freed is no training state: WritePersistent
  // cannot have changed it.)
  if (state->version != ctx.persistent_version && b.raw() != nullptr) {
    DISTRT_RETURN_IF_ERROR(state->packed->Repack(b.raw()));
    state->version = ctx.persistent_version;
  }
  const size_t es = DTypeSize(a_tensor.dtype());
  const uint8_t* a = static_cast<const uint8_t*>(a_tensor.raw());
  uint8_t* c = static_cast<uint8_t*>(out->raw());
  ThreadPool* pool = ctx.pool;
  const int64_t rows = state->plan.rows, k = state->plan.k, n = state->plan.n;
  const PackedWeights& w = *state->packed;
  FirstError first_error;
  auto note = [&](const Status& st) { first_error.Note(st); };
  if (w.slabs() > 1) {
    ParallelFor(pool, w.slabs(), 1, [&](int64_t s0, int64_t s1) {
      for (int64_t i = s0; i < s1; ++i) {
        const int slab = static_cast<int>(i);
        note(w.Multiply(slab, a, k, rows, c + static_cast<size_t>(w.slab_begin(slab)) * es, n));
      }
    });
  } else {
    ParallelFor(pool, rows, 8, [&](int64_t r0, int64_t r1) {
      note(w.Multiply(0, a + static_cast<size_t>(r0 * k) * es, k, r1 - r0,
                      c + static_cast<size_t>(r0 * n) * es, n));
    });
  }
  DISTRT_RETURN_IF_ERROR(first_error.status);
  *done = true;
  return OkStatus();
}

// At load: packs a constant rhs now, once per weight and geometry (the
// matmuls of every microbatch reading it share the copy, kept in the
// executor's states under the weight's buffer), and tells the executor the
// kernel will not read the weight's bytes again.
Status PrepareMatmul(PrepareContext& ctx) {
  // f32 products, and bf16 ones that run in bf16 (a bf16 matmul reaches
  // this prepare only then: otherwise PrepareViaF32 hands it f32 copies).
  const DType dtype = ctx.inputs[0].dtype;
  if (ctx.constant_inputs.size() < 2 || ctx.constant_inputs[1] == nullptr ||
      ctx.inputs[1].dtype != dtype ||
      !(dtype == DType::kF32 || (dtype == DType::kBF16 && ctx.inputs.size() == 2)))
    return OkStatus();
  MatmulFlags f;
  MatmulShape s;
  DISTRT_RETURN_IF_ERROR(
      ProductShape(ctx.attrs(), ctx.inputs[0].shape, ctx.inputs[1].shape, &f, &s));
  PackPlan plan;
  if (!PlanPacking(s, f, dtype, ctx.threads, &plan)) return OkStatus();
  const Tensor& b = *ctx.constant_inputs[1];
  std::shared_ptr<KernelState>& slot = ctx.states->Slot(
      StrCat("matmul packed ", reinterpret_cast<uintptr_t>(b.buffer().get()), " ", plan.ldb, " ",
             plan.tb, " ", plan.k, " ", plan.n, " ", plan.slabs, " ", DTypeName(dtype)));
  if (slot == nullptr) {
    auto made = std::make_shared<MatmulState>();
    made->plan = plan;
    DISTRT_RETURN_IF_ERROR(PackedWeights::Create(b.raw(), dtype, plan.ldb, plan.tb, plan.k, plan.n,
                                                 plan.slabs, ctx.state_tracker, &made->packed));
    slot = std::move(made);
  }
  ctx.prepared = slot;
  ctx.data_unneeded[1] = true;
  return OkStatus();
}

// A bf16 product without bias or epilogue runs in bf16 where oneDNN does it
// (OneDnnBF16Gemms); the others through f32 (via_f32.h).
bool MatmulInBF16(const VerifyContext& ctx) {
  std::string epilogue;
  return OneDnnBF16Gemms() && ctx.inputs.size() == 2 && ctx.inputs[0].dtype == DType::kBF16 &&
         ctx.inputs[1].dtype == DType::kBF16 && ctx.outputs.size() == 1 &&
         ctx.outputs[0].dtype == DType::kBF16 &&
         ctx.attrs().GetString("epilogue", "", &epilogue).ok() && epilogue.empty();
}

// BatchedGemm's cases for bf16 operands, each matrix product one oneDNN
// call on the thread that runs it.
Status BatchedGemmBF16(const uint16_t* a, const uint16_t* b, uint16_t* c, const MatmulShape& s,
                       const MatmulFlags& f, ThreadPool* pool) {
  const int64_t m = s.m, k = s.k, n = s.n;
  const int64_t batches = NumElements(s.batch);
  if (batches * m * k * n < (int64_t{1} << 18)) pool = nullptr;
  FirstError first_error;
  auto note = [&](const Status& st) { first_error.Note(st); };
  if (NumElements(s.b_batch) == 1 && NumElements(s.a_batch) == batches) {
    const int64_t rows = batches * m;
    const int64_t lda = f.ta ? rows : k, ldb = f.tb ? k : n;
    SplitTallProduct(
        a, b, c, rows, k, n, f, true, pool,
        [&](const uint16_t* pa, const uint16_t* pb, uint16_t* pc, int64_t pm, int64_t pn) {
          note(OneDnnGemmBF16(pa, lda, f.ta, pb, ldb, f.tb, pc, n, pm, k, pn));
        });
    return first_error.status;
  }
  std::vector<int64_t> a_off, b_off;
  BatchOffsets(s, &a_off, &b_off);
  ParallelFor(pool, batches, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i)
      note(OneDnnGemmBF16(a + a_off[i], k, false, b + b_off[i], n, false, c + i * m * n, n, m, k,
                          n));
  });
  return first_error.status;
}

Status RunMatmul(KernelContext& ctx) {
  const Tensor &a = ctx.input(0), &b = ctx.input(1);
  if (a.dtype() != b.dtype()) {
    return InvalidArgumentError("matmul operands have different dtypes ", DTypeName(a.dtype()),
                                " and ", DTypeName(b.dtype()));
  }
  MatmulFlags f;
  MatmulShape s;
  DISTRT_RETURN_IF_ERROR(ProductShape(ctx.attrs(), a.shape(), b.shape(), &f, &s));
  std::vector<TensorType> types;
  for (const Tensor* t : ctx.inputs) types.push_back(t->type());
  bool gelu;
  DISTRT_RETURN_IF_ERROR(CheckEpilogue(ctx.attrs(), types, s, &gelu));
  const Tensor* bias = ctx.num_inputs() > 2 ? &ctx.input(2) : nullptr;
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{a.dtype(), s.out}));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  if (out->num_elements() == 0) return OkStatus();
  ConfigureBlasThreads();
  // f32 and bf16 products (bf16 only as MatmulInBF16 allows) may run on
  // the weight packed by PrepareMatmul.
  bool packed = false;
  if (a.dtype() == DType::kF32 || a.dtype() == DType::kBF16) {
    if (a.dtype() == DType::kBF16 && (bias || gelu))
      return InternalError("matmul: a bf16 epilogue runs through f32");
    DISTRT_RETURN_IF_ERROR(PackedGemm(ctx, a, b, out, &packed));
    if (!packed && b.raw() == nullptr)
      return InternalError("matmul: the weight's bytes were released but it is not packed");
  }
  switch (a.dtype()) {
    case DType::kF32:
      if (!packed)
        BatchedGemm(a.data<float>(), b.data<float>(), out->data<float>(), s, f, ctx.pool);
      if (bias || gelu)
        ApplyEpilogue(out->data<float>(), out->num_elements() / s.n, s.n,
                      bias ? bias->data<float>() : nullptr, gelu, ctx.pool);
      break;
    case DType::kBF16:
      if (packed) return OkStatus();
      return BatchedGemmBF16(a.data<uint16_t>(), b.data<uint16_t>(), out->data<uint16_t>(), s, f,
                             ctx.pool);
    case DType::kF64:
      BatchedGemm(a.data<double>(), b.data<double>(), out->data<double>(), s, f, ctx.pool);
      if (bias || gelu)
        ApplyEpilogue(out->data<double>(), out->num_elements() / s.n, s.n,
                      bias ? bias->data<double>() : nullptr, gelu, ctx.pool);
      break;
    case DType::kI64:
      BatchedGemm(a.data<int64_t>(), b.data<int64_t>(), out->data<int64_t>(), s, f, ctx.pool);
      break;
    case DType::kI32:
      BatchedGemm(a.data<int32_t>(), b.data<int32_t>(), out->data<int32_t>(), s, f, ctx.pool);
      break;
    default:
      return UnimplementedError("matmul does not support dtype ", DTypeName(a.dtype()));
  }
  return OkStatus();
}

// ---- det -------------------------------------------------------------------------

Status DetShape(const TensorType& in, TensorType* out) {
  const size_t r = in.shape.size();
  if (r < 2 || in.shape[r - 1] != in.shape[r - 2]) {
    return InvalidArgumentError("det needs square matrices [*, M, M], got ", in.ToString());
  }
  out->dtype = in.dtype;
  out->shape.assign(in.shape.begin(), in.shape.end() - 2);
  return OkStatus();
}

Status VerifyDet(const VerifyContext& ctx) {
  TensorType t;
  DISTRT_RETURN_IF_ERROR(DetShape(ctx.inputs[0], &t));
  return CheckOutputType(ctx.outputs[0], t);
}

// The determinant of an m x m matrix by Gaussian elimination with partial
// pivoting, in double.
double Determinant(std::vector<double>& a, int64_t m) {
  double det = 1;
  for (int64_t c = 0; c < m; ++c) {
    int64_t p = c;
    for (int64_t r = c + 1; r < m; ++r) {
      if (std::fabs(a[r * m + c]) > std::fabs(a[p * m + c])) p = r;
    }
    if (a[p * m + c] == 0) return 0;
    if (p != c) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[p * m + j], a[c * m + j]);
      det = -det;
    }
    det *= a[c * m + c];
    for (int64_t r = c + 1; r < m; ++r) {
      const double f = a[r * m + c] / a[c * m + c];
      for (int64_t j = c; j < m; ++j) a[r * m + j] -= f * a[c * m + j];
    }
  }
  return det;
}

Status RunDet(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  TensorType t;
  DISTRT_RETURN_IF_ERROR(DetShape(x.type(), &t));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], t));
  Tensor* out;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &out));
  const int64_t m = x.dim(x.rank() - 1);
  const int64_t count = out->num_elements();
  std::vector<double> a(static_cast<size_t>(m * m));
  DISTRT_DISPATCH_FLOAT(x.dtype(), "det", {
    for (int64_t i = 0; i < count; ++i) {
      const T* src = x.data<T>() + i * m * m;
      for (int64_t j = 0; j < m * m; ++j) a[j] = static_cast<double>(src[j]);
      out->data<T>()[i] = static_cast<T>(Determinant(a, m));
    }
  });
  return OkStatus();
}

}  // namespace

void GemmRowMajor(const float* a, const float* b, float* c, int64_t m, int64_t k, int64_t n) {
  ConfigureBlasThreads();
  Gemm(a, b, c, m, k, n);
}
void GemmRowMajor(const double* a, const double* b, double* c, int64_t m, int64_t k, int64_t n) {
  ConfigureBlasThreads();
  Gemm(a, b, c, m, k, n);
}

void GemmRowMajorEx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                    int64_t lda, const float* b, int64_t ldb, bool accumulate, float* c,
                    int64_t ldc) {
  ConfigureBlasThreads();
  GemmStrided(a, lda, trans_a, b, ldb, trans_b, c, ldc, m, k, n, accumulate);
}
void GemmRowMajorEx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a,
                    int64_t lda, const double* b, int64_t ldb, bool accumulate, double* c,
                    int64_t ldc) {
  ConfigureBlasThreads();
  GemmStrided(a, lda, trans_a, b, ldb, trans_b, c, ldc, m, k, n, accumulate);
}

void RegisterMatmulKernels(KernelRegistry& r) {
  KernelDef matmul{"matmul", 2, 3, 1, RunMatmul, VerifyMatmul};
  matmul.prepare = PrepareMatmul;
  matmul.half_native_for = MatmulInBF16;
  matmul.flops = MatmulFlops;
  r.Add(matmul);
  r.Add({"det", 1, 1, 1, RunDet, VerifyDet});
}

}  // namespace distrt
