// RUN: dist-opt %s | FileCheck %s
// Round trip: the printed form parses back to the same IR.
// RUN: dist-opt %s | dist-opt | FileCheck %s

// CHECK: dist.mesh @mesh [dp = 2, tp = 4]
dist.mesh @mesh [dp = 2, tp = 4]
// CHECK: dist.mesh @line [x = 8]
dist.mesh @line [x = 8]

// CHECK-LABEL: func.func @annotate
func.func @annotate(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: dist.annotate %{{.*}} to <@mesh, [S(0), S(1)]> priority 2 source "plan line 3" : tensor<8x16xf32>
  %0 = dist.annotate %x to <@mesh, [S(0), S(1)]> priority 2 source "plan line 3" : tensor<8x16xf32>
  // The long placement names parse too; open axes print as ?.
  // CHECK: dist.annotate %{{.*}} to <@mesh, [R, ?]> : tensor<8x16xf32>
  %1 = dist.annotate %0 to <@mesh, [Replicate, ?]> : tensor<8x16xf32>
  // CHECK: dist.annotate %{{.*}} to <@mesh, [S(0), S(0)]> : tensor<8x16xf32>
  %2 = dist.annotate %1 to <@mesh, [Shard(0), Shard(0)]> : tensor<8x16xf32>
  return %2 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @reshard
func.func @reshard(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: dist.reshard %{{.*}} from <@mesh, [R, P(sum)]> to <@mesh, [R, S(1)]> reason "operand 0 of nn.add" : tensor<8x16xf32> -> tensor<8x16xf32>
  %0 = dist.reshard %x from <@mesh, [R, Partial(sum)]> to <@mesh, [R, S(1)]> reason "operand 0 of nn.add" : tensor<8x16xf32> -> tensor<8x16xf32>
  // CHECK: dist.reshard %{{.*}} from <@mesh, [P(max), R]> to <@mesh, [P(avg), P(min)]> {global_type = tensor<16x16xf32>}
  %1 = dist.reshard %0 from <@mesh, [P(max), R]> to <@mesh, [P(avg), P(min)]> {global_type = tensor<16x16xf32>} : tensor<8x16xf32> -> tensor<8x16xf32>
  return %1 : tensor<8x16xf32>
}

// CHECK-LABEL: func.func @collectives
func.func @collectives(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // CHECK: dist.all_gather %{{.*}} on @mesh axes ["tp"] dim 1 : tensor<4x16xf32> -> tensor<4x64xf32>
  %0 = dist.all_gather %x on @mesh axes ["tp"] dim 1 : tensor<4x16xf32> -> tensor<4x64xf32>
  // CHECK: dist.all_gather %{{.*}} on @mesh axes ["tp"] dim 1 sizes [5, 5, 3, 3] : tensor<4x5xf32> -> tensor<4x16xf32>
  %u = nn.slice %x starts [0, 0] ends [4, 5] steps [1, 1] : tensor<4x16xf32> -> tensor<4x5xf32>
  %1 = dist.all_gather %u on @mesh axes ["tp"] dim 1 sizes [5, 5, 3, 3] : tensor<4x5xf32> -> tensor<4x16xf32>
  // CHECK: dist.all_reduce %{{.*}} on @mesh axes ["dp", "tp"] sum : tensor<4x64xf32>
  %2 = dist.all_reduce %0 on @mesh axes ["dp", "tp"] sum : tensor<4x64xf32>
  // CHECK: dist.reduce_scatter %{{.*}} on @mesh axes ["tp"] dim 1 max : tensor<4x64xf32> -> tensor<4x16xf32>
  %3 = dist.reduce_scatter %2 on @mesh axes ["tp"] dim 1 max : tensor<4x64xf32> -> tensor<4x16xf32>
  // CHECK: dist.all_to_all %{{.*}} on @mesh axes ["tp"] split 0 concat 1 : tensor<4x16xf32> -> tensor<1x64xf32>
  %4 = dist.all_to_all %3 on @mesh axes ["tp"] split 0 concat 1 : tensor<4x16xf32> -> tensor<1x64xf32>
  // CHECK: dist.local_slice %{{.*}} on @mesh axes ["dp"] dim 1 : tensor<1x64xf32> -> tensor<1x32xf32>
  %5 = dist.local_slice %4 on @mesh axes ["dp"] dim 1 : tensor<1x64xf32> -> tensor<1x32xf32>
  // CHECK: dist.collective_permute %{{.*}} on @mesh axes ["tp"] pairs [0, 1, 1, 0, 2, 3, 3, 2] : tensor<1x32xf32>
  %6 = dist.collective_permute %5 on @mesh axes ["tp"] pairs [0, 1, 1, 0, 2, 3, 3, 2] : tensor<1x32xf32>
  // CHECK: dist.to_partial %{{.*}} on @mesh axes ["tp"] sum : tensor<4x16xf32>
  %7 = dist.to_partial %x on @mesh axes ["tp"] sum : tensor<4x16xf32>
  return %7 : tensor<4x16xf32>
}

// CHECK-LABEL: func.func @point_to_point
func.func @point_to_point(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // CHECK: dist.send %{{.*}} on @mesh axis "dp" to 1 tag 7 : tensor<2x8xf32>
  dist.send %x on @mesh axis "dp" to 1 tag 7 : tensor<2x8xf32>
  // CHECK: dist.recv on @mesh axis "dp" from 0 tag 7 : tensor<2x8xf32>
  %0 = dist.recv on @mesh axis "dp" from 0 tag 7 : tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// A sharding recorded on an op's results.
// CHECK-LABEL: func.func @result_sharding
func.func @result_sharding(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: nn.relu %{{.*}} {dist.sharding = [#dist.sharding<@mesh, [S(0), R]>]}
  %0 = nn.relu %x {dist.sharding = [#dist.sharding<@mesh, [S(0), R]>]} : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// A split into pieces of given sizes, one per device along the axis.
// CHECK-LABEL: func.func @explicit_piece_sizes
func.func @explicit_piece_sizes(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: dist.annotate %{{.*}} to <@mesh, [R, S(1, sizes=[6, 2, 4, 4])]>
  %0 = dist.annotate %x to <@mesh, [R, Shard(1, sizes = [6, 2, 4, 4])]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
