// CudaExecutor: a rank program with its values in device memory. Device
// kernels for f32 elementwise ops and matmul (cuBLAS), aliases for reshape /
// identity, all_reduce straight through NCCL; every other instruction runs
// through the host fallback: inputs copied to the host, the CPU kernel, the
// outputs copied back. The plan is fixed at Create and shown by Placement().
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <unordered_set>

#include "cuda_kernels.h"
#include "cuda_util.h"
#include "distrt/cuda.h"
#include "exec_common.h"
#include "kernel.h"
#include "thread_pool.h"
#include "weights.h"

namespace distrt {

namespace {

enum class Place { kDevice, kAlias, kNccl, kHost };

const char* PlaceName(Place p) {
  switch (p) {
    case Place::kDevice:
      return "device";
    case Place::kAlias:
      return "alias";
    case Place::kNccl:
      return "nccl";
    case Place::kHost:
      return "host";
  }
  return "?";
}

enum class DevOp { kNone, kUnary, kBinary, kMatmul };

struct Plan {
  Place place = Place::kHost;
  DevOp op = DevOp::kNone;
  cuda::UnaryKind unary = cuda::UnaryKind::kNeg;
  cuda::BinaryKind binary = cuda::BinaryKind::kAdd;
  float alpha = 0;
  cuda::BroadcastDesc desc;
  bool same_shape = false;
  // matmul: C[b] = A[b] x B[b], row-major, strides 0 for a shared operand
  int m = 0, k = 0, n = 0, batches = 0;
  long long stride_a = 0, stride_b = 0;
  ReduceOp reduction = ReduceOp::kSum;  // all_reduce
  Group group;
};

struct DeviceTensor {
  TensorType type;
  std::shared_ptr<DeviceBuffer> buf;
  bool defined() const { return buf != nullptr; }
  void* data() const { return buf ? buf->data() : nullptr; }
  size_t bytes() const {
    return static_cast<size_t>(NumElements(type.shape)) * DTypeSize(type.dtype);
  }
};

Status CublasError(cublasStatus_t s, const char* what) {
  return InternalError(what, " failed: ", cublasGetStatusString(s));
}

bool IsF32(const TensorType& t) { return t.dtype == DType::kF32; }

struct UnaryName {
  const char* name;
  cuda::UnaryKind kind;
};
const UnaryName kUnary[] = {
    {"neg", cuda::UnaryKind::kNeg},     {"abs", cuda::UnaryKind::kAbs},
    {"exp", cuda::UnaryKind::kExp},     {"log", cuda::UnaryKind::kLog},
    {"sqrt", cuda::UnaryKind::kSqrt},   {"reciprocal", cuda::UnaryKind::kReciprocal},
    {"tanh", cuda::UnaryKind::kTanh},   {"sigmoid", cuda::UnaryKind::kSigmoid},
    {"erf", cuda::UnaryKind::kErf},     {"relu", cuda::UnaryKind::kRelu},
    {"sin", cuda::UnaryKind::kSin},     {"cos", cuda::UnaryKind::kCos},
    {"floor", cuda::UnaryKind::kFloor}, {"ceil", cuda::UnaryKind::kCeil},
    {"round", cuda::UnaryKind::kRound}, {"sign", cuda::UnaryKind::kSign},
};
struct BinaryName {
  const char* name;
  cuda::BinaryKind kind;
};
const BinaryName kBinary[] = {
    {"add", cuda::BinaryKind::kAdd}, {"sub", cuda::BinaryKind::kSub},
    {"mul", cuda::BinaryKind::kMul}, {"div", cuda::BinaryKind::kDiv},
    {"pow", cuda::BinaryKind::kPow}, {"max", cuda::BinaryKind::kMax},
    {"min", cuda::BinaryKind::kMin},
};

// Element strides of `s` aligned to the right of `out` (0 where broadcast).
bool AlignedStrides(const Shape& s, const Shape& out, int64_t* strides) {
  const size_t r = out.size(), lead = r - s.size();
  if (s.size() > r) return false;
  int64_t acc = 1;
  for (size_t d = r; d-- > 0;) {
    if (d < lead) {
      strides[d] = 0;
      continue;
    }
    const int64_t dim = s[d - lead];
    if (dim != out[d] && dim != 1) return false;
    strides[d] = (dim == 1 && out[d] != 1) ? 0 : acc;
    acc *= dim;
  }
  return true;
}

bool FitsInt(int64_t v) { return v >= 0 && v <= 0x7fffffff; }

// Decides where instruction i runs and precomputes its device launch.
Status PlanInstruction(const Program& p, int i, bool have_nccl, Plan* plan) {
  const proto::Instruction& inst = p.proto().instructions(i);
  const std::string& op = inst.op();
  const auto& ins = p.InstructionInputs(i);
  const auto& outs = p.InstructionOutputs(i);
  std::vector<TensorType> in_t, out_t;
  for (int v : ins) in_t.push_back(p.value(v).type);
  for (int v : outs) out_t.push_back(p.value(v).type);
  AttrReader attrs(inst);
  *plan = Plan();
  if ((op == "reshape" || op == "identity") && in_t.size() == 1 && out_t.size() == 1 &&
      in_t[0].dtype == out_t[0].dtype &&
      NumElements(in_t[0].shape) == NumElements(out_t[0].shape)) {
    plan->place = Place::kAlias;
    return OkStatus();
  }
  if (op == "all_reduce" && have_nccl && in_t.size() == 1 && out_t.size() == 1 &&
      in_t[0] == out_t[0]) {
    std::string red;
    DISTRT_RETURN_IF_ERROR(attrs.GetString("reduction", "sum", &red));
    DISTRT_RETURN_IF_ERROR(ParseReduceOp(red, &plan->reduction));
    plan->group.assign(inst.group().ranks().begin(), inst.group().ranks().end());
    plan->place = Place::kNccl;
    return OkStatus();
  }
  const bool all_f32 = [&] {
    for (const auto& t : in_t)
      if (!IsF32(t)) return false;
    for (const auto& t : out_t)
      if (!IsF32(t)) return false;
    return !in_t.empty() && out_t.size() == 1;
  }();
  if (!all_f32) return OkStatus();  // host
  if (in_t.size() == 1 && in_t[0] == out_t[0]) {
    for (const auto& u : kUnary) {
      if (op == u.name) {
        plan->place = Place::kDevice;
        plan->op = DevOp::kUnary;
        plan->unary = u.kind;
        return OkStatus();
      }
    }
    if (op == "gelu") {
      std::string approx;
      DISTRT_RETURN_IF_ERROR(attrs.GetString("approximate", "none", &approx));
      if (approx != "none" && approx != "tanh") return OkStatus();  // the host kernel reports it
      plan->place = Place::kDevice;
      plan->op = DevOp::kUnary;
      plan->unary = approx == "none" ? cuda::UnaryKind::kGeluErf : cuda::UnaryKind::kGeluTanh;
      return OkStatus();
    }
    if (op == "leaky_relu") {
      double alpha;
      DISTRT_RETURN_IF_ERROR(attrs.GetFloat("alpha", 0.01, &alpha));
      plan->place = Place::kDevice;
      plan->op = DevOp::kUnary;
      plan->unary = cuda::UnaryKind::kLeakyRelu;
      plan->alpha = static_cast<float>(alpha);
      return OkStatus();
    }
  }
  if (in_t.size() == 2) {
    for (const auto& b : kBinary) {
      if (op != b.name) continue;
      const Shape& out = out_t[0].shape;
      if (out.size() > static_cast<size_t>(cuda::kMaxDims)) return OkStatus();
      Shape bshape;
      DISTRT_RETURN_IF_ERROR(BroadcastShapes(in_t[0].shape, in_t[1].shape, &bshape));
      if (bshape != out) return OkStatus();  // the host kernel reports the mismatch
      plan->desc.rank = static_cast<int>(out.size());
      for (size_t d = 0; d < out.size(); ++d) plan->desc.out_dims[d] = out[d];
      if (!AlignedStrides(in_t[0].shape, out, plan->desc.a_strides) ||
          !AlignedStrides(in_t[1].shape, out, plan->desc.b_strides)) {
        return OkStatus();
      }
      plan->same_shape = in_t[0].shape == out && in_t[1].shape == out;
      plan->place = Place::kDevice;
      plan->op = DevOp::kBinary;
      plan->binary = b.kind;
      return OkStatus();
    }
    // Operands stored transposed run on the host (the cuBLAS plan reads
    // them as stored).
    int64_t transpose_lhs = 0, transpose_rhs = 0;
    DISTRT_RETURN_IF_ERROR(attrs.GetInt("transpose_lhs", 0, &transpose_lhs));
    DISTRT_RETURN_IF_ERROR(attrs.GetInt("transpose_rhs", 0, &transpose_rhs));
    const bool transposed = transpose_lhs != 0 || transpose_rhs != 0;
    // So do matmuls with a bias or epilogue (the host kernel applies them).
    if (op == "matmul" && in_t.size() == 2 && !transposed && in_t[0].shape.size() >= 2 &&
        in_t[1].shape.size() >= 2 && !attrs.Has("epilogue")) {
      const Shape& a = in_t[0].shape;
      const Shape& b = in_t[1].shape;
      const Shape& o = out_t[0].shape;
      const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
      if (b[b.size() - 2] != k || o.size() < 2) return OkStatus();
      const Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2),
          ob(o.begin(), o.end() - 2);
      auto padded = [&](const Shape& s) {
        Shape p2(ob.size() - std::min(ob.size(), s.size()), 1);
        p2.insert(p2.end(), s.begin(), s.end());
        return p2;
      };
      const int64_t batches = NumElements(ob);
      const bool a_ok = NumElements(ab) == 1 || padded(ab) == ob;
      const bool b_ok = NumElements(bb) == 1 || padded(bb) == ob;
      if (!a_ok || !b_ok || o[o.size() - 2] != m || o.back() != n) return OkStatus();
      if (!FitsInt(m) || !FitsInt(k) || !FitsInt(n) || !FitsInt(batches)) return OkStatus();
      plan->place = Place::kDevice;
      plan->op = DevOp::kMatmul;
      plan->m = static_cast<int>(m);
      plan->k = static_cast<int>(k);
      plan->n = static_cast<int>(n);
      plan->batches = static_cast<int>(batches);
      plan->stride_a = NumElements(ab) == 1 ? 0 : m * k;
      plan->stride_b = NumElements(bb) == 1 ? 0 : k * n;
      return OkStatus();
    }
  }
  return OkStatus();
}

}  // namespace

