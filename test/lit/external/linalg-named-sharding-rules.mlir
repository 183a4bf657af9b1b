// RUN: dist-opt %s -dist-test-sharding-rules 2>&1 | FileCheck %s --implicit-check-not=error
// Rules of named linalg ops. Their payloads are implicit (and without a
// location), so this test reads the remarks with FileCheck; the payload's
// scalar ops print empty rules, which the checks skip.

// A contraction into zeros: the reduction may be split (partial sums) and a
// partial sum may flow through either input.
// CHECK: rules.mlir:[[@LINE+3]]:{{.*}}sharding rule: ([i, k], [k, j], [i, j]) -> ([i, j]) {i=4, j=8, k=16} reduction={k} partial=one(0, 1)
func.func @matmul(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant dense<0.0> : tensor<4x8xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%zero : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Accumulating into a non-zero init: every device would add the init once,
// so the reduction stays whole and no partial sum passes.
// CHECK: rules.mlir:[[@LINE+2]]:{{.*}}sharding rule: ([i, k], [k, j], [i, j]) -> ([i, j]) {i=4, j=8, k=16} whole={k}{{$}}
func.func @matmul_accumulate(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>, %c: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%c : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// The init may be a linalg.fill of zero (of any tensor.empty).
// CHECK: rules.mlir:[[@LINE+5]]:{{.*}}sharding rule: ([i, j, l], [i, l, k], [i, j, k]) -> ([i, j, k]) {i=2, j=4, k=8, l=16} reduction={l} partial=one(0, 1)
func.func @batch_matmul(%a: tensor<2x4x16xf32>, %b: tensor<2x16x8xf32>) -> tensor<2x4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %0 = linalg.batch_matmul ins(%a, %b : tensor<2x4x16xf32>, tensor<2x16x8xf32>) outs(%z : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// Named element-wise ops.
// CHECK: rules.mlir:[[@LINE+4]]:{{.*}}sharding rule: ([i, j], [i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=all(0, 1)
// CHECK: rules.mlir:[[@LINE+4]]:{{.*}}sharding rule: ([i, j], [i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=one(0, 1)
// CHECK: rules.mlir:[[@LINE+4]]:{{.*}}sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8}{{$}}
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = linalg.add ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = linalg.mul ins(%0, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = linalg.exp ins(%1 : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// A convolution: batch (i) and output channels (l) split freely, input
// channels (o) are a sum; the window loops (j, k, m, n) are whole, and the
// input's spatial dimensions get whole factors of their own (p, q).
// CHECK: rules.mlir:[[@LINE+3]]:{{.*}}sharding rule: ([i, p, q, o], [m, n, o, l], [i, j, k, l]) -> ([i, j, k, l]) {i=2, j=6, k=6, l=16, m=3, n=3, o=4, p=8, q=8} reduction={o} whole={j, k, m, n, p, q} partial=one(0, 1)
func.func @conv(%x: tensor<2x8x8x4xf32>, %w: tensor<3x3x4x16xf32>) -> tensor<2x6x6x16xf32> {
  %zero = arith.constant dense<0.0> : tensor<2x6x6x16xf32>
  %0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<2x8x8x4xf32>, tensor<3x3x4x16xf32>) outs(%zero : tensor<2x6x6x16xf32>) -> tensor<2x6x6x16xf32>
  return %0 : tensor<2x6x6x16xf32>
}

// Buffers are not distributed: the rule maps no dimension.
// CHECK: rules.mlir:[[@LINE+2]]:{{.*}}sharding rule: ([], [], []) -> () {}{{$}}
func.func @buffers(%a: memref<4x16xf32>, %b: memref<16x8xf32>, %c: memref<4x8xf32>) {
  linalg.matmul ins(%a, %b : memref<4x16xf32>, memref<16x8xf32>) outs(%c : memref<4x8xf32>)
  return
}
