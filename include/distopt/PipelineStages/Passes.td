//===- Passes.td - pipeline stages as passes ---------------*- tablegen -*-===//
#ifndef DISTOPT_PIPELINESTAGES_PASSES_TD
#define DISTOPT_PIPELINESTAGES_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistCutPipelineStages : Pass<"dist-cut-pipeline-stages", "mlir::ModuleOp"> {
  let summary = "Cut a sharded module into one nested module per pipeline stage";
  let description = [{
    Runs on the sharded global module (after `dist-insert-reshards`, and
    `dist-regather-parameters` when training). Layers are found by the glob
    `split` over node names (`blocks.*`) and grouped into contiguous stages,
    one per position of the mesh axis `axis`, whose estimated compute is as
    even as possible; what comes before the first layer joins stage 0, what
    follows the last the last stage. With `virtual-stages=V` (the
    interleaved schedule) each stage holds V chunks.

    The module's contents become one `builtin.module @stage<s>` per stage,
    marked `dist.stage = s` and `dist.pipeline_axis`: a copy of the module
    holding that stage's ops, with `dist.send` / `dist.recv` (same tag on
    both sides, a reason naming the producer) for every activation that
    crosses a cut. What does not depend on the inputs (weights, constants,
    gathers of sharded parameters) is computed by every stage that reads it,
    never sent. In a training step, the loss and the backward go where the
    forward op they derive from went, a parameter's gradient and update
    where the parameter is first read. Each stage keeps its own
    `nn.microbatch_loop` over its share of one microbatch's work; its body
    is cut into actions (`nn.microbatch_action pass P chunk C`: forward,
    backward, zero-bubble's weight gradients) and the loop carries the
    stage's `schedule` for `microbatches` microbatches (`gpipe`, `1f1b`,
    `interleaved-1f1b`, `zb-h1`; see docs/pipeline.md) as (microbatch,
    pass, chunk) triples, which the runtime walks; a crossing inside the
    body is one message per microbatch (tag + microbatch x `tag_stride`).
    `dist-order-pipeline-stages` then checks the stages together.

    The options are a plan's `pipeline:` section (`split`, `microbatches`,
    `schedule`, `virtual_stages`, `axis`).

    Example: `dist-cut-pipeline-stages{split=blocks.*}` on a module with mesh
    `[pp = 2]` and layers `blocks.0`, `blocks.1` gives

    ```mlir
    module {
      module @stage0 attributes {dist.pipeline_axis = "pp", dist.stage = 0 : i64} {
        dist.mesh @mesh [pp = 2]
        func.func @main(%x: tensor<2x8xf32>) {
          ...
          dist.send %h on @mesh axis "pp" to 1 tag 0 : tensor<2x8xf32>
          return
        }
      }
      module @stage1 attributes {dist.pipeline_axis = "pp", dist.stage = 1 : i64} {
        dist.mesh @mesh [pp = 2]
        func.func @main() -> tensor<2x8xf32> {
          %h = dist.recv on @mesh axis "pp" from 0 tag 0 {dist.reason = "pipeline: stage 1 reads '/blocks.0/Relu' of stage 0"} : tensor<2x8xf32>
          ...
        }
      }
    }
    ```
  }];
  let options = [
    Option<"split", "split", "std::string", /*default=*/"\"\"",
           "glob over layer names, e.g. blocks.*">,
    Option<"axis", "axis", "std::string", /*default=*/"\"pp\"",
           "the mesh axis the stages run along">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "microbatches per step (a training step's schedule)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "gpipe, 1f1b, interleaved-1f1b or zb-h1">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "model chunks per stage (interleaved-1f1b)">
  ];
  let dependentDialects = ["::distopt::dist::DistDialect"];
}

def DistOrderPipelineStages : Pass<"dist-order-pipeline-stages", "mlir::ModuleOp"> {
  let summary = "Order each stage's receives as its peers send, and check the stages run";
  let description = [{
    Runs on the stage modules `dist-cut-pipeline-stages` made. Moves
    `dist.recv` ops outside loops earlier where needed so that every stage
    receives from a peer in the order the peer sends (for reading: messages
    match by peer and tag). Then checks the stages together: in a training
    step, that they run to the end (sends are buffered, receives block,
    every loop's actions run in its schedule's order; a diagnostic at the
    receive a stuck stage waits on, and a note where its peer waits);
    always, that they pair up (for every two stages, the tags and tensor
    types one sends, every microbatch's, equal those the other receives; a
    diagnostic names a mismatch). A mismatch would deadlock or mix messages
    at run time.

    Example: with stage 0 sending tag 0 then tag 1 to stage 1, and stage 1
    receiving

    ```mlir
    %b = dist.recv on @mesh axis "pp" from 0 tag 1 : tensor<4xf32>
    %a = dist.recv on @mesh axis "pp" from 0 tag 0 : tensor<4xf32>
    ```

    the receive of tag 0 moves first.
  }];
  let dependentDialects = ["::distopt::dist::DistDialect"];
}

def DistSelectStage : Pass<"dist-select-stage", "mlir::ModuleOp"> {
  let summary = "Keep the pipeline stage one rank runs, as the module itself";
  let description = [{
    Of the stage modules `dist-cut-pipeline-stages` made, keeps the one
    `rank` runs (its coordinate on the stage modules' `dist.pipeline_axis`)
    and makes its contents and attributes the module's; the others are
    dropped. `dist-partition{rank=N}` then partitions it for that rank. The
    tools print and export a rank's program this way.

    Example: `dist-select-stage{rank=3}` with mesh `[pp = 2, tp = 2]` keeps
    `module @stage1` (rank 3 is `pp = 1, tp = 1`):

    ```mlir
    module attributes {dist.pipeline_axis = "pp", dist.stage = 1 : i64} {
      dist.mesh @mesh [pp = 2, tp = 2]
      func.func @main() -> tensor<2x8xf32> { ... }
    }
    ```
  }];
  let options = [
    Option<"rank", "rank", "int64_t", /*default=*/"-1",
           "the rank whose stage to keep">
  ];
}

#endif // DISTOPT_PIPELINESTAGES_PASSES_TD
