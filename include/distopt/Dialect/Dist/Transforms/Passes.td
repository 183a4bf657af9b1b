//===- Passes.td - distopt's sharding passes -----------------*- tablegen -*-===//
#ifndef DIST_PASSES_TD
#define DIST_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistPropagateSharding : Pass<"dist-propagate-sharding", "mlir::ModuleOp"> {
  let summary = "Give every tensor a sharding, starting from dist.annotate constraints";
  let description = [{
    Propagates placements forward and backward through every function until
    nothing changes, using each op's factor rule (ShardingRuleOpInterface).

    Order: annotations by priority (0 first); within a priority, pass-through
    ops (element-wise, reshape, transpose, annotate) first, then all ops.
    When the tensors around an op disagree on a mesh axis, the op takes the
    choice that agrees with the strongest-priority tensors and, among those,
    costs least under the cost model: the bytes its reshards move, each
    axis's bytes weighed by how much slower its link is than the fastest
    (larger tensors keep their sharding); ties break deterministically by
    operand order. A reduction factor sharded over an axis leaves the result
    partial (`P(sum)`), and partial values flow through linear ops while that
    is cheaper than reducing them (a collective's latency counted against
    the bytes saved). `machine` names the machine profile (a built-in name
    or a JSON file, docs/cost-model.md); on a mesh whose axes share one
    link, only the latency-to-bytes ratio matters.

    The result: a `dist.sharding` attribute on every op with tensor results
    (one sharding per result) and on function arguments and results. Axes no
    rule decided become replicated. Each decided placement records its cause
    in `dist.cause` (an array of strings, one per result) for reports.
  }];
  let options = [
    Option<"machine", "machine", "std::string", /*default=*/"\"\"",
           "machine profile: cpu, h100, h200 or a JSON file (default: cpu)">
  ];
  let dependentDialects = ["::distopt::dist::DistDialect"];
}

def DistInsertReshards : Pass<"dist-insert-reshards", "mlir::ModuleOp"> {
  let summary = "Insert dist.reshard wherever an op needs an operand in another sharding";
  let description = [{
    For every op, derives from its result shardings which factor each mesh axis
    shards, computes the sharding each operand must have, and inserts a
    `dist.reshard` (with the reason) where the operand's sharding differs.
    Partial values reaching a function's return are reduced. `dist.annotate`
    ops are folded away: their operands are resharded to the annotated
    sharding.
  }];
  let dependentDialects = ["::distopt::dist::DistDialect"];
}

def DistPartition : Pass<"dist-partition", "mlir::ModuleOp"> {
  let summary = "Rewrite global tensors into per-device (local) tensors";
  let description = [{
    Turns every function into the program one device runs: argument, result
    and value types become local shapes; ops are rewritten into their local
    form (ShardingRuleOpInterface::partitionOp); `dist.reshard` ops keep their
    source and target shardings and record the global type for
    `dist-reshard-to-collectives`.

    With `rank=N` the program is the one rank N runs: every shape and offset is
    concrete and collectives carry each member's piece size. Without it the
    function is the SPMD program shared by all ranks; dimensions that do not
    divide evenly show as `?` there.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"-1",
           "partition for this rank (default: the SPMD program of all ranks)">
  ];
  let dependentDialects = ["::distopt::dist::DistDialect"];
}

def DistReshardToCollectives : Pass<"dist-reshard-to-collectives", "mlir::ModuleOp"> {
  let summary = "Lower local dist.reshard ops to the cheapest sequence of collectives";
  let description = [{
    For each partitioned `dist.reshard`, searches the sequences of
    all-gather, reduce-scatter, all-reduce, all-to-all, collective-permute,
    local slices and partial masking that turn the source sharding into the
    target, and emits the fastest under the cost model: each collective
    takes its link's latency plus the bytes a device sends over the link's
    bandwidth, the links of the mesh axes coming from the machine profile
    (shortest-path search over shardings; see docs/resharding.md). A slow
    axis makes the plan move fewer bytes over it. When the cheapest plan
    gathers a dimension and slices it again, the emitted collectives say so
    in their `dist.reason` attribute.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"-1",
           "the rank the module was partitioned for (fills piece sizes)">,
    Option<"machine", "machine", "std::string", /*default=*/"\"\"",
           "machine profile: cpu, h100, h200 or a JSON file (default: cpu)">
  ];
  let dependentDialects = ["::distopt::dist::DistDialect"];
}

def DistTestShardingRules : Pass<"dist-test-sharding-rules", "mlir::ModuleOp"> {
  let summary = "Print each op's sharding rule as a remark (for tests)";
  let description = [{
    Emits a remark with the factor rule of every op that implements
    ShardingRuleOpInterface, and an error if the rule does not match the op's
    shapes.
  }];
}

#endif // DIST_PASSES_TD
