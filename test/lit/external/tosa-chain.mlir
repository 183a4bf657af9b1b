// RUN: dist-opt %s -dist-propagate-sharding -dist-insert-reshards -dist-partition -dist-reshard-to-collectives -split-input-file | FileCheck %s
// tosa chains partitioned through the external tosa rules.

// Megatron MLP in tosa: batched matmuls with column- then row-split
// weights, a clamp (relu) between them, and one all-reduce at the end. The
// bias add is linear, so the partial sum flows through it: the replicated
// bias becomes a partial value without communication (dist.to_partial).
dist.mesh @mesh [tp = 4]
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: tensor<1x64x64xf32> {dist.global_type = tensor<1x64x256xf32>, dist.sharding = #dist.sharding<@mesh, [S(2)]>}
// CHECK-SAME: tensor<1x64x64xf32> {dist.global_type = tensor<1x256x64xf32>, dist.sharding = #dist.sharding<@mesh, [S(1)]>}
// CHECK-NOT: dist.all_gather
// CHECK: %[[H:.*]] = tosa.matmul {{.*}}: (tensor<1x8x64xf32>, tensor<1x64x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x64xf32>
// CHECK: %[[R:.*]] = tosa.clamp %[[H]] {{.*}}: (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
// CHECK: %[[Y:.*]] = tosa.matmul %[[R]], {{.*}}: (tensor<1x8x64xf32>, tensor<1x64x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x64xf32>
// CHECK: %[[BP:.*]] = dist.to_partial %{{.*}} on @mesh axes ["tp"] sum
// CHECK: %[[B:.*]] = tosa.add %[[Y]], %[[BP]] {{.*}}: (tensor<1x8x64xf32>, tensor<1x1x64xf32>) -> tensor<1x8x64xf32>
// CHECK: %[[S:.*]] = dist.all_reduce %[[B]] on @mesh axes ["tp"] sum
// CHECK-NOT: dist.all_reduce
// CHECK: return %[[S]]
func.func @mlp(%x: tensor<1x8x64xf32>, %w1: tensor<1x64x256xf32>, %w2: tensor<1x256x64xf32>, %bias: tensor<1x1x64xf32>) -> tensor<1x8x64xf32> {
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  %w1a = dist.annotate %w1 to <@mesh, [S(2)]> : tensor<1x64x256xf32>
  %w2a = dist.annotate %w2 to <@mesh, [S(1)]> : tensor<1x256x64xf32>
  %h = tosa.matmul %x, %w1a, %zp, %zp : (tensor<1x8x64xf32>, tensor<1x64x256xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x256xf32>
  %r = tosa.clamp %h {min_val = 0.0 : f32, max_val = 3.4e38 : f32} : (tensor<1x8x256xf32>) -> tensor<1x8x256xf32>
  %y = tosa.matmul %r, %w2a, %zp, %zp : (tensor<1x8x256xf32>, tensor<1x256x64xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x8x64xf32>
  %b = tosa.add %y, %bias : (tensor<1x8x64xf32>, tensor<1x1x64xf32>) -> tensor<1x8x64xf32>
  return %b : tensor<1x8x64xf32>
}

// -----

// Element-wise ops with broadcasting on a row split; the broadcast operand
// (one row) stays whole. A sum over the split rows ends in an all-reduce,
// and a transpose moves the split to the other dimension.
dist.mesh @mesh [tp = 2]
// CHECK-LABEL: func.func @elementwise_reduce_transpose
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<4x16xf32> {dist.global_type = tensor<8x16xf32>, dist.sharding = #dist.sharding<@mesh, [S(0)]>}
// CHECK-SAME: %[[B:arg[0-9]+]]: tensor<1x16xf32> {dist.sharding = #dist.sharding<@mesh, [R]>}
// CHECK: %[[SHIFT:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> {dist.sharding = [#dist.sharding<@mesh, [R]>]}
// CHECK: %[[M:.*]] = tosa.mul %[[X]], %[[B]], %[[SHIFT]] {{.*}}: (tensor<4x16xf32>, tensor<1x16xf32>, tensor<1xi8>) -> tensor<4x16xf32>
// CHECK: %[[T:.*]] = tosa.tanh %[[M]] {{.*}}-> tensor<4x16xf32>
// CHECK: %[[S:.*]] = tosa.reduce_sum %[[T]] {axis = 0 : i32, {{.*}}P(sum){{.*}} : (tensor<4x16xf32>) -> tensor<1x16xf32>
// CHECK: %[[TR:.*]] = tosa.transpose %[[T]] {{.*}}: (tensor<4x16xf32>) -> tensor<16x4xf32>
// CHECK: dist.all_reduce %[[S]] on @mesh axes ["tp"] sum
// CHECK: return {{.*}} : tensor<1x16xf32>, tensor<16x4xf32>
func.func @elementwise_reduce_transpose(%x: tensor<8x16xf32>, %b: tensor<1x16xf32>) -> (tensor<1x16xf32>, tensor<16x8xf32>) {
  %xa = dist.annotate %x to <@mesh, [S(0)]> : tensor<8x16xf32>
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %m = tosa.mul %xa, %b, %shift : (tensor<8x16xf32>, tensor<1x16xf32>, tensor<1xi8>) -> tensor<8x16xf32>
  %t = tosa.tanh %m : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %s = tosa.reduce_sum %t {axis = 0 : i32} : (tensor<8x16xf32>) -> tensor<1x16xf32>
  %tr = tosa.transpose %t {perms = array<i32: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  return %s, %tr : tensor<1x16xf32>, tensor<16x8xf32>
}
