// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-plan{mesh=dp=2 plan=dp})' | FileCheck %s

// Data parallelism splits every input's rows and also a batch the model
// concatenates from inputs along dimension 0 (DPO's chosen and rejected
// rows): the concat keeps no row split of its operands, so its result is
// annotated again. A concat along another dimension, or of a computed value,
// is left to propagation.

// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[R:.*]] = dist.annotate %arg1 to <@mesh, [S(0)]> priority 1 source "data_parallel: batch"
// CHECK-DAG: %[[C:.*]] = dist.annotate %arg0 to <@mesh, [S(0)]> priority 1 source "data_parallel: batch"
// CHECK: %[[B:.*]] = nn.concat %[[C]], %[[R]] axis 0
// CHECK-NEXT: %[[BS:.*]] = dist.annotate %[[B]] to <@mesh, [S(0)]> priority 1 source "data_parallel: batch concatenated from inputs"
// CHECK-NEXT: %[[W:.*]] = nn.concat %[[C]], %[[R]] axis 1
// CHECK-NEXT: %[[T:.*]] = nn.tanh %[[R]]
// CHECK-NEXT: %[[M:.*]] = nn.concat %[[C]], %[[T]] axis 0
// CHECK-NEXT: return %[[BS]], %[[W]], %[[M]]

func.func @main(%chosen: tensor<4x12xf32> {nn.name = "chosen"},
                %rejected: tensor<4x12xf32> {nn.name = "rejected"})
    -> (tensor<8x12xf32>, tensor<4x24xf32>, tensor<8x12xf32>) {
  %batch = nn.concat %chosen, %rejected axis 0 : (tensor<4x12xf32>, tensor<4x12xf32>) -> tensor<8x12xf32>
  %wide = nn.concat %chosen, %rejected axis 1 : (tensor<4x12xf32>, tensor<4x12xf32>) -> tensor<4x24xf32>
  %t = nn.tanh %rejected : tensor<4x12xf32>
  %mixed = nn.concat %chosen, %t axis 0 : (tensor<4x12xf32>, tensor<4x12xf32>) -> tensor<8x12xf32>
  return %batch, %wide, %mixed : tensor<8x12xf32>, tensor<4x24xf32>, tensor<8x12xf32>
}
