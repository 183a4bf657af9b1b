// RUN: dist-opt %s -dist-propagate-sharding -dist-insert-reshards -dist-partition -verify-diagnostics
// RUN: dist-opt %s -dist-propagate-sharding -dist-insert-reshards -dist-partition=rank=1 | FileCheck %s --check-prefix=RANK1
// RUN: dist-opt %s -dist-propagate-sharding -dist-insert-reshards -dist-partition=rank=3 | FileCheck %s --check-prefix=RANK3
// tensor.empty inits take the local shape of their piece. 10 rows over 4
// devices split 3, 3, 2, 2: the SPMD program cannot give the empty tensor a
// shape, one rank's program can.

dist.mesh @mesh [tp = 4]
// RANK1-LABEL: func.func @uneven
// RANK1: %[[E:.*]] = tensor.empty() {{.*}}: tensor<3x8xf32>
// RANK1: linalg.generic {{.*}}ins(%{{.*}} : tensor<3x8xf32>) outs(%[[E]] : tensor<3x8xf32>)
// RANK3-LABEL: func.func @uneven
// RANK3: %[[E:.*]] = tensor.empty() {{.*}}: tensor<2x8xf32>
// RANK3: linalg.generic {{.*}}ins(%{{.*}} : tensor<2x8xf32>) outs(%[[E]] : tensor<2x8xf32>)
func.func @uneven(%x: tensor<10x8xf32>) -> tensor<10x8xf32> {
  %xa = dist.annotate %x to <@mesh, [S(0)]> : tensor<10x8xf32>
  // expected-error @below {{dimension 0 of this tensor.empty splits unevenly, so its local extent depends on the rank; partition for one rank (dist-partition{rank=N})}}
  %e = tensor.empty() : tensor<10x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%xa : tensor<10x8xf32>) outs(%e : tensor<10x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<10x8xf32>
  return %r : tensor<10x8xf32>
}
