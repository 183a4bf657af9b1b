// The kernel interface: how the executor calls a kernel and how a kernel
// reads its attributes. See docs/runtime.md, "Adding a kernel".
#ifndef DISTRT_SRC_KERNEL_H_
#define DISTRT_SRC_KERNEL_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distrt/communicator.h"
#include "distrt/device.h"
#include "distrt/proto/rank_program.pb.h"
#include "distrt/status.h"
#include "distrt/tensor.h"
#include "thread_pool.h"

namespace distrt {

// Typed access to an instruction's attributes. Every getter fails with a
// message naming the attribute when it is present with the wrong kind.
class AttrReader {
 public:
  explicit AttrReader(const proto::Instruction& inst) : inst_(inst) {}
  bool Has(const std::string& name) const;
  Status GetInt(const std::string& name, int64_t* out) const;  // required
  Status GetInt(const std::string& name, int64_t default_value, int64_t* out) const;
  Status GetInts(const std::string& name, std::vector<int64_t>* out) const;  // required
  // Optional list: `*present` tells whether it was there.
  Status GetInts(const std::string& name, std::vector<int64_t>* out, bool* present) const;
  Status GetFloat(const std::string& name, double* out) const;  // required; ints accepted
  Status GetFloat(const std::string& name, double default_value, double* out) const;
  Status GetString(const std::string& name, const std::string& default_value,
                   std::string* out) const;

 private:
  const proto::Attribute* Find(const std::string& name) const;
  const proto::Instruction& inst_;
};

// What a kernel derives from its persistent inputs and keeps from one run to
// the next (a weight packed for the GEMM), owned by the executor.
class KernelState {
 public:
  virtual ~KernelState() = default;
};

// An executor's kernel states by key, shared by its instructions: the
// matmuls of several microbatches (or tied layers) that read one weight
// keep one packed copy of it. Instructions run one at a time, so slots need
// no lock.
class KernelStates {
 public:
  std::shared_ptr<KernelState>& Slot(const std::string& key) { return slots_[key]; }

 private:
  std::map<std::string, std::shared_ptr<KernelState>> slots_;
};

// Everything a kernel sees for one instruction.
class KernelContext {
 public:
  const proto::Instruction* inst = nullptr;
  std::vector<const Tensor*> inputs;
  std::vector<TensorType> output_types;  // declared by the program
  std::vector<Tensor>* outputs = nullptr;
  // Where this instruction runs: its inputs are there, and its outputs and
  // scratch are allocated there.
  std::shared_ptr<Device> device = CpuDevice();
  ThreadPool* pool = nullptr;    // intra-op threads, may be null
  Communicator* comm = nullptr;  // null when the program has no collectives
  int rank = 0;
  // Added to send/recv tags: keeps the messages of different pipeline
  // microbatches apart.
  int64_t tag_offset = 0;
  std::shared_ptr<MemoryTracker> tracker;
  // Per input: its buffer dies with this instruction and nothing else holds
  // it, so AllocateOutput may hand it out again (set by the executor only
  // for kernels with in_place_ok).
  std::vector<bool> donatable;
  // Per output: the tensor whose buffer it must be written into (an
  // optimizer update overwriting its state, an input, or a compute copy
  // nothing reads any more), or null (set by the executor only for kernels
  // with updates_in_place).
  std::vector<const Tensor*> write_into;
  // What this instruction's prepare made at load (a packed weight), or null.
  KernelState* prepared = nullptr;
  // Changes whenever WritePersistent replaced persistent values (a training
  // state weight this program reads but does not update may be one of
  // them): what prepare derived from constant inputs is stale.
  uint64_t persistent_version = 0;

  int num_inputs() const { return static_cast<int>(inputs.size()); }
  const Tensor& input(int i) const { return *inputs[static_cast<size_t>(i)]; }
  AttrReader attrs() const { return AttrReader(*inst); }
  // The device's queue (a cudaStream_t), null on the host.
  void* stream() const { return device->stream(); }

