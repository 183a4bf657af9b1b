//===- StageOrder.h - a training stage's actions and messages ---*- C++ -*-===//
//
// A pipelined training step holds, per stage, one microbatch loop whose
// body is the stage's share of one microbatch's forward and backward. The
// schedule (GPipe, 1F1B, interleaved, zero-bubble) is a table of actions
// on the loop: the body is cut into actions (a forward, backward or
// weight-gradient pass of one model chunk), and the runtime runs the
// actions of every microbatch in the table's order, keeping each
// microbatch's values until its last action. See docs/pipeline.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PIPELINESTAGES_STAGEORDER_H
#define DISTOPT_PIPELINESTAGES_STAGEORDER_H

#include "distopt/PipelineStages/Schedule.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <vector>

namespace distopt {

/// The pass and chunk an op of the loop body belongs to by itself, or
/// nullopt for ops that go with what they read or what reads them
/// (receives, sends, reshards, the microbatch's inputs).
using TaskOfOp =
    llvm::function_ref<std::optional<ScheduleAction>(mlir::Operation *)>;

/// Cuts `loop`'s body into the actions of `actions` (this stage's schedule):
/// the ops of each (pass, chunk) move together behind an
/// nn.microbatch_action marker, forward passes by ascending chunk, then
/// backward and weight passes by descending chunk; the loop gets the
/// schedule as (microbatch, pass, chunk) triples and `tagStride`. With
/// Weight actions in the schedule, a backward keeps the ops some send to an
/// earlier stage needs (input gradients) and the rest wait in its Weight
/// action.
void scheduleLoopBody(nn::MicrobatchLoopOp loop,
                      llvm::ArrayRef<ScheduleAction> actions,
                      int64_t tagStride, TaskOfOp taskOf);

/// One point-to-point message of a stage program as it runs: a send or a
/// receive, its peer and its tag (a loop body's messages once per
/// microbatch, in the schedule's order, their tags offset by the
/// microbatch).
struct StageMessage {
  mlir::Operation *op;
  bool isSend;
  int64_t peer, tag;
};
std::vector<StageMessage> stageMessages(mlir::ModuleOp stage);

/// Moves receives outside loops earlier where needed so that every stage
/// receives from a peer in the order the peer sends (tag order for
/// inference stages). Messages are matched by tag, so this is for reading
/// the programs, not for correctness.
void alignReceives(llvm::ArrayRef<mlir::ModuleOp> stageModules);

/// Checks that stage programs run to the end: simulates every stage's
/// sends (buffered) and receives (blocking, matched by peer and tag) in the
/// order they run; a diagnostic at the receive every stuck stage waits on if
/// they cannot.
mlir::LogicalResult
verifyStageProgress(llvm::ArrayRef<mlir::ModuleOp> stageModules);

} // namespace distopt

#endif // DISTOPT_PIPELINESTAGES_STAGEORDER_H
