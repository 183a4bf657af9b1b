// What the host Executor and the CudaExecutor share: the checks on a
// program's communicator and inputs, and its buffer lifetimes.
#ifndef DISTRT_SRC_EXEC_COMMON_H_
#define DISTRT_SRC_EXEC_COMMON_H_

#include <map>
#include <vector>

#include "distrt/communicator.h"
#include "distrt/executor.h"
#include "distrt/program.h"
#include "distrt/tensor.h"
#include "scheduled_loop.h"

namespace distrt {

// INVALID_ARGUMENT if `comm`'s rank or world size differs from the
// program's; FAILED_PRECONDITION if there is none and the program
// communicates. `comm` may be null.
Status CheckCommunicator(const Program& program, const Communicator* comm);

// INVALID_ARGUMENT unless `inputs` are the program's inputs: as many, each
// defined and of its declared type.
Status CheckInputs(const Program& program, const std::vector<Tensor>& inputs);

// A weight that is training state: it has an update or starts as zeros.
inline bool IsTrainingState(const proto::Weight& w) { return w.has_update() || w.zeros(); }

// For WritePersistent: INVALID_ARGUMENT unless every entry's weight is one of
// the program's training-state weights (an update or zeros) and its value has
// that weight's local type. Fills `values` with each entry's value index.
Status CheckPersistentWrite(const Program& program, const std::vector<PersistentTensor>& entries,
                            std::vector<int>* values);

// Buffer lifetimes: each value is released after its last reader, or right
// after it is produced if nobody reads it. Weights, constants, program
// outputs and weight updates (read after the last instruction) are never
// released during a run.
struct Liveness {
  std::vector<int> last_use;                    // per value: last reader, -1 if none
  std::vector<bool> keep;                       // per value: never released
  std::vector<std::vector<int>> release_after;  // per instruction
};
// `persistent[v]`: value v is a weight or constant.
Liveness ComputeLiveness(const Program& program, const std::vector<bool>& persistent);

// The most bytes a run holds at once besides weights and constants, from
// the liveness plan: program inputs and instruction results from their
// definition to their release (results of reshape and identity share their
// input's buffer and count nothing; kernel scratch is not counted), plus
// `scratch[i]` while instruction i runs (the f32 copies of a bf16
// instruction run through f32; empty: none). A scheduled loop of `loops`
// (pipeline stages, by first instruction) counts the values each
// microbatch holds between its actions, in the schedule's order.
int64_t PlannedPeakBytes(const Program& program, const Liveness& live,
                         const std::vector<bool>& persistent,
                         const std::vector<int64_t>& scratch = {},
                         const std::map<int, ScheduledLoop>& loops = {});

}  // namespace distrt

#endif  // DISTRT_SRC_EXEC_COMMON_H_
