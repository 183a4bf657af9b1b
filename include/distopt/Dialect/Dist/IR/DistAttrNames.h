//===- DistAttrNames.h - names of the dist dialect's attributes -*- C++ -*-===//
//
// The discardable attributes the sharding passes, the pipeline cut and the
// exporter read and write, spelled once (as Shardy's constants.h does).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_DIST_IR_DISTATTRNAMES_H
#define DISTOPT_DIALECT_DIST_IR_DISTATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace distopt::dist {

/// On an op: an array with one #dist.sharding per result. On a function
/// argument or result: its #dist.sharding.
inline constexpr llvm::StringLiteral kShardingAttr = "dist.sharding";
/// On an op: an array with one string per result, why propagation chose the
/// result's sharding.
inline constexpr llvm::StringLiteral kCauseAttr = "dist.cause";
/// On a reshard or collective: why it exists (which op needed which layout).
inline constexpr llvm::StringLiteral kReasonAttr = "dist.reason";
/// On a collective the planner split into steps: the step it is.
inline constexpr llvm::StringLiteral kNoteAttr = "dist.note";
/// After partitioning, on an op, argument or result: its global type.
inline constexpr llvm::StringLiteral kGlobalTypeAttr = "dist.global_type";
/// On a module partitioned for one rank: the rank.
inline constexpr llvm::StringLiteral kRankAttr = "dist.rank";
/// On a pipeline stage's module: the stage index.
inline constexpr llvm::StringLiteral kStageAttr = "dist.stage";
/// On a pipeline stage's module: the mesh axis the stages are cut along
/// (collectives inside the stage never use it).
inline constexpr llvm::StringLiteral kPipelineAxisAttr = "dist.pipeline_axis";
/// On a function argument or result: dimension 1 (the sequence) is held in
/// the order of these chunks (equal chunks of the global sequence, an i64
/// array: causal load balancing's mirrored pairs). The runtime feeds and
/// assembles the global tensor in that order (rank-program.md, ChunkOrder).
inline constexpr llvm::StringLiteral kSequenceChunksAttr =
    "dist.sequence_chunks";
/// On a parameter's mixed-precision compute copy (an nn.cast of a master
/// that ZeRO levels 1 and 2 split): the copy is cast from the rank's shard,
/// gathered once per step and kept whole for forward and backward, so it is
/// not gathered again for backward (dist-regather-parameters) and the report
/// counts the whole copy.
inline constexpr llvm::StringLiteral kGatheredOnceAttr = "dist.gathered_once";

} // namespace distopt::dist

#endif // DISTOPT_DIALECT_DIST_IR_DISTATTRNAMES_H
