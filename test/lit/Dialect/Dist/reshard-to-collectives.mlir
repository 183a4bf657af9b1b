// RUN: dist-opt %s -dist-partition -dist-reshard-to-collectives -split-input-file | FileCheck %s

dist.mesh @mesh [dp = 2, tp = 4]

// CHECK-LABEL: func.func @partial_to_replicated
// CHECK: dist.all_reduce %{{.*}} on @mesh axes ["tp"] sum
func.func @partial_to_replicated(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [R, P(sum)]>}) -> tensor<8x16xf32> {
  %0 = dist.reshard %x from <@mesh, [R, P(sum)]> to <@mesh, [R, R]> : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @partial_to_shard
// CHECK: dist.reduce_scatter %{{.*}} on @mesh axes ["tp"] dim 1 sum {{.*}}: tensor<8x16xf32> -> tensor<8x4xf32>
// CHECK-NOT: dist.all_reduce
func.func @partial_to_shard(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [R, P(sum)]>}) -> tensor<8x16xf32> {
  %0 = dist.reshard %x from <@mesh, [R, P(sum)]> to <@mesh, [R, S(1)]> : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @shard_to_replicated
// CHECK: dist.all_gather %{{.*}} on @mesh axes ["tp"] dim 0 {{.*}}: tensor<2x16xf32> -> tensor<8x16xf32>
func.func @shard_to_replicated(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [R, S(0)]>}) -> tensor<8x16xf32> {
  %0 = dist.reshard %x from <@mesh, [R, S(0)]> to <@mesh, [R, R]> : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// Moving a split from one dimension to another: one all-to-all.
// CHECK-LABEL: func.func @shard_to_shard
// CHECK: dist.all_to_all %{{.*}} on @mesh axes ["tp"] split 1 concat 0 {{.*}}: tensor<2x16xf32> -> tensor<8x4xf32>
func.func @shard_to_shard(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [R, S(0)]>}) -> tensor<8x16xf32> {
  %0 = dist.reshard %x from <@mesh, [R, S(0)]> to <@mesh, [R, S(1)]> : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// Replicated to split: a local slice, no communication.
// CHECK-LABEL: func.func @replicated_to_shard
// CHECK: dist.local_slice %{{.*}} on @mesh axes ["dp"] dim 1 {{.*}}: tensor<8x16xf32> -> tensor<8x8xf32>
func.func @replicated_to_shard(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %0 = dist.reshard %x from <@mesh, [R, R]> to <@mesh, [S(1), R]> : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh [a = 2, b = 2]

// A split moving from one axis to another of the same size: devices swap
// their pieces (one permute) instead of gathering and slicing.
// CHECK-LABEL: func.func @axis_swap
// CHECK-NOT: dist.all_gather
// CHECK: dist.collective_permute %{{.*}} on @mesh axes ["a", "b"] pairs [0, 0, 1, 2, 2, 1, 3, 3]
// CHECK-NOT: dist.all_gather
// CHECK: return
func.func @axis_swap(%x: tensor<8x16xf32> {dist.sharding = #dist.sharding<@mesh, [S(0), R]>}) -> tensor<8x16xf32> {
  %0 = dist.reshard %x from <@mesh, [S(0), R]> to <@mesh, [R, S(0)]> : tensor<8x16xf32> -> tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh [tp = 4]

// Uneven pieces: rank-specific sizes appear when partitioning for a rank.
// RUN: dist-opt %s -dist-partition=rank=2 -dist-reshard-to-collectives -split-input-file | FileCheck %s --check-prefix=RANK2
// RANK2-LABEL: func.func @uneven_gather
// RANK2: dist.all_gather %{{.*}} on @mesh axes ["tp"] dim 0 sizes [3, 3, 2, 2] {{.*}}: tensor<2x4xf32> -> tensor<10x4xf32>
func.func @uneven_gather(%x: tensor<10x4xf32> {dist.sharding = #dist.sharding<@mesh, [S(0)]>}) -> tensor<10x4xf32> {
  %0 = dist.reshard %x from <@mesh, [S(0)]> to <@mesh, [R]> : tensor<10x4xf32> -> tensor<10x4xf32>
  return %0 : tensor<10x4xf32>
}
