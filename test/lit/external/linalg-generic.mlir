// RUN: dist-opt %s -dist-propagate-sharding -dist-insert-reshards -dist-partition -dist-reshard-to-collectives -split-input-file | FileCheck %s
// linalg.generic element-wise ops and reductions partitioned through the
// external linalg rules.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// Columns split: exp runs on local columns; the row sum reduces over the
// split dimension into zeros, leaving partial sums (one all-reduce sum);
// the row max into an arbitrary init leaves partial maxima (all-reduce max).
dist.mesh @mesh [tp = 4]
// CHECK-LABEL: func.func @row_sum_and_max
// CHECK-SAME: %[[X:arg[0-9]+]]: tensor<8x4xf32> {dist.global_type = tensor<8x16xf32>, dist.sharding = #dist.sharding<@mesh, [S(1)]>}
// CHECK: %[[EXP:.*]] = linalg.generic {{.*}}ins(%[[X]] : tensor<8x4xf32>) outs(%{{.*}} : tensor<8x4xf32>)
// CHECK: math.exp
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}ins(%[[EXP]] : tensor<8x4xf32>) outs(%{{.*}} : tensor<8xf32>) attrs = {{.*}}dist.sharding = [#dist.sharding<@mesh, [P(sum)]>]
// CHECK: %[[MAX:.*]] = linalg.reduce ins(%[[X]] : tensor<8x4xf32>) outs(%{{.*}} : tensor<8xf32>) dimensions = [1] {{.*}}dist.sharding = [#dist.sharding<@mesh, [P(max)]>]
// CHECK-DAG: dist.all_reduce %[[SUM]] on @mesh axes ["tp"] sum
// CHECK-DAG: dist.all_reduce %[[MAX]] on @mesh axes ["tp"] max
// CHECK-NOT: dist.all_gather
func.func @row_sum_and_max(%x: tensor<8x16xf32>, %acc: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %xa = dist.annotate %x to <@mesh, [S(1)]> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<8x16xf32>
  %exp = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%xa : tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %v = math.exp %in : f32
    linalg.yield %v : f32
  } -> tensor<8x16xf32>
  %zero = arith.constant dense<0.0> : tensor<8xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<8x16xf32>) outs(%zero : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %max = linalg.reduce ins(%xa : tensor<8x16xf32>) outs(%acc : tensor<8xf32>) dimensions = [1]
    (%in: f32, %out: f32) {
      %m = arith.maximumf %in, %out : f32
      linalg.yield %m : f32
    }
  return %sum, %max : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A sum into a non-zero init cannot split its reduction: the input is
// gathered first and every device computes the whole sum.
dist.mesh @mesh [tp = 4]
// CHECK-LABEL: func.func @accumulating_sum
// CHECK: %[[G:.*]] = dist.all_gather %{{.*}} on @mesh axes ["tp"] dim 1 {{.*}}: tensor<8x4xf32> -> tensor<8x16xf32>
// CHECK: linalg.generic {{.*}}ins(%[[G]] : tensor<8x16xf32>) outs(%{{.*}} : tensor<8xf32>)
// CHECK-NOT: dist.all_reduce
func.func @accumulating_sum(%x: tensor<8x16xf32>, %acc: tensor<8xf32>) -> tensor<8xf32> {
  %xa = dist.annotate %x to <@mesh, [S(1)]> : tensor<8x16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%xa : tensor<8x16xf32>) outs(%acc : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %out : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %sum : tensor<8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Two row-parallel products added element-wise: the add is linear in both
// operands, so the partial sums add up locally and one all-reduce follows
// instead of two.
dist.mesh @mesh [tp = 2]
// CHECK-LABEL: func.func @sum_of_partials
// CHECK: %[[A:.*]] = linalg.matmul
// CHECK: %[[B:.*]] = linalg.matmul
// CHECK-NOT: dist.all_reduce
// CHECK: %[[S:.*]] = linalg.generic {{.*}}ins(%[[A]], %[[B]] : tensor<4x8xf32>, tensor<4x8xf32>) outs(%{{.*}}) attrs = {{.*}}dist.sharding = [#dist.sharding<@mesh, [P(sum)]>]
// CHECK: dist.all_reduce %[[S]] on @mesh axes ["tp"] sum
// CHECK-NOT: dist.all_reduce
func.func @sum_of_partials(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>, %w: tensor<16x8xf32>, %v: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %xa = dist.annotate %x to <@mesh, [S(1)]> : tensor<4x16xf32>
  %ya = dist.annotate %y to <@mesh, [S(1)]> : tensor<4x16xf32>
  %wa = dist.annotate %w to <@mesh, [S(0)]> : tensor<16x8xf32>
  %va = dist.annotate %v to <@mesh, [S(0)]> : tensor<16x8xf32>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %a = linalg.matmul ins(%xa, %wa : tensor<4x16xf32>, tensor<16x8xf32>) outs(%zero : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = linalg.matmul ins(%ya, %va : tensor<4x16xf32>, tensor<16x8xf32>) outs(%zero : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %t = arith.addf %p, %q : f32
    linalg.yield %t : f32
  } -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A stencil along columns (a window `d1 + d2`) cannot split the column loop:
// the split input is gathered before it.
dist.mesh @mesh [tp = 2]
// CHECK-LABEL: func.func @stencil
// CHECK: %[[G:.*]] = dist.all_gather %{{.*}} on @mesh axes ["tp"] dim 1 {{.*}}: tensor<4x5xf32> -> tensor<4x10xf32>
// CHECK: linalg.generic {{.*}}ins(%[[G]], %{{.*}} : tensor<4x10xf32>, tensor<3xf32>)
func.func @stencil(%x: tensor<4x10xf32>, %k: tensor<3xf32>) -> tensor<4x8xf32> {
  %xa = dist.annotate %x to <@mesh, [S(1)]> : tensor<4x10xf32>
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1 + d2)>, affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%xa, %k : tensor<4x10xf32>, tensor<3xf32>) outs(%zero : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %out : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
