// Executor: runs one rank program, instruction by instruction.
#ifndef DISTRT_EXECUTOR_H_
#define DISTRT_EXECUTOR_H_

#include <memory>
#include <unordered_set>
#include <vector>

#include "distrt/communicator.h"
#include "distrt/device.h"
#include "distrt/program.h"
#include "distrt/status.h"
#include "distrt/tensor.h"

namespace distrt {

// The OpenBLAS kernel set GEMMs run with ("SkylakeX", "Haswell", ...), after
// distrt's one-time BLAS set-up (see docs/runtime.md, "Threads and BLAS").
std::string BlasCoreName();
// oneDNN's f32 GEMM kernel, e.g. "oneDNN 2.6.3 brg:avx512_core": the one
// that multiplies by packed weights and most other f32 products (see
// docs/runtime.md, "Matmul"). "" when every GEMM goes to OpenBLAS: distrt
// was built without oneDNN, the CPU has no AVX-512 (oneDNN has no brgemm
// kernel there), or the environment sets DISTRT_GEMM=openblas.
std::string OneDnnGemmName();
// oneDNN's bf16 GEMM kernel where bf16 products run in bf16 (a CPU with
// AVX512-BF16 or AMX, or DISTRT_BF16_GEMM=onednn); "" where they are
// widened to f32 (docs/runtime.md, "bf16 and f16 on the host").
std::string OneDnnBF16GemmName();

struct ExecutorOptions {
  // Intra-op threads for this rank, the calling thread included (>= 1). With
  // N ranks in one process use threads * N <= cores. OpenBLAS itself is set
  // to one thread; big GEMMs are split across these threads instead.
  int threads = 1;
  // Time every instruction (steady clock around each kernel) and keep the
  // sums per op kind in RunStats::op_times.
  bool profile = false;
  // Pack the weights that no update of the program writes (inference
  // weights, frozen LoRA bases) in oneDNN's layout for the GEMM when the
  // program loads, and free a weight's own bytes when only packed matmuls
  // read it (counted in RunStats::weight_bytes); needs oneDNN (see
  // OneDnnGemmName). The environment variable DISTRT_PACK_WEIGHTS=0 turns
  // it off for every executor (the tools have no flag of their own).
  bool pack_weights = true;
  // The device the program runs on (null: the host). Its weights, training
  // state and intermediate values live there; an instruction without a
  // kernel for that device runs on the host, its inputs copied there and
  // its outputs back (counted in RunStats), unless allow_host_fallback is
  // false, which makes Create fail naming the first such instruction.
  // Weights are packed for host GEMMs only on the host.
  std::shared_ptr<Device> device;
  bool allow_host_fallback = true;
};

// Time spent in one kind of instruction (its `op`), summed over every
// profiled run since the executor was created.
struct OpTime {
  std::string op;
  int64_t calls = 0;
  double seconds = 0;
  std::string device;  // where it ran: "cpu", "cuda:0"
  double flops = 0;    // floating-point operations done, where the kernel counts them
};

// One instruction's time over the profiled runs (a loop's body counts each
// iteration): what dist-run --profile lists as the slowest instructions.
struct InstructionTime {
  int index = 0;
  std::string op;
  std::string output;    // its first output's type, "f32[8, 12, 1024, 1024]"
  std::string location;  // the model's node it comes from, if known
  int64_t calls = 0;
  double seconds = 0;
};

struct RunStats {
  int64_t weight_bytes = 0;     // weights + constants held by the executor, and
                                // the weights it packed for the GEMM
  int64_t peak_live_bytes = 0;  // peak bytes of buffers allocated by the last Run
                                // (activations and kernel scratch, not inputs)
  // Set at Create: the peak the liveness plan predicts for a run's inputs
  // and results (no kernel scratch, no in-place reuse), with the f32 copies
  // of the bf16/f16 instructions the host runs in f32. On a GPU the executor
  // reserves it at Create, and fails there if the device lacks it.
  int64_t planned_peak_bytes = 0;
  int64_t instructions = 0;     // instructions executed by the last Run
  double seconds = 0;           // wall time of the last Run
  // On a device other than the host, for the last Run: instructions that
  // ran on the host for want of a device kernel, and the bytes copied for
  // them (and for program inputs and outputs) each way.
  int64_t host_instructions = 0;
  int64_t bytes_to_device = 0;
  int64_t bytes_to_host = 0;
  // Set at Create on a device other than the host: the device
  // ("cuda:0 (NVIDIA H200, sm_90, ...)") and where the instructions run
  // ("all 812 instructions on the device", or "790 of 812 instructions on
  // the device; on the host: conv x4, max_pool x2").
  std::string device;
  std::string placement;
  // Set at Create: host instructions with bf16/f16 operands that run as f32
  // kernels with conversions (docs/runtime.md, "bf16 and f16 on the host").
  int64_t instructions_via_f32 = 0;
  // With ExecutorOptions::profile: per op kind and device over all runs so
  // far (in order of first appearance; "apply updates" is writing a
  // training step's updates into its weights), and how many runs that is.
  // On a device, profiling waits for the device after every instruction.
  std::vector<OpTime> op_times;
  // The same per instruction, in program order.
  std::vector<InstructionTime> instruction_times;
  int64_t profiled_runs = 0;
};

// A weight that is training state (it has an update or starts as zeros):
// its proto entry (name, slice: global shape and this rank's offsets) and a
// copy of this rank's current contents.
struct PersistentTensor {
  const proto::Weight* weight = nullptr;  // points into the executor's program
  Tensor value;
};

class Executor {
 public:
  // Loads the program's weights (this rank's slices) and constants and
  // precomputes buffer lifetimes. `comm` may be null if the program has no
  // communication; otherwise its rank and world size must match the program.
  static Status Create(std::shared_ptr<const Program> program, Communicator* comm,
                       const ExecutorOptions& options, std::unique_ptr<Executor>* out);
  ~Executor();

