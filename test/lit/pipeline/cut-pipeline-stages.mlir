// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-cut-pipeline-stages{split=blocks.*})' | FileCheck %s

// A training step (built, planned and sharded by the passes before this one)
// is cut with its schedule as each stage loop's table of actions.
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-strip-distribution, dist-build-training-step{config=%S/../train/Inputs/mse-sgd.json batch-split=4}, dist-apply-plan{mesh=pp=2}, dist-propagate-sharding, dist-tie-updates-to-state, dist-insert-reshards, cse, dist-cut-pipeline-stages{split=blocks.* microbatches=4 schedule=gpipe})' | FileCheck %s --check-prefix=GPIPE
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-strip-distribution, dist-build-training-step{config=%S/../train/Inputs/mse-sgd.json batch-split=4}, dist-apply-plan{mesh=pp=2}, dist-propagate-sharding, dist-tie-updates-to-state, dist-insert-reshards, cse, dist-cut-pipeline-stages{split=blocks.* microbatches=4 schedule=1f1b})' | FileCheck %s --check-prefix=1F1B

// Mistakes in the options, or a model that does not fit them, are diagnostics.
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-cut-pipeline-stages)' 2>&1 | FileCheck %s --check-prefix=NO-SPLIT
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-cut-pipeline-stages{split=blocks.* schedule=2f2b})' 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-cut-pipeline-stages{split=blocks.* microbatches=0})' 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-cut-pipeline-stages{split=blocks.* axis=stages})' 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-strip-distribution, dist-cut-pipeline-stages{split=blocks.*})' 2>&1 | FileCheck %s --check-prefix=NO-MESH
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-cut-pipeline-stages{split=layers.*})' 2>&1 | FileCheck %s --check-prefix=NO-LAYERS
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-cut-pipeline-stages{split=blocks.* schedule=interleaved-1f1b virtual-stages=2})' 2>&1 | FileCheck %s --check-prefix=CHUNKS

// Each stage is a copy of the module holding its layer; the activation that
// crosses the cut is sent and received with one tag. The weights stay with
// the stage that reads them; the input goes to both stages.
// CHECK: module @stage0 attributes {dist.pipeline_axis = "pp", dist.stage = 0 : i64} {
// CHECK-NEXT: dist.mesh @mesh [pp = 2]
// CHECK-NEXT: func.func @main(%[[X:.*]]: tensor<4x8xf32> {nn.name = "x"}) {
// CHECK-NEXT: %[[W0:.*]] = nn.weight "blocks.0.fc.weight"
// CHECK-NEXT: %[[H0:.*]] = nn.matmul %[[X]], %[[W0]]
// CHECK-NEXT: %[[A0:.*]] = nn.relu %[[H0]]
// CHECK-NEXT: dist.send %[[A0]] on @mesh axis "pp" to 1 tag 0 : tensor<4x8xf32>
// CHECK-NEXT: return
// CHECK: module @stage1 attributes {dist.pipeline_axis = "pp", dist.stage = 1 : i64} {
// CHECK-NEXT: dist.mesh @mesh [pp = 2]
// CHECK-NEXT: func.func @main(%[[X1:.*]]: tensor<4x8xf32> {nn.name = "x"}) -> (tensor<4x8xf32> {nn.name = "y"}) {
// CHECK-NEXT: %[[W1:.*]] = nn.weight "blocks.1.fc.weight"
// CHECK-NEXT: %[[R:.*]] = dist.recv on @mesh axis "pp" from 0 tag 0 {dist.reason = "pipeline: stage 1 reads '/blocks.0/Relu' of stage 0"} : tensor<4x8xf32>
// CHECK-NEXT: %[[H1:.*]] = nn.matmul %[[R]], %[[W1]]
// CHECK-NEXT: %[[A1:.*]] = nn.relu %[[H1]]
// CHECK-NEXT: %[[Y:.*]] = nn.add %[[A1]], %[[X1]]
// CHECK-NEXT: return %[[Y]]

