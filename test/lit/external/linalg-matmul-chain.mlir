// RUN: dist-opt %s -dist-propagate-sharding -dist-insert-reshards -dist-partition -dist-reshard-to-collectives -split-input-file | FileCheck %s
// linalg.matmul chains partitioned through the external linalg rules.

// Megatron MLP: the first weight split by columns, the second by rows. The
// hidden activations stay split, the second matmul sums partial products
// into its zero init, and one all-reduce completes the result.
dist.mesh @mesh [tp = 4]
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<8x64xf32> {dist.sharding = #dist.sharding<@mesh, [R]>}
// CHECK-SAME: %[[W1:arg[0-9]+]]: tensor<64x64xf32> {dist.global_type = tensor<64x256xf32>, dist.sharding = #dist.sharding<@mesh, [S(1)]>}
// CHECK-SAME: %[[W2:arg[0-9]+]]: tensor<64x64xf32> {dist.global_type = tensor<256x64xf32>, dist.sharding = #dist.sharding<@mesh, [S(0)]>}
// CHECK-NOT: dist.all_gather
// CHECK: %[[Z1:.*]] = arith.constant {{.*}}dense<0.000000e+00> : tensor<8x64xf32>
// CHECK: %[[H:.*]] = linalg.matmul {{.*}}ins(%[[X]], %[[W1]] : tensor<8x64xf32>, tensor<64x64xf32>) outs(%[[Z1]] : tensor<8x64xf32>) -> tensor<8x64xf32>
// CHECK: %[[E:.*]] = tensor.empty() {{.*}}: tensor<8x64xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}}ins(%[[H]] : tensor<8x64xf32>) outs(%[[E]] : tensor<8x64xf32>)
// CHECK: arith.maximumf
// CHECK: %[[Z2:.*]] = arith.constant {{.*}}dense<0.000000e+00> : tensor<8x64xf32>
// CHECK: %[[Y:.*]] = linalg.matmul {{.*}}dist.sharding = [#dist.sharding<@mesh, [P(sum)]>]{{.*}}ins(%[[R]], %[[W2]] : tensor<8x64xf32>, tensor<64x64xf32>) outs(%[[Z2]] : tensor<8x64xf32>)
// CHECK: %[[S:.*]] = dist.all_reduce %[[Y]] on @mesh axes ["tp"] sum
// CHECK-NOT: dist.all_reduce
// CHECK: return %[[S]] : tensor<8x64xf32>
func.func @mlp(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>) -> tensor<8x64xf32> {
  %w1a = dist.annotate %w1 to <@mesh, [S(1)]> : tensor<64x256xf32>
  %z1 = arith.constant dense<0.0> : tensor<8x256xf32>
  %h = linalg.matmul ins(%x, %w1a : tensor<8x64xf32>, tensor<64x256xf32>) outs(%z1 : tensor<8x256xf32>) -> tensor<8x256xf32>
  %e = tensor.empty() : tensor<8x256xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<8x256xf32>) outs(%e : tensor<8x256xf32>) {
  ^bb0(%in: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<8x256xf32>
  %w2a = dist.annotate %w2 to <@mesh, [S(0)]> : tensor<256x64xf32>
  %z2 = arith.constant dense<0.0> : tensor<8x64xf32>
  %y = linalg.matmul ins(%r, %w2a : tensor<8x256xf32>, tensor<256x64xf32>) outs(%z2 : tensor<8x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// Two layers on a 2-D mesh: the batch split over dp, the weights over tp.
// Each layer ends in one all-reduce over tp only; nothing moves over dp.
dist.mesh @mesh [dp = 2, tp = 2]
// CHECK-LABEL: func.func @two_layers
// CHECK-SAME: tensor<4x32xf32> {dist.global_type = tensor<8x32xf32>, dist.sharding = #dist.sharding<@mesh, [S(0), R]>}
// CHECK: linalg.matmul {{.*}}-> tensor<4x32xf32>
// CHECK: linalg.matmul {{.*}}-> tensor<4x32xf32>
// CHECK: dist.all_reduce %{{.*}} on @mesh axes ["tp"] sum
// CHECK: linalg.matmul {{.*}}-> tensor<4x32xf32>
// CHECK: linalg.matmul {{.*}}-> tensor<4x32xf32>
// CHECK: dist.all_reduce %{{.*}} on @mesh axes ["tp"] sum
// CHECK-NOT: dist.all_reduce
// CHECK-NOT: dist.all_gather
// CHECK: return %{{.*}} : tensor<4x32xf32>
func.func @two_layers(%x: tensor<8x32xf32>, %w1: tensor<32x64xf32>, %w2: tensor<64x32xf32>,
                      %w3: tensor<32x64xf32>, %w4: tensor<64x32xf32>) -> tensor<8x32xf32> {
  %xa = dist.annotate %x to <@mesh, [S(0), ?]> : tensor<8x32xf32>
  %w1a = dist.annotate %w1 to <@mesh, [?, S(1)]> : tensor<32x64xf32>
  %w2a = dist.annotate %w2 to <@mesh, [?, S(0)]> : tensor<64x32xf32>
  %w3a = dist.annotate %w3 to <@mesh, [?, S(1)]> : tensor<32x64xf32>
  %w4a = dist.annotate %w4 to <@mesh, [?, S(0)]> : tensor<64x32xf32>
  %z64 = arith.constant dense<0.0> : tensor<8x64xf32>
  %z32 = arith.constant dense<0.0> : tensor<8x32xf32>
  %h1 = linalg.matmul ins(%xa, %w1a : tensor<8x32xf32>, tensor<32x64xf32>) outs(%z64 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %y1 = linalg.matmul ins(%h1, %w2a : tensor<8x64xf32>, tensor<64x32xf32>) outs(%z32 : tensor<8x32xf32>) -> tensor<8x32xf32>
  %h2 = linalg.matmul ins(%y1, %w3a : tensor<8x32xf32>, tensor<32x64xf32>) outs(%z64 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %y2 = linalg.matmul ins(%h2, %w4a : tensor<8x64xf32>, tensor<64x32xf32>) outs(%z32 : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y2 : tensor<8x32xf32>
}

// -----

// Accumulating into a bias (a non-zero init): the contraction cannot be
// split, so the row-split weight is gathered first and the result needs no
// reduction.
dist.mesh @mesh [tp = 2]
// CHECK-LABEL: func.func @accumulate
// CHECK: %[[G:.*]] = dist.all_gather %{{.*}} on @mesh axes ["tp"] dim 0 {{.*}}: tensor<8x16xf32> -> tensor<16x16xf32>
// CHECK: linalg.matmul {{.*}}ins(%{{.*}}, %[[G]] : tensor<4x16xf32>, tensor<16x16xf32>)
// CHECK-NOT: dist.all_reduce
func.func @accumulate(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>, %bias: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %wa = dist.annotate %w to <@mesh, [S(0)]> : tensor<16x16xf32>
  %y = linalg.matmul ins(%x, %wa : tensor<4x16xf32>, tensor<16x16xf32>) outs(%bias : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// linalg.fill into tensor.empty as the init: both take the local shape of
// the result. The fill value here is an argument, not a known zero, so the
// second product cannot split its contraction: its row-split weight is
// gathered and no all-reduce follows.
dist.mesh @mesh [tp = 2]
// CHECK-LABEL: func.func @fill_init
// CHECK: %[[E1:.*]] = tensor.empty() {{.*}}: tensor<4x8xf32>
// CHECK: %[[F1:.*]] = linalg.fill {{.*}}ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[H:.*]] = linalg.matmul {{.*}}outs(%[[F1]] : tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: %[[E2:.*]] = tensor.empty() {{.*}}: tensor<4x8xf32>
// CHECK: %[[F2:.*]] = linalg.fill {{.*}}outs(%[[E2]] : tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-DAG: %[[A:.*]] = dist.all_gather %[[H]] on @mesh axes ["tp"] dim 1 {{.*}}: tensor<4x8xf32> -> tensor<4x16xf32>
// CHECK-DAG: %[[G:.*]] = dist.all_gather %{{.*}} on @mesh axes ["tp"] dim 0 {{.*}}: tensor<8x8xf32> -> tensor<16x8xf32>
// CHECK: linalg.matmul {{.*}}ins(%[[A]], %[[G]] : tensor<4x16xf32>, tensor<16x8xf32>) outs(%[[F2]] : tensor<4x8xf32>)
// CHECK-NOT: dist.all_reduce
func.func @fill_init(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>, %v: f32) -> tensor<4x8xf32> {
  %w1a = dist.annotate %w1 to <@mesh, [S(1)]> : tensor<8x16xf32>
  %w2a = dist.annotate %w2 to <@mesh, [S(0)]> : tensor<16x8xf32>
  %e1 = tensor.empty() : tensor<4x16xf32>
  %f1 = linalg.fill ins(%v : f32) outs(%e1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %h = linalg.matmul ins(%x, %w1a : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f1 : tensor<4x16xf32>) -> tensor<4x16xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %f2 = linalg.fill ins(%v : f32) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = linalg.matmul ins(%h, %w2a : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
