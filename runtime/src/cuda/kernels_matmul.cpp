// matmul on CUDA through cuBLASLt: f32 (exact FP32 unless DISTRT_CUDA_TF32=1
// allows TF32 tensor cores), bf16 and f16 (tensor cores, f32 accumulation)
// and f64; operands stored transposed are read transposed by the GEMM, a
// bias is cuBLASLt's bias epilogue, and the exact GELU runs on the result
// in place (cuBLASLt's GELU epilogue is the tanh approximation). Batched
// products run as one strided-batched GEMM where each operand's batch is
// whole or absent, else one GEMM per batch.
#include <cublasLt.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

#include "cuda/cuda_device.h"
#include "cuda/cuda_util.h"
#include "cuda/elementwise.h"
#include "cuda/gemm.h"
#include "matmul_shape.h"

namespace distrt {
namespace {

#define DISTRT_LT(call, what)                                                        \
  do {                                                                               \
    cublasStatus_t distrt_lt_rc_ = (call);                                           \
    if (distrt_lt_rc_ != CUBLAS_STATUS_SUCCESS)                                      \
      return InternalError(what, " failed: ", cublasGetStatusString(distrt_lt_rc_)); \
  } while (0)

bool AllowTf32() {
  static const bool allow = [] {
    const char* v = std::getenv("DISTRT_CUDA_TF32");
    return v != nullptr && std::string(v) == "1";
  }();
  return allow;
}

bool LtTypes(DType dtype, cudaDataType_t* data, cublasComputeType_t* compute,
             cudaDataType_t* scale) {
  switch (dtype) {
    case DType::kF32:
      *data = CUDA_R_32F;
      *compute = AllowTf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      *scale = CUDA_R_32F;
      return true;
    case DType::kBF16:
      *data = CUDA_R_16BF;
      *compute = CUBLAS_COMPUTE_32F;
      *scale = CUDA_R_32F;
      return true;
    case DType::kF16:
      *data = CUDA_R_16F;
      *compute = CUBLAS_COMPUTE_32F;
      *scale = CUDA_R_32F;
      return true;
    case DType::kF64:
      *data = CUDA_R_64F;
      *compute = CUBLAS_COMPUTE_64F;
      *scale = CUDA_R_64F;
      return true;
    default:
      return false;
  }
}

// One GEMM shape as cuBLASLt sees it (column-major): D[n x m] =
// op(B)[n x k] * op(A)[k x m], the row-major product C = A * B read as its
// transpose.
struct GemmKey {
  DType dtype;
  bool ta, tb, bias;
  int64_t m, k, n, batch, stride_a, stride_b;
  bool operator<(const GemmKey& o) const {
    return std::tie(dtype, ta, tb, bias, m, k, n, batch, stride_a, stride_b) <
           std::tie(o.dtype, o.ta, o.tb, o.bias, o.m, o.k, o.n, o.batch, o.stride_a, o.stride_b);
  }
};

// Descriptors and the algorithm cuBLASLt's heuristic picked for one key,
// made once per device.
struct GemmPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  ~GemmPlan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

class GemmPlans : public KernelState {
 public:
  std::map<GemmKey, std::unique_ptr<GemmPlan>> plans;
};

Status Layout(cublasLtMatrixLayout_t* out, cudaDataType_t t, int64_t rows, int64_t cols,
              int64_t ld, int64_t batch, int64_t stride) {
  DISTRT_LT(cublasLtMatrixLayoutCreate(out, t, static_cast<uint64_t>(rows),
                                       static_cast<uint64_t>(cols), ld),
            "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    DISTRT_LT(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                               sizeof(count)),
              "cublasLtMatrixLayoutSetAttribute");
    DISTRT_LT(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                               &stride, sizeof(stride)),
              "cublasLtMatrixLayoutSetAttribute");
  }
  return OkStatus();
}