struct CudaExecutor::Impl {
  std::shared_ptr<const Program> program;
  Communicator* comm = nullptr;
  NcclDeviceComm* nccl = nullptr;
  std::unique_ptr<Communicator> staging;  // host view of `nccl` for the fallback
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  std::vector<DeviceTensor> persistent;
  std::vector<Plan> plans;
  std::vector<const KernelDef*> kernels;
  std::vector<std::vector<int>> release_after;
  std::unique_ptr<ThreadPool> pool;
  std::shared_ptr<MemoryTracker> tracker = std::make_shared<MemoryTracker>();
  CudaRunStats stats;

  ~Impl() {
    if (device >= 0) cudaSetDevice(device);
    persistent.clear();
    if (blas) cublasDestroy(blas);
    if (stream) cudaStreamDestroy(stream);
  }

  Status Alloc(const TensorType& t, DeviceTensor* out) {
    out->type = t;
    return DeviceBuffer::Allocate(static_cast<size_t>(NumElements(t.shape)) * DTypeSize(t.dtype),
                                  device, stream, &out->buf);
  }
  Status Upload(const HostTensor& h, DeviceTensor* out) {
    DISTRT_RETURN_IF_ERROR(Alloc(h.type(), out));
    if (h.byte_size() > 0) {
      DISTRT_CUDA(
          cudaMemcpyAsync(out->data(), h.raw(), h.byte_size(), cudaMemcpyHostToDevice, stream),
          "cudaMemcpyAsync (to device)");
    }
    return OkStatus();
  }
  // Copies each update value into its weight's device buffer (in place, so
  // the weight keeps its buffer), after a successful run only. An update
  // that aliases another updated weight is snapshotted first, so the order
  // of the copies does not matter.
  Status ApplyUpdates(const std::vector<DeviceTensor>& values) {
    const std::vector<Program::WeightUpdate>& ups = program->updates();
    if (ups.empty()) return OkStatus();
    std::unordered_set<const DeviceBuffer*> updated;
    for (const auto& u : ups) updated.insert(persistent[u.value].buf.get());
    std::vector<DeviceTensor> src(ups.size());
    for (size_t k = 0; k < ups.size(); ++k) {
      const DeviceTensor& v = values[static_cast<size_t>(ups[k].update)];
      if (v.buf == persistent[ups[k].value].buf) continue;  // already there
      if (updated.count(v.buf.get())) {
        DISTRT_RETURN_IF_ERROR(Alloc(v.type, &src[k]));
        if (v.bytes() > 0) {
          DISTRT_CUDA(
              cudaMemcpyAsync(src[k].data(), v.data(), v.bytes(), cudaMemcpyDeviceToDevice, stream),
              "cudaMemcpyAsync (update snapshot)");
        }
      } else {
        src[k] = v;
      }
    }
    for (size_t k = 0; k < ups.size(); ++k) {
      if (!src[k].defined() || src[k].bytes() == 0) continue;
      DeviceTensor& w = persistent[static_cast<size_t>(ups[k].value)];
      DISTRT_CUDA(
          cudaMemcpyAsync(w.data(), src[k].data(), w.bytes(), cudaMemcpyDeviceToDevice, stream),
          "cudaMemcpyAsync (weight update)");
    }
    DISTRT_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return OkStatus();
  }
  Status Download(const DeviceTensor& d, HostTensor* out) {
    DISTRT_RETURN_IF_ERROR(HostTensor::Allocate(d.type.dtype, d.type.shape, out, tracker));
    if (d.bytes() > 0) {
      DISTRT_CUDA(cudaMemcpyAsync(out->raw(), d.data(), d.bytes(), cudaMemcpyDeviceToHost, stream),
                  "cudaMemcpyAsync (to host)");
    }
    DISTRT_CUDA(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return OkStatus();
  }
};

CudaExecutor::~CudaExecutor() = default;

Status CudaExecutor::Create(std::shared_ptr<const Program> program, Communicator* comm,
                            const CudaExecutorOptions& options,
                            std::unique_ptr<CudaExecutor>* out) {
  if (!program) return InvalidArgumentError("CudaExecutor::Create: no program");
  const Program& p = *program;
  DISTRT_RETURN_IF_ERROR(RequireCudaDevice(options.device));
  DISTRT_RETURN_IF_ERROR(CheckCommunicator(p, comm));
  if (options.host_threads < 1) {
    return InvalidArgumentError("CudaExecutorOptions.host_threads must be >= 1");
  }
  std::unique_ptr<CudaExecutor> e(new CudaExecutor());
  e->impl_.reset(new Impl());
  Impl& im = *e->impl_;
  im.program = program;
  im.comm = comm;
  im.nccl = dynamic_cast<NcclDeviceComm*>(comm);
  im.device = options.device >= 0 ? options.device : (im.nccl ? im.nccl->device() : 0);
  if (im.nccl) DISTRT_RETURN_IF_ERROR(NewHostStagingCommunicator(comm, &im.staging));
  DISTRT_CUDA(cudaSetDevice(im.device), "cudaSetDevice");
  DISTRT_CUDA(cudaStreamCreateWithFlags(&im.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cublasStatus_t bs = cublasCreate(&im.blas);
  if (bs != CUBLAS_STATUS_SUCCESS) return CublasError(bs, "cublasCreate");
  bs = cublasSetStream(im.blas, im.stream);
  if (bs != CUBLAS_STATUS_SUCCESS) return CublasError(bs, "cublasSetStream");
  if (options.host_threads > 1) im.pool.reset(new ThreadPool(options.host_threads));

  // Weights and constants: read on the host (this rank's slices), uploaded once.
  std::vector<HostTensor> host(static_cast<size_t>(p.num_values()));
  Status st = LoadWeightsAndConstants(p, std::make_shared<MemoryTracker>(), &host);
  if (!st.ok()) return st.WithContext(p.source());
  im.persistent.resize(host.size());
  for (size_t v = 0; v < host.size(); ++v) {
    if (host[v].defined()) DISTRT_RETURN_IF_ERROR(im.Upload(host[v], &im.persistent[v]));
  }
  DISTRT_CUDA(cudaStreamSynchronize(im.stream), "cudaStreamSynchronize");

  const int n = p.num_instructions();
  im.plans.resize(static_cast<size_t>(n));
  im.kernels.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    im.kernels[i] = KernelRegistry::Get().Find(p.proto().instructions(i).op());
    Status ps = PlanInstruction(p, i, im.nccl != nullptr, &im.plans[i]);
    if (!ps.ok())
      return Status(ps.code(),
                    StrCat(p.source(), ": ", p.DescribeInstruction(i), ": ", ps.message()));
    if (im.plans[i].place == Place::kHost && !options.allow_host_fallback) {
      return UnimplementedError(p.source(), ": ", p.DescribeInstruction(i),
                                ": no device kernel for this op and dtype, and the host "
                                "fallback is off (CudaExecutorOptions.allow_host_fallback)");
    }
  }
  std::vector<bool> persistent(im.persistent.size());
  for (size_t v = 0; v < persistent.size(); ++v) persistent[v] = im.persistent[v].defined();
  im.release_after = ComputeLiveness(p, persistent).release_after;
  *out = std::move(e);
  return OkStatus();
}

std::vector<std::string> CudaExecutor::Placement() const {
  std::vector<std::string> out;
  for (const Plan& p : impl_->plans) out.push_back(PlaceName(p.place));
  return out;
}

const CudaRunStats& CudaExecutor::stats() const { return impl_->stats; }

Status CudaExecutor::ReadPersistent(std::vector<PersistentTensor>* out) const {
  Impl& im = *impl_;
  const Program& p = *im.program;
  out->clear();
  DISTRT_CUDA(cudaSetDevice(im.device), "cudaSetDevice");
  for (int i = 0; i < p.proto().weights_size(); ++i) {
    const proto::Weight& w = p.proto().weights(i);
    if (!IsTrainingState(w)) continue;
    PersistentTensor t;
    t.weight = &w;
    DISTRT_RETURN_IF_ERROR(
        im.Download(im.persistent[static_cast<size_t>(p.ValueIndex(w.value()))], &t.value));
    out->push_back(std::move(t));
  }
  return OkStatus();
}

Status CudaExecutor::WritePersistent(const std::vector<PersistentTensor>& values) {
  Impl& im = *impl_;
  std::vector<int> at;
  DISTRT_RETURN_IF_ERROR(CheckPersistentWrite(*im.program, values, &at));
  DISTRT_CUDA(cudaSetDevice(im.device), "cudaSetDevice");
  for (size_t k = 0; k < values.size(); ++k) {
    DeviceTensor& w = im.persistent[static_cast<size_t>(at[k])];
    if (w.bytes() == 0) continue;
    DISTRT_CUDA(cudaMemcpyAsync(w.data(), values[k].value.raw(), w.bytes(), cudaMemcpyHostToDevice,
                                im.stream),
                "cudaMemcpyAsync (to device)");
  }
  DISTRT_CUDA(cudaStreamSynchronize(im.stream), "cudaStreamSynchronize");
  return OkStatus();
}

Status CudaExecutor::Run(const std::vector<HostTensor>& inputs, std::vector<HostTensor>* outputs) {
  Impl& im = *impl_;
  const Program& p = *im.program;
  auto fail = [&](const Status& st) {
    if (im.comm != nullptr) im.comm->Abort(st);
    return st;
  };
  const auto start = std::chrono::steady_clock::now();
  CudaRunStats stats;
  {
    cudaError_t e = cudaSetDevice(im.device);
    if (e != cudaSuccess) return fail(CudaError(e, "cudaSetDevice"));
  }
  Status checked = CheckInputs(p, inputs);
  if (!checked.ok()) return fail(checked);
  std::vector<DeviceTensor> values = im.persistent;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Status st = im.Upload(inputs[i], &values[p.InputValue(static_cast<int>(i))]);
    if (!st.ok()) return fail(st);
  }

  const int n = p.num_instructions();
  for (int i = 0; i < n; ++i) {
    const Plan& plan = im.plans[i];
    const proto::Instruction& inst = p.proto().instructions(i);
    const auto& in_ids = p.InstructionInputs(i);
    const auto& out_ids = p.InstructionOutputs(i);
    Status st;
    switch (plan.place) {
      case Place::kAlias: {
        values[out_ids[0]] = DeviceTensor{p.value(out_ids[0]).type, values[in_ids[0]].buf};
        ++stats.device_instructions;
        break;
      }
      case Place::kDevice: {
        DeviceTensor y;
        st = im.Alloc(p.value(out_ids[0]).type, &y);
        if (!st.ok()) break;
        const int64_t count = NumElements(y.type.shape);
        cudaError_t e = cudaSuccess;
        if (plan.op == DevOp::kUnary) {
          e = cuda::UnaryF32(plan.unary, static_cast<const float*>(values[in_ids[0]].data()),
                             static_cast<float*>(y.data()), count, plan.alpha, im.stream);
        } else if (plan.op == DevOp::kBinary) {
          e = cuda::BinaryF32(plan.binary, static_cast<const float*>(values[in_ids[0]].data()),
                              static_cast<const float*>(values[in_ids[1]].data()),
                              static_cast<float*>(y.data()), count, plan.desc, plan.same_shape,
                              im.stream);
        } else if (plan.op == DevOp::kMatmul) {
          if (count == 0) {
            // nothing to compute
          } else if (plan.k == 0) {
            e = cudaMemsetAsync(y.data(), 0, y.bytes(), im.stream);
          } else {
            const float one = 1.0f, zero = 0.0f;
            // Row-major C = A B is column-major C^T = B^T A^T.
            cublasStatus_t bs = cublasSgemmStridedBatched(
                im.blas, CUBLAS_OP_N, CUBLAS_OP_N, plan.n, plan.m, plan.k, &one,
                static_cast<const float*>(values[in_ids[1]].data()), plan.n, plan.stride_b,
                static_cast<const float*>(values[in_ids[0]].data()), plan.k, plan.stride_a, &zero,
                static_cast<float*>(y.data()), plan.n, static_cast<long long>(plan.m) * plan.n,
                plan.batches);
            if (bs != CUBLAS_STATUS_SUCCESS) st = CublasError(bs, "cublasSgemmStridedBatched");
          }
        }
        if (st.ok() && e != cudaSuccess) st = CudaError(e, "kernel launch");
        if (st.ok()) {
          values[out_ids[0]] = std::move(y);
          ++stats.device_instructions;
        }
        break;
      }
      case Place::kNccl: {
        DeviceTensor y;
        st = im.Alloc(p.value(out_ids[0]).type, &y);
        if (!st.ok()) break;
        cudaError_t e = cudaStreamSynchronize(im.stream);  // the input is ready
        if (e != cudaSuccess) {
          st = CudaError(e, "cudaStreamSynchronize");
          break;
        }
        const DeviceTensor& x = values[in_ids[0]];
        st = im.nccl->AllReduce(plan.group, x.data(), y.data(), NumElements(x.type.shape),
                                x.type.dtype, plan.reduction);
        if (st.ok()) {
          values[out_ids[0]] = std::move(y);
          ++stats.device_collectives;
        }
        break;
      }
      case Place::kHost: {
        // Host fallback: copy the inputs down, run the CPU kernel, copy up.
        std::vector<HostTensor> host_in(in_ids.size());
        for (size_t k = 0; k < in_ids.size() && st.ok(); ++k) {
          st = im.Download(values[in_ids[k]], &host_in[k]);
          stats.bytes_to_host += static_cast<int64_t>(host_in[k].byte_size());
        }
        if (!st.ok()) break;
        KernelContext ctx;
        ctx.inst = &inst;
        for (auto& t : host_in) ctx.inputs.push_back(&t);
        ctx.donatable.assign(host_in.size(), false);
        for (int v : out_ids) ctx.output_types.push_back(p.value(v).type);
        std::vector<HostTensor> results(out_ids.size());
        ctx.outputs = &results;
        ctx.pool = im.pool.get();
        ctx.comm = im.staging ? im.staging.get() : im.comm;
        ctx.rank = p.rank();
        ctx.tracker = im.tracker;
        if (im.kernels[i] == nullptr) {
          st = InternalError("no kernel '", inst.op(), "'");
          break;
        }
        bool empty = !im.kernels[i]->communicates && !out_ids.empty();
        for (int v : out_ids) empty = empty && NumElements(p.value(v).type.shape) == 0;
        if (empty) {
          for (size_t k = 0; k < out_ids.size() && st.ok(); ++k) {
            st = HostTensor::Allocate(ctx.output_types[k].dtype, ctx.output_types[k].shape,
                                      &results[k]);
          }
        } else {
          st = im.kernels[i]->run(ctx);
        }
        for (size_t k = 0; k < out_ids.size() && st.ok(); ++k) {
          if (!results[k].defined())
            st = InternalError("kernel produced no output ", k);
          else
            st = CheckOutputType(ctx.output_types[k], results[k].type());
        }
        for (size_t k = 0; k < out_ids.size() && st.ok(); ++k) {
          st = im.Upload(results[k], &values[out_ids[k]]);
          stats.bytes_to_device += static_cast<int64_t>(results[k].byte_size());
        }
        if (st.ok()) {  // `results` dies here: finish the copies out of it
          cudaError_t e = cudaStreamSynchronize(im.stream);
          if (e != cudaSuccess) st = CudaError(e, "cudaStreamSynchronize");
        }
        if (st.ok()) ++stats.host_instructions;
        break;
      }
    }
    if (!st.ok()) {
      return fail(Status(st.code(), StrCat(p.source(), ": ", p.DescribeInstruction(i), " (",
                                           PlaceName(plan.place), "): ", st.message())));
    }
    for (int v : im.release_after[i]) values[v] = DeviceTensor();
  }
  outputs->clear();
  for (int i = 0; i < p.proto().outputs_size(); ++i) {
    HostTensor h;
    Status st = im.Download(values[p.OutputValue(i)], &h);
    if (!st.ok()) return fail(st);
    outputs->push_back(std::move(h));
  }
  // Outputs are host copies already, so only the weights change here.
  Status applied = im.ApplyUpdates(values);
  if (!applied.ok()) {
    outputs->clear();
    return fail(applied.WithContext(StrCat(p.source(), ": applying weight updates")));
  }
  values.clear();
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  im.stats = stats;
  return OkStatus();
}

}  // namespace distrt
