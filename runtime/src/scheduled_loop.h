// A pipeline stage's microbatch loop: its body is cut into actions by
// `microbatch_action` instructions (a forward, backward or weight-gradient
// pass of one model chunk, then the sums), and its `schedule` says in which
// order the microbatches' actions run. The executor keeps each
// microbatch's values from one of its actions to the next; a running sum's
// add updates the sum in whichever action it sits, the sums' action adds
// the rest after the microbatch's last (docs/rank-program.md).
#ifndef DISTRT_SRC_SCHEDULED_LOOP_H_
#define DISTRT_SRC_SCHEDULED_LOOP_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "distrt/program.h"
#include "distrt/status.h"

namespace distrt {

struct ScheduledLoop {
  int begin = -1, end = -1;  // the microbatch_loop and its microbatch_yield
  int64_t microbatches = 0;
  int64_t tag_stride = 0;  // microbatch j's send/recv tags: tag + j * stride
  // Instruction ranges [first, last) of the body's actions, in body order.
  std::vector<std::pair<int, int>> segments;
  int sums_begin = -1;  // the adds of the yield: [sums_begin, end)
  struct Action {
    int64_t microbatch;
    int segment;  // -1: an action whose pass has no instructions here
  };
  std::vector<Action> actions;
  std::vector<size_t> last_action;  // per microbatch: its last action's index
  std::vector<int> body_values;     // what the body's instructions define
};

// The pass number of the sums' marker (after forward 0, backward 1 and
// weight gradients 2).
constexpr int64_t kSumsPass = 3;

// Whether instruction `begin` (a microbatch_loop) has a schedule.
bool HasSchedule(const Program& p, int begin);

// Reads and checks the scheduled loop starting at instruction `begin`:
// every marker inside it, the sums' marker last, each action naming a
// microbatch of the loop and a pass of the body, and each microbatch
// running every action of the body once, in body order.
Status PlanScheduledLoop(const Program& p, int begin, ScheduledLoop* out);

}  // namespace distrt

#endif  // DISTRT_SRC_SCHEDULED_LOOP_H_
