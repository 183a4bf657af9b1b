// A gradient norm's term, reduce_sum over every axis of x * x, becomes one
// nn.fused_sum_squares on cpu (f32 and f64); cuda (no kernel for it yet)
// and none keep the two ops, and so does cpu where the product has another
// reader, a dim stays, or the type is 16-bit.
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cpu})' | FileCheck %s --check-prefixes=CHECK,CPU
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cuda})' | FileCheck %s --check-prefixes=CHECK,KEPT
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=none})' | FileCheck %s --check-prefixes=CHECK,KEPT

// CHECK-LABEL: func.func @norm_term
// CHECK-SAME: (%[[G:.*]]: tensor<300x32xf32>)
// CPU-NEXT: %[[S:.*]] = nn.fused_sum_squares %[[G]] {nn.phase = "optimizer"} : tensor<300x32xf32> -> tensor<f32>
// CPU-NEXT: return %[[S]]
// KEPT: nn.mul
// KEPT: nn.reduce_sum
func.func @norm_term(%g: tensor<300x32xf32>) -> tensor<f32> {
  %sq = nn.mul %g, %g {nn.phase = "optimizer"} : tensor<300x32xf32>, tensor<300x32xf32> -> tensor<300x32xf32>
  %s = nn.reduce_sum %sq axes [0, 1] {nn.phase = "optimizer"} : tensor<300x32xf32> -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// CHECK-LABEL: func.func @f64_term
// CPU: nn.fused_sum_squares {{.*}} : tensor<7xf64> -> tensor<f64>
// KEPT: nn.reduce_sum
func.func @f64_term(%g: tensor<7xf64>) -> tensor<f64> {
  %sq = nn.mul %g, %g : tensor<7xf64>, tensor<7xf64> -> tensor<7xf64>
  %s = nn.reduce_sum %sq axes [0] : tensor<7xf64> -> tensor<f64>
  return %s : tensor<f64>
}

// -----

// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: nn.fused_sum_squares
// CHECK: return
func.func @not_fused(%g: tensor<4x8xf32>, %h: tensor<4x8xf32>, %b: tensor<4x8xbf16>)
    -> (tensor<f32>, tensor<4x8xf32>, tensor<f32>, tensor<4xf32>, tensor<bf16>) {
  // Another reader of the product.
  %sq = nn.mul %g, %g : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s = nn.reduce_sum %sq axes [0, 1] : tensor<4x8xf32> -> tensor<f32>
  // Not a square.
  %gh = nn.mul %g, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %t = nn.reduce_sum %gh axes [0, 1] : tensor<4x8xf32> -> tensor<f32>
  // A dim stays.
  %sq2 = nn.mul %h, %h : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %r = nn.reduce_sum %sq2 axes [1] : tensor<4x8xf32> -> tensor<4xf32>
  // 16-bit.
  %bq = nn.mul %b, %b : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  %bs = nn.reduce_sum %bq axes [0, 1] : tensor<4x8xbf16> -> tensor<bf16>
  return %s, %sq, %t, %r, %bs : tensor<f32>, tensor<4x8xf32>, tensor<f32>, tensor<4xf32>, tensor<bf16>
}
