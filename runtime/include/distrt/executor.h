// Executor: runs one rank program, instruction by instruction.
#ifndef DISTRT_EXECUTOR_H_
#define DISTRT_EXECUTOR_H_

#include <memory>
#include <vector>

#include "distrt/communicator.h"
#include "distrt/program.h"
#include "distrt/status.h"
#include "distrt/tensor.h"

namespace distrt {

struct ExecutorOptions {
  // Intra-op threads for this rank, the calling thread included (>= 1). With
  // N ranks in one process use threads * N <= cores. OpenBLAS itself is set
  // to one thread; big GEMMs are split across these threads instead.
  int threads = 1;
};

struct RunStats {
  int64_t weight_bytes = 0;     // weights + constants held by the executor
  int64_t peak_live_bytes = 0;  // peak bytes of buffers allocated by the last Run
                                // (activations and kernel scratch, not inputs)
  int64_t instructions = 0;     // instructions executed by the last Run
  double seconds = 0;           // wall time of the last Run
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
  Status Run(const std::vector<HostTensor>& inputs, std::vector<HostTensor>* outputs);

  const Program& program() const { return *program_; }
  const RunStats& stats() const { return stats_; }

 private:
  Executor() = default;
  struct Impl;
  std::shared_ptr<const Program> program_;
  Communicator* comm_ = nullptr;
  std::unique_ptr<Impl> impl_;
  RunStats stats_;
};

}  // namespace distrt

#endif  // DISTRT_EXECUTOR_H_
