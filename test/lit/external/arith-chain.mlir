// RUN: dist-opt %s -dist-propagate-sharding -dist-insert-reshards -dist-partition -dist-reshard-to-collectives -split-input-file | FileCheck %s
// arith and math element-wise chains on tensors partitioned through the
// external arith/math rules.

// A row split flows through the whole chain; the splat constant becomes a
// local splat of the piece's shape. No communication.
dist.mesh @mesh [tp = 4]
// CHECK-LABEL: func.func @chain
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<2x16xf32> {dist.global_type = tensor<8x16xf32>, dist.sharding = #dist.sharding<@mesh, [S(0)]>}
// CHECK-SAME: %[[Y:arg[0-9]+]]: tensor<2x16xf32> {dist.global_type = tensor<8x16xf32>, dist.sharding = #dist.sharding<@mesh, [S(0)]>}
// CHECK: %[[C:.*]] = arith.constant {{.*}}dense<5.000000e-01> : tensor<2x16xf32>
// CHECK: %[[M:.*]] = arith.mulf %[[X]], %[[C]] {{.*}}: tensor<2x16xf32>
// CHECK: %[[T:.*]] = math.tanh %[[M]] {{.*}}: tensor<2x16xf32>
// CHECK: %[[A:.*]] = arith.addf %[[T]], %[[Y]] {{.*}}: tensor<2x16xf32>
// CHECK: %[[CMP:.*]] = arith.cmpf ogt, %[[A]], %[[C]] {{.*}}: tensor<2x16xf32>
// CHECK: %[[S:.*]] = arith.select %[[CMP]], %[[A]], %[[C]] {{.*}}: tensor<2x16xi1>, tensor<2x16xf32>
// CHECK-NOT: dist.
// CHECK: return %[[S]] : tensor<2x16xf32>
func.func @chain(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %xa = dist.annotate %x to <@mesh, [S(0)]> : tensor<8x16xf32>
  %half = arith.constant dense<0.5> : tensor<8x16xf32>
  %m = arith.mulf %xa, %half : tensor<8x16xf32>
  %t = math.tanh %m : tensor<8x16xf32>
  %a = arith.addf %t, %y : tensor<8x16xf32>
  %c = arith.cmpf ogt, %a, %half : tensor<8x16xf32>
  %s = arith.select %c, %a, %half : tensor<8x16xi1>, tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}

// -----

// A constant that is not a splat stays whole; its split user slices it
// locally (no communication).
dist.mesh @mesh [tp = 2]
// CHECK-LABEL: func.func @dense_constant
// CHECK: %[[C:.*]] = arith.constant {{.*}}dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK: %[[L:.*]] = dist.local_slice %[[C]] on @mesh axes ["tp"] dim 0 {{.*}}: tensor<2x2xf32> -> tensor<1x2xf32>
// CHECK: arith.addf %{{.*}}, %[[L]] {{.*}}: tensor<1x2xf32>
func.func @dense_constant(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %xa = dist.annotate %x to <@mesh, [S(0)]> : tensor<2x2xf32>
  %c = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %a = arith.addf %xa, %c : tensor<2x2xf32>
  return %a : tensor<2x2xf32>
}

// -----

// A partial sum flows through addition of two partial values and through a
// scaling, and is reduced once.
dist.mesh @mesh [tp = 2]
// CHECK-LABEL: func.func @partial_flow
// CHECK: %[[A:.*]] = linalg.matmul
// CHECK: %[[B:.*]] = linalg.matmul
// CHECK-NOT: dist.all_reduce
// CHECK: %[[S:.*]] = arith.addf %[[A]], %[[B]] {{.*}}P(sum)
// CHECK: %[[N:.*]] = arith.negf %[[S]] {{.*}}P(sum)
// CHECK: dist.all_reduce %[[N]] on @mesh axes ["tp"] sum
// CHECK-NOT: dist.all_reduce
func.func @partial_flow(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %v: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %xa = dist.annotate %x to <@mesh, [S(1)]> : tensor<4x16xf32>
  %wa = dist.annotate %w to <@mesh, [S(0)]> : tensor<16x8xf32>
  %va = dist.annotate %v to <@mesh, [S(0)]> : tensor<16x8xf32>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %a = linalg.matmul ins(%xa, %wa : tensor<4x16xf32>, tensor<16x8xf32>) outs(%zero : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = linalg.matmul ins(%xa, %va : tensor<4x16xf32>, tensor<16x8xf32>) outs(%zero : tensor<4x8xf32>) -> tensor<4x8xf32>
  %s = arith.addf %a, %b : tensor<4x8xf32>
  %n = arith.negf %s : tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}
