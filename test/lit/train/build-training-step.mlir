// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-build-training-step{config=%S/Inputs/mse-sgd.json})' | FileCheck %s --check-prefix=SGD
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-build-training-step{config=%S/Inputs/mse-adamw.yaml})' | FileCheck %s --check-prefix=ADAMW
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-build-training-step{config=%S/Inputs/mse-sgd.json batch-split=2})' | FileCheck %s --check-prefix=SPLIT

// Mistakes in the options or the config are diagnostics.
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-build-training-step)' 2>&1 | FileCheck %s --check-prefix=NO-CONFIG
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-build-training-step{config=%S/Inputs/no-such-file.json})' 2>&1 | FileCheck %s --check-prefix=NO-FILE
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-build-training-step{config=%S/Inputs/no-such-output.json})' 2>&1 | FileCheck %s --check-prefix=NO-OUTPUT
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-build-training-step{config=%S/Inputs/mse-sgd.json batch-split=0})' 2>&1 | FileCheck %s --check-prefix=SPLIT-ZERO
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-build-training-step{config=%S/Inputs/mse-sgd.json batch-split=3})' 2>&1 | FileCheck %s --check-prefix=SPLIT-THREE

// One step of SGD on a mean squared error: the step takes the labels and the
// learning rate, returns the loss, the gradient norm and each parameter's
// next value (written back in place: nn.updates).
// SGD-LABEL: func.func @main
// SGD-SAME: (%[[X:.*]]: tensor<4x8xf32> {nn.name = "x"}, %[[LABELS:.*]]: tensor<4x2xf32> {nn.name = "labels"}, %[[LR:.*]]: tensor<f32> {nn.name = "hyper.lr"})
// SGD-SAME: -> (tensor<f32> {nn.name = "loss"}, tensor<f32> {nn.name = "grad_norm"},
// SGD-SAME: tensor<8x2xf32> {nn.name = "update:fc.weight", nn.updates = "fc.weight"}, tensor<2xf32> {nn.name = "update:fc.bias", nn.updates = "fc.bias"})
// SGD: %[[W:.*]] = nn.weight "fc.weight"
// SGD: %[[H:.*]] = nn.matmul %[[X]], %[[W]] : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
// SGD-NOT: nn.phase
// SGD: %[[Y:.*]] = nn.add %[[H]],
// SGD: %[[DIFF:.*]] = nn.sub %[[Y]], %[[LABELS]] {nn.phase = "loss"}
// SGD: %[[LOSS:.*]] = nn.reduce_mean {{.*}}{nn.phase = "loss"}
// SGD: %[[XT:.*]] = nn.transpose %[[X]] perm [1, 0] {nn.phase = "backward"}
// SGD: %[[DW:.*]] = nn.matmul %[[XT]], {{.*}}{nn.phase = "backward"}
// SGD: %[[GW:.*]] = nn.identity %[[DW]] {nn.gradient_of = "fc.weight", nn.phase = "backward"}
// SGD: %[[NORM:.*]] = nn.sqrt {{.*}}{nn.phase = "optimizer"}
// SGD: %[[NEG:.*]] = nn.neg %[[LR]] {nn.phase = "optimizer"}
// SGD: %[[STEP:.*]] = nn.mul %[[NEG]], %[[GW]] {nn.phase = "optimizer"}
// SGD: %[[NEXT:.*]] = nn.add %[[W]], %[[STEP]] {nn.phase = "optimizer"}
// SGD: return %[[LOSS]], %[[NORM]], %[[NEXT]],

// AdamW: the per-step scalars are inputs; each parameter's moments are
// optimizer-state variables updated with it; fc.bias is not decayed.
// ADAMW-LABEL: func.func @main
// ADAMW-SAME: {nn.name = "hyper.lr"}, %[[SIZE:[^:]*]]: tensor<f32> {nn.name = "hyper.step_size"}, %[[BC2:[^:]*]]: tensor<f32> {nn.name = "hyper.bias_correction2_sqrt"}, %[[DECAY:[^:]*]]: tensor<f32> {nn.name = "hyper.decay"})
// ADAMW-SAME: {nn.name = "update:fc.weight/exp_avg", nn.updates = "fc.weight/exp_avg"}
// ADAMW-DAG: %[[M:.*]] = nn.variable "fc.weight/exp_avg" {nn.phase = "optimizer", nn.state_of = "fc.weight"} : tensor<8x2xf32>
// ADAMW-DAG: %[[V:.*]] = nn.variable "fc.weight/exp_avg_sq" {nn.phase = "optimizer", nn.state_of = "fc.weight"} : tensor<8x2xf32>
// ADAMW-DAG: %[[W:.*]] = nn.weight "fc.weight"
// ADAMW: nn.adam_update %[[W]], %{{[^,]*}}, %[[M]], %[[V]], %{{[^,]*}}, %[[DECAY]], %[[SIZE]], %[[BC2]]
// ADAMW: nn.constant dense<1.000000e+00>
// ADAMW-NEXT: %[[ONE:.*]] = nn.constant dense<1.000000e+00>
// ADAMW-NEXT: nn.adam_update %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %[[ONE]], %[[SIZE]], %[[BC2]]

// batch-split=2: the model takes half the batch; the step runs both halves
// (the second's inputs are named .mb1) through one copy of the work in a
// loop and sums their gradients.
// SPLIT-LABEL: func.func @main
// SPLIT-SAME: tensor<2x8xf32> {nn.name = "x"}, %{{.*}}: tensor<2x2xf32> {nn.name = "labels"}, %{{.*}}: tensor<f32> {nn.name = "hyper.lr"}, %{{.*}}: tensor<2x2xf32> {nn.name = "labels.mb1"}, %{{.*}}: tensor<2x8xf32> {nn.name = "x.mb1"}
// SPLIT: nn.microbatch_loop (%mb) count 2
// SPLIT-NEXT: nn.microbatch_select %mb, %{{.*}}, %{{.*}} : tensor<2x8xf32>
// SPLIT-NEXT: nn.matmul
// SPLIT-NOT: nn.matmul {{.*}} : tensor<2x8xf32>, tensor<8x2xf32>
// SPLIT: nn.microbatch_yield

// NO-CONFIG: error: dist-build-training-step needs config=<file>: the training config (JSON or YAML; see docs/training.md)
// NO-FILE: error: cannot read training config {{.*}}no-such-file.json
// NO-OUTPUT: error: the training config's output 'z' is not an output of the model; its outputs: y
// SPLIT-ZERO: error: dist-build-training-step: batch-split is 0; it must be 1 or more
// SPLIT-THREE: error: pipeline: 3 microbatches split the batch (dimension 0 of every input), but input 'x' is 'tensor<4x8xf32>', whose 4 rows do not divide into 3

func.func @main(%x: tensor<4x8xf32> {nn.name = "x"}) -> (tensor<4x2xf32> {nn.name = "y"}) {
  %w = nn.weight "fc.weight" : tensor<8x2xf32>
  %b = nn.weight "fc.bias" : tensor<2xf32>
  %h = nn.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  %y = nn.add %h, %b : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