  // Allocates output i with its declared type (contents undefined: the kernel
  // must write every element). May reuse a donatable input of that type.
  Status AllocateOutput(int i, Tensor** out);
  // Same, but reusing at most input `input`'s buffer (-1: none): for loops
  // that let an output overlap only its own input, element for element (an
  // optimizer's new state over its old one), never another input.
  Status AllocateOutputOver(int i, int input, Tensor** out);
  static constexpr int kAnyInput = -2;  // AllocateOutput's choice
  // Same, zero-filled.
  Status AllocateZeroedOutput(int i, Tensor** out);
  // Makes output i share `t`'s buffer (reshape, identity). The type must match
  // the declared one.
  Status SetOutput(int i, const Tensor& t);
  // A counted scratch tensor.
  Status AllocateTemp(DType dtype, const Shape& shape, Tensor* out, bool zero = false);
};

using KernelFn = Status (*)(KernelContext& ctx);

// Load-time check of one instruction from types alone (cheap shape checks).
struct VerifyContext {
  const proto::Instruction* inst = nullptr;
  std::vector<TensorType> inputs;
  std::vector<TensorType> outputs;
  int rank = 0;
  int world_size = 1;
  AttrReader attrs() const { return AttrReader(*inst); }
};
using VerifyFn = Status (*)(const VerifyContext& ctx);

// Load-time preparation of one instruction from its constant inputs (a
// weight packed for the GEMM), run once by the executor when it keeps
// kernel states.
struct PrepareContext {
  const proto::Instruction* inst = nullptr;
  std::vector<TensorType> inputs;  // declared types
  // Per input: the value when it is a weight or constant the executor
  // holds and no update of this program writes (inference weights; a
  // training step's parameters are not constant), else null.
  std::vector<const Tensor*> constant_inputs;
  int threads = 1;  // the executor's pool size
  // The executor's states, shared by its instructions (one packed copy of a
  // weight several matmuls read).
  KernelStates* states = nullptr;
  // Counts memory that lives as long as the executor.
  std::shared_ptr<MemoryTracker> state_tracker;
  // Out: what the instruction's runs find as KernelContext::prepared.
  std::shared_ptr<KernelState> prepared;
  // Out, per input: the kernel will not read this constant's bytes again
  // (what it needs is in `states`). When no reader needs a weight's bytes
  // the executor frees them.
  std::vector<bool> data_unneeded;
  AttrReader attrs() const { return AttrReader(*inst); }
};
using PrepareFn = Status (*)(PrepareContext& ctx);

// Floating-point operations one run of the instruction performs (a
// multiply-add counts 2), for the profile's rates.
using FlopsFn = int64_t (*)(const VerifyContext& ctx);

// Whether a device kernel handles this instruction (its types and
// attributes); when it does not, the executor runs the host kernel instead.
using AcceptFn = bool (*)(const VerifyContext& ctx);

// The bit set of `dtypes` for KernelDef::dtypes.
uint32_t DTypeMask(std::initializer_list<DType> dtypes);

// The dtype an instruction computes in, by which its kernel is chosen: its
// first floating-point input's, else its first input's, else its first
// output's.
DType ComputeDType(const std::vector<TensorType>& inputs, const std::vector<TensorType>& outputs);

struct KernelDef {
  std::string name;
  int min_inputs = 0;
  int max_inputs = 0;  // -1: variadic
  int num_outputs = 1;
  KernelFn run = nullptr;
  VerifyFn verify = nullptr;  // optional
  bool communicates = false;  // uses the communicator and Instruction.group
  // The kernel writes output element i only after it has read everything
  // that output element depends on at the same index (elementwise, row-wise
  // normalisations), so an output may take over a dying input's buffer.
  bool in_place_ok = false;
  // An optimizer update (outputs in the order of the states they replace):
  // the executor may have it write each into the state's own buffer.
  bool updates_in_place = false;
  PrepareFn prepare = nullptr;  // optional
  // Where the kernel runs; its inputs and outputs live there.
  DeviceKind device = DeviceKind::kCpu;
  // The compute dtypes it handles (see ComputeDType), a bit per DType
  // (DTypeMask); 0: any (the kernel dispatches on dtype itself, as the host
  // kernels do).
  uint32_t dtypes = 0;
  AcceptFn accepts = nullptr;  // optional: finer than `dtypes`
  FlopsFn flops = nullptr;     // optional: for the profile
  // A host kernel that handles bf16/f16 itself (casts, data movement by
  // element size). A host kernel without it sees no 16-bit floats: the
  // executor runs it in f32 with conversions (via_f32.h). Communication
  // kernels handle them natively too.
  bool half_native = false;
  // Optional, for a kernel with a 16-bit path for some instructions only
  // (a bf16 GEMM where the CPU has bf16 instructions): whether it runs
  // this one itself.
  bool (*half_native_for)(const VerifyContext& ctx) = nullptr;
};

// Kernels by (op, device, dtype). The host kernels are there from the
// start; a device's kernels join when the device is first opened.
class KernelRegistry {
 public:
  static KernelRegistry& Get();
  // The kernel for `op` on `device` registered for `dtype`, else one
  // registered for any dtype; null when there is none. With kUnspecified:
  // any kernel of `op` on `device`.
  const KernelDef* Find(const std::string& op, DeviceKind device = DeviceKind::kCpu,
                        DType dtype = DType::kUnspecified) const;
  // The ops with a kernel on `device`, sorted.
  std::vector<std::string> Names(DeviceKind device = DeviceKind::kCpu) const;
  void Add(KernelDef def);

 private:
  KernelRegistry() = default;
  mutable std::mutex mu_;
  // Never moved once added: Find hands out pointers into it.
  std::vector<std::unique_ptr<KernelDef>> defs_;
};

// One registration function per kernel family (kernels_*.cpp).
void RegisterBinaryKernels(KernelRegistry& r);
void RegisterUnaryKernels(KernelRegistry& r);
void RegisterCastKernels(KernelRegistry& r);
void RegisterReduceKernels(KernelRegistry& r);
void RegisterNormKernels(KernelRegistry& r);
void RegisterMatmulKernels(KernelRegistry& r);
void RegisterShapeKernels(KernelRegistry& r);
void RegisterIndexKernels(KernelRegistry& r);
void RegisterConvKernels(KernelRegistry& r);
void RegisterPoolKernels(KernelRegistry& r);
void RegisterOptimizerKernels(KernelRegistry& r);
void RegisterCommKernels(KernelRegistry& r);

// ---- helpers shared by kernels ------------------------------------------

// numpy broadcast of two shapes.
Status BroadcastShapes(const Shape& a, const Shape& b, Shape* out);
// Checks that `actual` equals the declared output type.
Status CheckOutputType(const TensorType& declared, const TensorType& actual);
// Normalises an axis in [-rank, rank) to [0, rank).
Status NormalizeAxis(int64_t axis, int rank, int64_t* out);
// Row-major strides (in elements) of a shape.
std::vector<int64_t> Strides(const Shape& shape);

}  // namespace distrt

#endif  // DISTRT_SRC_KERNEL_H_
