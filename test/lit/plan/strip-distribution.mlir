// RUN: dist-opt %s -split-input-file --dist-strip-distribution | FileCheck %s

// The single-device program of an annotated model: no mesh, no annotations,
// no shardings or causes on its ops.
// CHECK-NOT: dist.mesh
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT: %[[W:.*]] = nn.weight "fc.weight" : tensor<16x16xf32>
// CHECK-NEXT: %[[Y:.*]] = nn.matmul %[[X]], %[[W]] : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[R:.*]] = nn.relu %[[Y]] : tensor<8x16xf32>
// CHECK-NEXT: return %[[R]]
dist.mesh @mesh [dp = 2, tp = 2]
func.func @main(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %x0 = dist.annotate %x to <@mesh, [S(0), ?]> priority 1 source "data_parallel: batch" : tensor<8x16xf32>
  %w = nn.weight "fc.weight" {dist.cause = ["tp S(1) from 'fc: colwise'"], dist.sharding = [#dist.sharding<@mesh, [R, S(1)]>]} : tensor<16x16xf32>
  %w0 = dist.annotate %w to <@mesh, [?, S(1)]> priority 1 source "fc: colwise" : tensor<16x16xf32>
  %y = nn.matmul %x0, %w0 {dist.sharding = [#dist.sharding<@mesh, [S(0), S(1)]>]} : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %r = nn.relu %y {dist.sharding = [#dist.sharding<@mesh, [S(0), S(1)]>]} : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// A module without distribution stays as it is.
// CHECK-LABEL: func.func @plain
// CHECK-NEXT: nn.relu
func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = nn.relu %x : tensor<4xf32>
  return %r : tensor<4xf32>
}