Status MakePlan(CudaDevice& dev, const GemmKey& key, std::unique_ptr<GemmPlan>* out) {
  cudaDataType_t data, scale;
  cublasComputeType_t compute;
  if (!LtTypes(key.dtype, &data, &compute, &scale))
    return InvalidArgumentError("no CUDA GEMM for ", DTypeName(key.dtype));
  auto plan = std::make_unique<GemmPlan>();
  DISTRT_LT(cublasLtMatmulDescCreate(&plan->op, compute, scale), "cublasLtMatmulDescCreate");
  // Lt's A is our B (n x k after op), Lt's B is our A (k x m after op).
  const cublasOperation_t op_lt_a = key.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_lt_b = key.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  DISTRT_LT(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_lt_a,
                                           sizeof(op_lt_a)),
            "cublasLtMatmulDescSetAttribute");
  DISTRT_LT(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_lt_b,
                                           sizeof(op_lt_b)),
            "cublasLtMatmulDescSetAttribute");
  if (key.bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    DISTRT_LT(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                             sizeof(epi)),
              "cublasLtMatmulDescSetAttribute");
  }
  // Stored (column-major views of row-major matrices):
  //   B: k x n row-major = n x k col-major (ld n); transposed: n x k
  //      row-major = k x n col-major (ld k).
  //   A: m x k row-major = k x m col-major (ld k); transposed: k x m
  //      row-major = m x k col-major (ld m).
  if (key.tb) {
    DISTRT_RETURN_IF_ERROR(Layout(&plan->a, data, key.k, key.n, key.k, key.batch, key.stride_b));
  } else {
    DISTRT_RETURN_IF_ERROR(Layout(&plan->a, data, key.n, key.k, key.n, key.batch, key.stride_b));
  }
  if (key.ta) {
    DISTRT_RETURN_IF_ERROR(Layout(&plan->b, data, key.m, key.k, key.m, key.batch, key.stride_a));
  } else {
    DISTRT_RETURN_IF_ERROR(Layout(&plan->b, data, key.k, key.m, key.k, key.batch, key.stride_a));
  }
  DISTRT_RETURN_IF_ERROR(Layout(&plan->c, data, key.n, key.m, key.n, key.batch, key.m * key.n));
  cublasLtMatmulPreference_t pref;
  DISTRT_LT(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  size_t ws = dev.workspace_bytes();
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                       sizeof(ws));
  cublasLtMatmulHeuristicResult_t result;
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(dev.lt(), plan->op, plan->a, plan->b, plan->c,
                                                     plan->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    return InternalError("cuBLASLt has no algorithm for a ", DTypeName(key.dtype), " GEMM of ",
                         key.m, "x", key.k, "x", key.n, " (batch ", key.batch, ")");
  }
  plan->algo = result.algo;
  *out = std::move(plan);
  return OkStatus();
}

Status Gemm(CudaDevice& dev, GemmPlans& plans, const GemmKey& key, const void* a, const void* b,
            const void* bias, void* c) {
  std::unique_ptr<GemmPlan>& plan = plans.plans[key];
  if (!plan) DISTRT_RETURN_IF_ERROR(MakePlan(dev, key, &plan));
  if (key.bias) {
    DISTRT_LT(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                             sizeof(bias)),
              "cublasLtMatmulDescSetAttribute (bias)");
  }
  const float one_f = 1.0f, zero_f = 0.0f;
  const double one_d = 1.0, zero_d = 0.0;
  const bool f64 = key.dtype == DType::kF64;
  DISTRT_LT(cublasLtMatmul(dev.lt(), plan->op, f64 ? static_cast<const void*>(&one_d) : &one_f, b,
                           plan->a, a, plan->b, f64 ? static_cast<const void*>(&zero_d) : &zero_f,
                           c, plan->c, c, plan->c, &plan->algo, dev.workspace(),
                           dev.workspace_bytes(), dev.cuda_stream()),
            "cublasLtMatmul");
  return OkStatus();
}

// The device's plans (one cache per CudaDevice, that is per rank).
GemmPlans& PlansOf(CudaDevice& dev) {
  std::shared_ptr<KernelState>& slot = dev.states().Slot("matmul.plans");
  if (!slot) slot = std::make_shared<GemmPlans>();
  return static_cast<GemmPlans&>(*slot);
}

bool AcceptMatmul(const VerifyContext& v) {
  cudaDataType_t data, scale;
  cublasComputeType_t compute;
  if (v.inputs.size() < 2 || !LtTypes(v.inputs[0].dtype, &data, &compute, &scale)) return false;
  if (v.inputs[1].dtype != v.inputs[0].dtype) return false;
  MatmulFlags f;
  MatmulShape s;
  if (!ProductShape(v.attrs(), v.inputs[0].shape, v.inputs[1].shape, &f, &s).ok()) return false;
  bool gelu;
  if (!CheckEpilogue(v.attrs(), v.inputs, s, &gelu).ok()) return false;
  // cuBLASLt takes 32-bit batch counts and leading dimensions.
  return s.m < (int64_t{1} << 31) && s.n < (int64_t{1} << 31) && s.k < (int64_t{1} << 31);
}

int64_t Product(const Shape& s) {
  int64_t p = 1;
  for (int64_t d : s) p *= d;
  return p;
}

