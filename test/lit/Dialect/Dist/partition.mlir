// RUN: dist-opt %s -dist-propagate-sharding -dist-insert-reshards -dist-partition -split-input-file | FileCheck %s --check-prefix=SPMD
// RUN: dist-opt %s -dist-propagate-sharding -dist-insert-reshards -dist-partition=rank=1 -split-input-file | FileCheck %s --check-prefix=RANK1
// RUN: not dist-opt %s -dist-partition=rank=9 -split-input-file 2>&1 | FileCheck %s --check-prefix=OUTSIDE

// OUTSIDE: error: rank 9 is outside mesh @mesh of 4 devices

dist.mesh @mesh [tp = 4]
// Local shapes; the global type and sharding stay as attributes.
// SPMD-LABEL: func.func @column
// SPMD-SAME: -> (tensor<8x4xf32> {dist.global_type = tensor<8x16xf32>, dist.sharding = #dist.sharding<@mesh, [S(1)]>})
// SPMD: nn.weight "w" {{.*}}dist.global_type = tensor<32x16xf32>, dist.sharding = [#dist.sharding<@mesh, [S(1)]>]} : tensor<32x4xf32>
// SPMD: nn.matmul {{.*}} : tensor<8x32xf32>, tensor<32x4xf32> -> tensor<8x4xf32>
func.func @column(%x: tensor<8x32xf32>) -> tensor<8x16xf32> {
  %w = nn.weight "w" : tensor<32x16xf32>
  %wa = dist.annotate %w to <@mesh, [S(1)]> : tensor<32x16xf32>
  %y = nn.matmul %x, %wa : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}

// -----

// 10 rows over 4 devices: pieces of 3, 3, 2, 2. The SPMD program cannot say
// which, so the extent is dynamic; rank 1's program has 3.
dist.mesh @mesh [tp = 4]
// SPMD-LABEL: func.func @uneven
// SPMD-SAME: %{{.*}}: tensor<?x8xf32>
// RANK1-LABEL: func.func @uneven
// RANK1-SAME: %{{.*}}: tensor<3x8xf32>
func.func @uneven(%x: tensor<10x8xf32>) -> tensor<10x8xf32> {
  %xa = dist.annotate %x to <@mesh, [S(0)]> : tensor<10x8xf32>
  %r = nn.relu %xa : tensor<10x8xf32>
  return %r : tensor<10x8xf32>
}

// -----

// A vocabulary-split lookup: rank 1 holds rows 24..47 of 96 and masks
// indices outside them; its result is a partial sum.
dist.mesh @mesh [tp = 4]
// RANK1-LABEL: func.func @embedding
// RANK1: nn.weight "wte" {{.*}}: tensor<24x8xf32>
// RANK1: %[[OFF:.*]] = nn.constant dense<24> : tensor<i64>
// RANK1: nn.sub %{{.*}}, %[[OFF]]
// RANK1: nn.gather {{.*}} -> tensor<2x5x8xf32>
// RANK1: nn.where
func.func @embedding(%ids: tensor<2x5xi64>) -> tensor<2x5x8xf32> {
  %wte = nn.weight "wte" : tensor<96x8xf32>
  %wa = dist.annotate %wte to <@mesh, [S(0)]> : tensor<96x8xf32>
  %e = nn.gather %wa, %ids axis 0 : tensor<96x8xf32>, tensor<2x5xi64> -> tensor<2x5x8xf32>
  return %e : tensor<2x5x8xf32>
}

// -----

// A roll (nn.gather with constant indices (i - s) mod n) of a dimension
// split over tp keeps the split. By 4 of 16 rows (one piece of 4) it is one
// collective_permute, each rank sending its piece one rank on; by 2 rows
// (half a piece) each rank gathers the rows, rolls them and keeps its piece.
dist.mesh @mesh [tp = 4]
// SPMD-LABEL: func.func @roll
// SPMD: dist.collective_permute %{{.*}} on @mesh axes ["tp"] pairs [0, 1, 1, 2, 2, 3, 3, 0] {{{.*}}dist.reason = "blocks around the ring: nn.gather at {{.*}} rolls dimension 0 by 1 piece(s)"{{.*}}} : tensor<4x8xf32>
// SPMD: dist.all_gather %{{.*}} on @mesh axes ["tp"] dim 0 {{.*}}: tensor<4x8xf32> -> tensor<16x8xf32>
// SPMD: nn.gather {{.*}} : tensor<16x8xf32>, tensor<16xi64> -> tensor<16x8xf32>
// SPMD: dist.local_slice {{.*}} dim 0 {{.*}}: tensor<16x8xf32> -> tensor<4x8xf32>
func.func @roll(%x: tensor<16x8xf32>) -> (tensor<16x8xf32>, tensor<16x8xf32>) {
  %xa = dist.annotate %x to <@mesh, [S(0)]> : tensor<16x8xf32>
  %by4 = nn.constant dense<[12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]> : tensor<16xi64>
  %a = nn.gather %xa, %by4 axis 0 : tensor<16x8xf32>, tensor<16xi64> -> tensor<16x8xf32>
  %by2 = nn.constant dense<[14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]> : tensor<16xi64>
  %b = nn.gather %xa, %by2 axis 0 : tensor<16x8xf32>, tensor<16xi64> -> tensor<16x8xf32>
  return %a, %b : tensor<16x8xf32>, tensor<16x8xf32>
}