  // `inputs` in the order of the program's inputs, with their declared types.
  // Fills `outputs` in the order of the program's outputs. Every intermediate
  // buffer is freed right after its last use. On failure the communicator is
  // aborted so peers stop waiting, and the error names the instruction.
  // After a successful run every weight with an update (Weight.update) gets
  // its update value's contents, copied into the weight's buffer, so the
  // next run reads them; a failed run leaves the weights as they were.
  // Outputs never share memory with an updated weight.
  Status Run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs);

  // A pipeline stage: runs the program once per FORWARD action of its
  // schedule, in schedule order, on that microbatch's inputs, with the
  // microbatch's send/recv tags (see PipelineSchedule in the proto).
  // `inputs[m]` and `(*outputs)[m]` belong to microbatch m. A program without
  // a schedule runs once, as microbatch 0. Weight updates apply after each
  // of those runs, as after Run (a training schedule that accumulates over
  // microbatches is future work).
  Status RunSchedule(const std::vector<std::vector<Tensor>>& inputs,
                     std::vector<std::vector<Tensor>>* outputs);

  // Microbatches this program's schedule runs (1 without a schedule).
  int microbatches() const;

  // The training state: every weight with an update or zeros, in weight
  // order, with a copy of its current local contents. Not while a Run is in
  // progress.
  Status ReadPersistent(std::vector<PersistentTensor>* out) const;

  // Replaces training state (a checkpoint being resumed): each entry's
  // `weight` must be one of this program's weights that ReadPersistent lists
  // and its value of that weight's local dtype and shape. Every entry is
  // checked before any is written, so an error changes nothing. Not while a
  // Run is in progress.
  Status WritePersistent(const std::vector<PersistentTensor>& values);

  const Program& program() const { return *program_; }
  const RunStats& stats() const { return stats_; }
  // The device the program runs on.
  Device* device() const;
  // Per instruction, the device it runs on ("cuda:0", or "cpu" for a host
  // fallback).
  std::vector<std::string> Placement() const;
  // Starts the profile afresh (after warm-up runs, say).
  void ClearProfile();

 private:
  Executor() = default;
  Status ApplyUpdates(const std::vector<Tensor>& values, std::vector<Tensor>* outputs);
  Status PrepareKernels(const std::unordered_set<int>& outputs);
  struct Impl;
  std::shared_ptr<const Program> program_;
  Communicator* comm_ = nullptr;
  std::unique_ptr<Impl> impl_;
  RunStats stats_;
  int64_t tag_offset_ = 0;
};

}  // namespace distrt

#endif  // DISTRT_EXECUTOR_H_