// Two stages, four microbatches: each stage keeps one copy of its share of
// a microbatch's work in a loop, cut into a forward action (pass 0) and a
// backward action (pass 1); the schedule is the loop's table of
// (microbatch, pass, chunk). One send and one receive per microbatch cross
// the cut inside the loop (tags offset by the microbatch times the stride);
// after it, stage 0 sends its share of the gradient norm and the learning
// rate the other stage's update reads.
// GPIPE-LABEL: module @stage0
// GPIPE: nn.microbatch_loop (%mb) count 4 attributes {{.*}}schedule = array<i64: 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 0, 1, 0, 1, 1, 0, 2, 1, 0, 3, 1, 0>, tag_stride = 4 : i64}
// GPIPE-NEXT: nn.microbatch_action pass 0 chunk 0
// GPIPE-NEXT: nn.microbatch_select
// GPIPE: dist.send {{.*}} to 1 tag 0
// GPIPE-NEXT: nn.microbatch_action pass 1 chunk 0
// GPIPE: dist.recv {{.*}} from 1 tag 1
// GPIPE: nn.microbatch_yield
// GPIPE: dist.send {{.*}} to 1 tag 2
// GPIPE: dist.send {{.*}} to 1 tag 3
// GPIPE-LABEL: module @stage1
// GPIPE: schedule = array<i64: 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 0, 1, 0, 1, 1, 0, 2, 1, 0, 3, 1, 0>
// GPIPE-NEXT: nn.microbatch_action pass 0 chunk 0
// GPIPE-NEXT: dist.recv {{.*}} from 0 tag 0
// GPIPE: nn.microbatch_action pass 1 chunk 0
// GPIPE: dist.send {{.*}} to 0 tag 1
// GPIPE: nn.microbatch_yield
// GPIPE: dist.recv {{.*}} from 0 tag 2
// GPIPE: dist.recv {{.*}} from 0 tag 3
// Under 1F1B stage 0 warms up with one forward, then alternates; the last
// stage alternates from the start.
// 1F1B-LABEL: module @stage0
// 1F1B: schedule = array<i64: 0, 0, 0, 1, 0, 0, 0, 1, 0, 2, 0, 0, 1, 1, 0, 3, 0, 0, 2, 1, 0, 3, 1, 0>
// 1F1B-LABEL: module @stage1
// 1F1B: schedule = array<i64: 0, 0, 0, 0, 1, 0, 1, 0, 0, 1, 1, 0, 2, 0, 0, 2, 1, 0, 3, 0, 0, 3, 1, 0>

// NO-SPLIT: error: dist-cut-pipeline-stages needs split=<glob over layer names>, e.g. split=blocks.*
// SCHEDULE: error: dist-cut-pipeline-stages: unknown schedule '2f2b'; expected gpipe, 1f1b, interleaved-1f1b, zb-h1
// COUNT: error: dist-cut-pipeline-stages: microbatches and virtual-stages must be 1 or more
// AXIS: error: pipeline: mesh @mesh has no axis 'stages'
// NO-MESH: error: dist-cut-pipeline-stages: the module has no mesh to cut along
// NO-LAYERS: error: pipeline: 2 stages on mesh axis 'pp' but the split pattern 'layers.*' finds 0 layer(s)
// CHUNKS: error: pipeline.virtual_stages: interleaved schedules order forward and backward passes; they apply to training (--train)

dist.mesh @mesh [pp = 2]
func.func @main(%x: tensor<4x8xf32> {nn.name = "x"}) -> (tensor<4x8xf32> {nn.name = "y"}) {
  %w0 = nn.weight "blocks.0.fc.weight" : tensor<8x8xf32>
  %w1 = nn.weight "blocks.1.fc.weight" : tensor<8x8xf32>
  %h0 = nn.matmul %x, %w0 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("/blocks.0/fc/MatMul")
  %a0 = nn.relu %h0 : tensor<4x8xf32> loc("/blocks.0/Relu")
  %h1 = nn.matmul %a0, %w1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32> loc("/blocks.1/fc/MatMul")
  %a1 = nn.relu %h1 : tensor<4x8xf32> loc("/blocks.1/Relu")
  %y = nn.add %a1, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("/Add")
  return %y : tensor<4x8xf32>
}
