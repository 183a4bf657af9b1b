//===- PlanUtils.h - what plans and presets share ---------------*- C++ -*-===//
#ifndef DISTOPT_LIB_PLAN_PLANUTILS_H
#define DISTOPT_LIB_PLAN_PLANUTILS_H

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Plan/Plan.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/GlobPattern.h"

#include <string>
#include <vector>

namespace distopt::plan {

/// Where a weight is consumed: `op` reads it as operand `operand`, after
/// passing through layout ops (transpose, reshape, cast).
struct WeightUse {
  mlir::Operation *weight; // the nn.weight op
  mlir::Operation *op;     // the consumer (matmul, gather, conv)
  unsigned operand;
};

/// Every compute use of every weight in `func`, in program order.
std::vector<WeightUse> findWeightUses(mlir::func::FuncOp func);

/// Names a pattern may match for a use: the weight name, the weight name
/// without its last component (`.weight`/`.bias`), and the consumer's node
/// path (`/blocks.0/attn/qkv/MatMul` -> `blocks.0.attn.qkv`).
std::vector<std::string> namesOf(const WeightUse &use);

/// A glob pattern (`*`, `?`, `[...]`, `{a,b}`); a diagnostic at `loc` if it
/// is malformed.
mlir::FailureOr<llvm::GlobPattern> compileGlob(llvm::StringRef pattern,
                                               mlir::Location loc);

/// The dimension of the consumer's operand that a style shards, or a failure
/// with a message saying why the style does not fit.
mlir::FailureOr<int64_t> styleDim(const WeightUse &use, llvm::StringRef style,
                                  std::string &why);

/// A sharding with `placement` on mesh axis `axis` and open elsewhere.
dist::ShardingAttr oneAxisSharding(dist::MeshOp mesh, int64_t axis,
                                   dist::Placement placement);

/// Constrains operand `operand` of `user` with `sharding` by inserting a
/// dist.annotate in front of it.
void annotateOperand(mlir::Operation *user, unsigned operand,
                     dist::ShardingAttr sharding, int64_t priority,
                     llvm::StringRef source);

/// Constrains value `v` for all its users (annotate right after its
/// definition).
void annotateValue(mlir::Value v, dist::ShardingAttr sharding, int64_t priority,
                   llvm::StringRef source);

/// The module's main function (or its only one); null with a diagnostic.
mlir::func::FuncOp mainFunction(mlir::ModuleOp module);

/// The module's mesh; null with a diagnostic at `loc` (where the plan asks
/// for it) saying `what` needs it.
dist::MeshOp requireMesh(mlir::ModuleOp module, mlir::Location loc,
                         llvm::StringRef what, llvm::StringRef axis = {});

/// Index of mesh axis `name`, or -1 with a diagnostic listing the axes.
int64_t requireAxis(dist::MeshOp mesh, mlir::Location loc, llvm::StringRef name,
                    llvm::StringRef what);

/// Up to three names from `candidates` closest to `name` (edit distance).
std::vector<std::string>
closestNames(llvm::StringRef name, const std::vector<std::string> &candidates);

/// Rewrites a projection whose result is only ever sliced along its last
/// dimension (a fused QKV) into one projection per slice, each reading a
/// window of the stored weight. Computes the same values.
void splitFusedProjections(mlir::func::FuncOp func);

/// The tensor-parallel preset: finds the Megatron structure by itself.
/// Where it cannot split as Megatron would (heads that do not divide) it
/// warns at the projection and adds a line to `notes`.
mlir::LogicalResult applyAutoTensorParallel(mlir::ModuleOp module,
                                            mlir::Location loc,
                                            llvm::StringRef axisName,
                                            std::vector<std::string> &notes);

/// Context parallelism: splits the inputs along the sequence (dimension 1)
/// over `spec.axis` and pins each recognised attention to `spec.attention`,
/// or, where the plan names none, to the variant dist-ring-attention chose
/// (or else the fastest of allgather and ulysses on `machine`'s links, a
/// remark and an entry of `findings.attention`); what it cannot follow is a
/// warning that also goes to `findings.notes`.
mlir::LogicalResult
applyContextParallel(mlir::ModuleOp module, const ContextParallelSpec &spec,
                     std::shared_ptr<const cost::MachineProfile> machine,
                     PlanFindings &findings);

/// The placements propagation would give `values` (dist::propagatedPlacements;
/// the real propagation runs later, verified); empty when it fails. Its
/// diagnostics are dropped: the answer is only read.
std::vector<llvm::SmallVector<dist::Placement>> propagatedPlacementsQuietly(
    mlir::ModuleOp module, llvm::ArrayRef<mlir::Value> values,
    std::shared_ptr<const cost::MachineProfile> machine);

/// After the whole plan is applied: each attention context parallelism
/// split by heads (ulysses) whose heads, after the other axes' split (tensor
/// parallelism splits heads too), do not divide by the context axis. Where
/// the plan named ulysses it gets a warning naming the layer and the uneven
/// split it gets (some ranks of the axis then compute fewer heads, or
/// none); where the cost model chose it, the attention gathers keys and
/// values instead, said in a remark and in the report's decision. Removes
/// the marks applyContextParallel left for it.
void checkUlyssesHeads(mlir::ModuleOp module,
                       std::shared_ptr<const cost::MachineProfile> machine,
                       PlanFindings &findings);

/// What dist-ring-attention does (before the training step is built).
struct RingAttentionOptions {
  std::string axis = "cp";
  /// Ranks on the ring (the axis's size); 0: nothing to do.
  int64_t blocks = 0;
  /// Causal load balancing (only without `choose`): the sequence is held in
  /// mirrored chunks (mirroredChunks(blocks)), the tables indexed by
  /// position are permuted to that order (permuteSequenceTables) and each
  /// step after the first skips the half of its blocks a causal mask hides.
  /// An input whose sequence does not divide by 2 x blocks, or a model the
  /// layout cannot follow, is an error.
  bool balance = false;
  /// The plan names no variant: each attention gets the one the cost model
  /// finds fastest (ContextParallelCost.h); those it chooses ring for are
  /// rewritten, the others marked for dist-apply-plan. Else every
  /// attention is rewritten.
  bool choose = false;
  /// For the choice: whether backward follows, the memory budget per rank,
  /// the mesh (names, sizes; empty: the axis alone) and the machine.
  bool training = false;
  std::optional<int64_t> memoryBudget;
  std::vector<std::string> meshAxes;
  std::vector<int64_t> meshSizes;
  std::shared_ptr<const cost::MachineProfile> machine;
};

/// Ring attention: rewrites each attention over the whole sequence (each
/// that the cost model chose ring for, with `options.choose`) into
/// `blocks` steps over sequence blocks whose keys and values roll along
/// the axis. An attention it cannot rewrite keeps a mark saying why, which
/// applyContextParallel turns into a note (its keys and values are then
/// all-gathered); with `choose`, the next fastest variant is taken instead.
/// Each choice is a remark and goes to `decisions` (when given).
mlir::LogicalResult
applyRingAttention(mlir::ModuleOp module, const RingAttentionOptions &options,
                   std::vector<AttentionDecision> *decisions);

/// The order causal load balancing holds the sequence in, for `ranks`
/// ranks: 2 x ranks chunks, rank r's block being chunks r and
/// 2 x ranks - 1 - r: [0, 2n-1, 1, 2n-2, ...].
llvm::SmallVector<int64_t> mirroredChunks(int64_t ranks);

/// Permutes every table indexed by sequence position (rotary tables,
/// position embeddings, masks) where a value computed from the inputs
/// meets it, to the order of `chunks` (equal chunks of `sequence`), in
/// which the inputs will be fed. Fails, saying why, where an op reads the
/// sequence in a way the permutation cannot follow (slicing it, picking
/// positions by index).
mlir::LogicalResult permuteSequenceTables(mlir::func::FuncOp func,
                                          int64_t sequence,
                                          llvm::ArrayRef<int64_t> chunks,
                                          std::string &why);

} // namespace distopt::plan

#endif // DISTOPT_LIB_PLAN_PLANUTILS_H
