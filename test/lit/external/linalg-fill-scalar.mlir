// RUN: dist-opt %s -dist-propagate-sharding -dist-insert-reshards -dist-partition -dist-reshard-to-collectives | FileCheck %s
// The usual way frameworks write a zero init: a scalar constant filled into
// tensor.empty. dist-partition tags only tensor results with `dist.sharding`
// (the dist verifier rejects the tag on a scalar).

dist.mesh @mesh [tp = 4]
// CHECK-LABEL: func.func @mlp
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[E1:.*]] = tensor.empty() {{.*}}: tensor<8x64xf32>
// CHECK: %[[F1:.*]] = linalg.fill {{.*}}ins(%[[ZERO]] : f32) outs(%[[E1]] : tensor<8x64xf32>)
// CHECK: %[[H:.*]] = linalg.matmul {{.*}}outs(%[[F1]] : tensor<8x64xf32>) -> tensor<8x64xf32>
// CHECK: %[[E2:.*]] = tensor.empty() {{.*}}: tensor<8x64xf32>
// CHECK: %[[F2:.*]] = linalg.fill {{.*}}ins(%[[ZERO]] : f32) outs(%[[E2]] : tensor<8x64xf32>)
// CHECK: %[[Y:.*]] = linalg.matmul {{.*}}ins(%[[H]], %{{.*}} : tensor<8x64xf32>, tensor<64x64xf32>) outs(%[[F2]] : tensor<8x64xf32>)
// CHECK: dist.all_reduce %[[Y]] on @mesh axes ["tp"] sum
func.func @mlp(%x: tensor<8x64xf32>, %w1: tensor<64x256xf32>, %w2: tensor<256x64xf32>) -> tensor<8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %w1a = dist.annotate %w1 to <@mesh, [S(1)]> : tensor<64x256xf32>
  %w2a = dist.annotate %w2 to <@mesh, [S(0)]> : tensor<256x64xf32>
  %e1 = tensor.empty() : tensor<8x256xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<8x256xf32>) -> tensor<8x256xf32>
  %h = linalg.matmul ins(%x, %w1a : tensor<8x64xf32>, tensor<64x256xf32>) outs(%f1 : tensor<8x256xf32>) -> tensor<8x256xf32>
  %e2 = tensor.empty() : tensor<8x64xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = linalg.matmul ins(%h, %w2a : tensor<8x256xf32>, tensor<256x64xf32>) outs(%f2 : tensor<8x64xf32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}
