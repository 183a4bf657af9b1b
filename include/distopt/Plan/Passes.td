//===- Passes.td - plans become annotations ----------------*- tablegen -*-===//
#ifndef DISTOPT_PLAN_PASSES_TD
#define DISTOPT_PLAN_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistApplyPlan : Pass<"dist-apply-plan", "mlir::ModuleOp"> {
  let summary = "Declare the device mesh and turn plans into dist.annotate constraints";
  let description = [{
    The first step of a distributed compile (after `dist-build-training-step`
    when training). Declares `dist.mesh @mesh` from `mesh` (or checks that
    the module's own mesh has exactly those axes), then applies each `plan`
    entry in order: a plan file (YAML or JSON; see docs/plans.md) or a
    preset (`replicate`, `dp`, `zero1`, `zero2`, `fsdp`, `tp`, `sp`).
    Everything a plan says becomes a `dist.annotate` with a priority (0 is
    the strongest) and a source naming the plan part; `dist-propagate-sharding`
    does the rest. Projections whose result is only ever sliced (a fused QKV)
    are first split into one projection per slice.

    A pattern that matches nothing is a warning with the closest names, or an
    error with `strict=true` (or a plan file's `strict: true`). Places where a
    plan cannot be followed as written (heads that do not divide, batches
    smaller than the data axis) are warnings. A plan's `pipeline:` section is
    only checked here; `dist-cut-pipeline-stages` cuts the stages.

    The options are the tools' `--mesh`, `--plan` and `--strict-plan`.

    Example: `dist-apply-plan{mesh=dp=2 plan=dp}` on

    ```mlir
    func.func @main(%x: tensor<8x16xf32> {nn.name = "x"}) -> tensor<8x4xf32> {
      %w = nn.weight "fc.weight" : tensor<16x4xf32>
      %y = nn.matmul %x, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
      return %y : tensor<8x4xf32>
    }
    ```

    splits the batch over `dp`:

    ```mlir
    dist.mesh @mesh [dp = 2]
    func.func @main(%x: tensor<8x16xf32> {nn.name = "x"}) -> tensor<8x4xf32> {
      %0 = dist.annotate %x to <@mesh, [S(0)]> priority 1 source "data_parallel: batch" : tensor<8x16xf32>
      %w = nn.weight "fc.weight" : tensor<16x4xf32>
      %y = nn.matmul %0, %w : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
      return %y : tensor<8x4xf32>
    }
    ```
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "device mesh, outer to inner axes: name=size,... (e.g. dp=2,tp=4); "
           "empty: the module's own mesh">,
    ListOption<"plans", "plan", "std::string",
               "plan files (YAML/JSON) and presets (replicate, dp, zero1, "
               "zero2, fsdp, tp, sp, cp, ep), applied in order">,
    Option<"strict", "strict", "bool", /*default=*/"false",
           "a plan pattern that matches nothing is an error, not a warning">,
    Option<"machine", "machine", "std::string", /*default=*/"\"\"",
           "machine profile the plan's trial propagation weighs links with: "
           "cpu, h100, h200 or a JSON file (default: cpu)">
  ];
  let dependentDialects = ["::distopt::dist::DistDialect",
                           "::distopt::nn::NNDialect"];
}

def DistRingAttention : Pass<"dist-ring-attention", "mlir::ModuleOp"> {
  let summary = "Rewrite attention over the whole sequence into ring attention";
  let description = [{
    Context parallelism's `ring` attention (docs/plans.md), in the global
    view and before `dist-build-training-step`, so that autodiff gives its
    backward. Each attention context parallelism recognises (`Q·Kᵀ`, masks
    and scales, softmax over the sequence, `·V`) becomes `size` steps over
    the sequence cut into `size` blocks: Q, K and V get a block dimension
    (`[..., seq, d]` as `[..., size, seq/size, d]`), step t multiplies each
    query block with the key block t places back on the ring (K and V rolled
    by one block per step: an `nn.gather` roll that partitions into one
    `dist.collective_permute` per tensor and step), cuts the masks into the
    blocks of that step, and the steps' outputs merge with their softmaxes'
    log-sum-exps. With the block dimension split over `axis`, each rank
    computes its own query block and never holds the whole K, V or a row of
    scores over the whole sequence.

    An attention it cannot rewrite (a sequence that does not divide by
    `size`, a mask it cannot cut into blocks) is left as it is with a mark
    saying why; `dist-apply-plan` turns the mark into a warning and a report
    note, and all-gathers that attention's keys and values. `size` 0 reads
    the axis's size from `mesh` or the module's mesh.

    With `balance` the program's sequence is held in mirrored order: the
    sequence cut into `2 * size` chunks, block r holding chunks r and
    `2 * size - 1 - r`. Every table and mask indexed by sequence position
    that the model's inputs meet is permuted to that order (the inputs
    themselves are fed so: `dist-apply-plan` marks them), and each step
    after the first computes only the half of its block that a causal mask
    leaves visible, the same half-block on every rank. `balance` needs
    `attention=ring`.

    With `attention=auto` (a plan whose context parallelism names no
    variant, and the `cp` preset) each attention gets the variant the cost
    model finds fastest on `machine`'s links (`training`: with backward's
    collectives), among those that hold at most `memory-budget` bytes of
    one attention per rank (forward: its working set; training: what it
    keeps for backward): those it chooses ring for are rewritten, the
    others marked with their variant for `dist-apply-plan`. Each choice is
    a remark naming every candidate's estimated time or why it was none.
  }];
  let options = [
    Option<"axis", "axis", "std::string", /*default=*/"\"cp\"",
           "the mesh axis context parallelism splits the sequence over">,
    Option<"size", "size", "int64_t", /*default=*/"0",
           "the number of ranks on the ring (0: the axis's size in `mesh` "
           "or the module's mesh)">,
    Option<"balance", "balance", "bool", /*default=*/"false",
           "causal load balancing (attention=ring): rank r holds chunks r and "
           "2*size-1-r of the sequence cut into 2*size chunks; position "
           "tables and masks follow, and steps skip the key blocks a causal "
           "mask hides">,
    Option<"attention", "attention", "std::string", /*default=*/"\"ring\"",
           "ring: rewrite every attention; auto: choose each attention's "
           "variant by cost">,
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "the mesh the plan is for, name=size,... (empty: the module's "
           "own mesh, or the axis alone); its links price the choice">,
    Option<"training", "training", "bool", /*default=*/"false",
           "attention=auto: a training step follows (backward's collectives "
           "count)">,
    Option<"memoryBudget", "memory-budget", "int64_t", /*default=*/"0",
           "attention=auto: bytes per rank a variant may hold of one "
           "attention (0: no budget)">,
    Option<"machine", "machine", "std::string", /*default=*/"\"\"",
           "attention=auto: the machine profile (cpu, h100, h200 or a JSON "
           "file; default: cpu)">
  ];
  let dependentDialects = ["::distopt::nn::NNDialect"];
}

def DistStripDistribution : Pass<"dist-strip-distribution", "mlir::ModuleOp"> {
  let summary = "Drop every mesh, annotation and sharding: the model for one device";
  let description = [{
    Removes `dist.mesh` ops, folds `dist.annotate` ops into their operands
    and erases the `dist.sharding` and `dist.cause` attributes of ops: what
    is left is the single-device program of the same model, the reference a
    distributed run is checked against (`dist-run --check`, the trainer's
    reference run). The tools run it first, on the loaded model, when they
    compile for one device; it undoes what `dist-apply-plan` writes (or a
    model's own mesh and annotations), not reshards or collectives.

    Example: on

    ```mlir
    dist.mesh @mesh [tp = 2]
    func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %0 = dist.annotate %x to <@mesh, [S(1)]> : tensor<8x16xf32>
      %1 = nn.relu %0 {dist.sharding = [#dist.sharding<@mesh, [S(1)]>]} : tensor<8x16xf32>
      return %1 : tensor<8x16xf32>
    }
    ```

    it leaves

    ```mlir
    func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
      %0 = nn.relu %x : tensor<8x16xf32>
      return %0 : tensor<8x16xf32>
    }
    ```
  }];
}

#endif // DISTOPT_PLAN_PASSES_TD
