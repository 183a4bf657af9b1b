//===- StageOrder.h - a training stage's ops in schedule order --*- C++ -*-===//
//
// A pipelined training step is one program per stage holding every
// microbatch's forward and backward. The schedule (GPipe, 1F1B, interleaved,
// zero-bubble) is compiled into the order of its ops: each action's ops run
// together, in the order the actions say, so the executor needs no schedule
// of its own and frees each microbatch's activations after its backward.
// See docs/pipeline.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PIPELINESTAGES_STAGEORDER_H
#define DISTOPT_PIPELINESTAGES_STAGEORDER_H

#include "distopt/PipelineStages/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace distopt {

/// The action an op belongs to (its chunk, microbatch, and Forward or
/// Backward), or nullopt for ops of no single microbatch: weights,
/// receives, collectives on their way, the optimizer.
using TaskOfOp =
    llvm::function_ref<std::optional<ScheduleAction>(mlir::Operation *)>;

/// Moves the ops of `func` into the order of `actions`: every action's ops
/// (in their original relative order), each op preceded by what it reads
/// that belongs to no action and each dist.send right after the value it
/// sends; then the rest (gradient reductions, optimizer). With Weight
/// actions in the schedule, a Backward action keeps the ops some send to an
/// earlier stage needs (input gradients) and the rest run in its Weight
/// action.
void orderStageOps(mlir::func::FuncOp func,
                   llvm::ArrayRef<ScheduleAction> actions, TaskOfOp taskOf);

/// Moves receives earlier where needed so that every stage receives from a
/// peer in the order the peer sends (tag order for inference stages;
/// training schedules reorder both sides).
void alignReceives(llvm::ArrayRef<mlir::ModuleOp> stageModules);

/// Checks that stage programs run to the end: simulates every stage's
/// sends (buffered) and receives (blocking) in program order; a diagnostic
/// at the receive every stuck stage waits on if they cannot.
mlir::LogicalResult
verifyStageProgress(llvm::ArrayRef<mlir::ModuleOp> stageModules);

} // namespace distopt

#endif // DISTOPT_PIPELINESTAGES_STAGEORDER_H