Status RunMatmul(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  MatmulFlags f;
  MatmulShape s;
  DISTRT_RETURN_IF_ERROR(ProductShape(ctx.attrs(), a.shape(), b.shape(), &f, &s));
  std::vector<TensorType> types;
  for (int i = 0; i < ctx.num_inputs(); ++i) types.push_back(ctx.input(i).type());
  bool gelu;
  DISTRT_RETURN_IF_ERROR(CheckEpilogue(ctx.attrs(), types, s, &gelu));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], TensorType{a.dtype(), s.out}));
  const void* bias = ctx.num_inputs() > 2 ? ctx.input(2).raw() : nullptr;
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (y->num_elements() == 0) return OkStatus();
  CudaDevice& dev = CudaOf(ctx);
  DISTRT_RETURN_IF_ERROR(dev.Activate());
  if (s.k == 0) {  // an empty sum: zeros (then the bias and epilogue)
    DISTRT_RETURN_IF_ERROR(dev.Zero(y->raw(), y->byte_size()));
  }
  GemmPlans& plans = PlansOf(dev);
  const size_t es = DTypeSize(a.dtype());
  const int64_t batch = Product(s.batch), a_batch = Product(s.a_batch),
                b_batch = Product(s.b_batch);
  GemmKey key{a.dtype(), f.ta, f.tb, bias != nullptr, s.m, s.k, s.n, 1, 0, 0};
  if (s.k > 0) {
    if (b_batch == 1 && !f.ta) {
      // One GEMM with the lhs's batch folded into its rows (its batch is
      // the output's, as the rhs has none).
      key.m = s.m * batch;
      DISTRT_RETURN_IF_ERROR(Gemm(dev, plans, key, a.raw(), b.raw(), bias, y->raw()));
    } else if ((a_batch == batch || a_batch == 1) && (b_batch == batch || b_batch == 1)) {
      key.batch = batch;
      key.stride_a = a_batch == 1 ? 0 : s.m * s.k;
      key.stride_b = b_batch == 1 ? 0 : s.k * s.n;
      DISTRT_RETURN_IF_ERROR(Gemm(dev, plans, key, a.raw(), b.raw(), bias, y->raw()));
    } else {  // batch dims broadcast against each other: one GEMM per batch
      const Shape& out_batch = s.batch;
      Shape ab(out_batch.size(), 1), bb(out_batch.size(), 1);
      std::copy(s.a_batch.begin(), s.a_batch.end(), ab.end() - s.a_batch.size());
      std::copy(s.b_batch.begin(), s.b_batch.end(), bb.end() - s.b_batch.size());
      for (int64_t i = 0; i < batch; ++i) {
        int64_t rest = i, ia = 0, ib = 0, sa = 1, sb = 1;
        for (size_t d = out_batch.size(); d-- > 0;) {
          const int64_t idx = rest % out_batch[d];
          rest /= out_batch[d];
          ia += (ab[d] == 1 ? 0 : idx) * sa;
          ib += (bb[d] == 1 ? 0 : idx) * sb;
          sa *= ab[d];
          sb *= bb[d];
        }
        DISTRT_RETURN_IF_ERROR(Gemm(dev, plans, key, a.data<uint8_t>() + ia * s.m * s.k * es,
                                    b.data<uint8_t>() + ib * s.k * s.n * es, bias,
                                    y->data<uint8_t>() + i * s.m * s.n * es));
      }
    }
  } else if (bias != nullptr) {  // k == 0: y = bias on every row
    const int64_t rows = y->num_elements() / s.n;
    portable::BroadcastMap map;
    portable::MakeBroadcastMap({{rows, s.n}, {s.n}}, {rows, s.n}, &map);
    DISTRT_CUDA(cuda::LaunchBinary(a.dtype(), portable::BinaryOp::kAdd, y->raw(), bias, y->raw(),
                                   y->num_elements(), map, dev.cuda_stream()),
                "bias kernel");
  }
  if (gelu) {
    DISTRT_CUDA(cuda::LaunchUnary(a.dtype(), portable::UnaryOp::kGeluErf, y->raw(), y->raw(),
                                  y->num_elements(), 0.0, dev.cuda_stream()),
                "gelu kernel");
  }
  return OkStatus();
}

}  // namespace

Status CudaBatchedGemm(CudaDevice& dev, DType dtype, const void* a, const void* b, void* c,
                       int64_t batch, int64_t m, int64_t k, int64_t n) {
  DISTRT_RETURN_IF_ERROR(dev.Activate());
  const GemmKey key{dtype, false, false, false, m, k, n, batch, m * k, k * n};
  return Gemm(dev, PlansOf(dev), key, a, b, nullptr, c);
}

void RegisterCudaMatmulKernels(KernelRegistry& r) {
  KernelDef d;
  d.name = "matmul";
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.num_outputs = 1;
  d.run = RunMatmul;
  d.device = DeviceKind::kCuda;
  d.dtypes = DTypeMask({DType::kF32, DType::kBF16, DType::kF16, DType::kF64});
  d.accepts = AcceptMatmul;
  d.flops = MatmulFlops;
  r.Add(std::move(d));
}

}  // namespace distrt
