// A bf16 policy casts each gradient to f32 for the optimizer and the
// gradient norm. On cpu, whose adam_update, sgd_update and sum_squares read
// a 16-bit gradient as stored, the cast folds into them (the identity that
// names the gradient then carries the bf16 value); cuda and none keep it,
// and so does cpu where anything else reads the f32 gradient.
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cpu})' | FileCheck %s --check-prefixes=CHECK,CPU
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cuda})' | FileCheck %s --check-prefixes=CHECK,KEPT
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=none})' | FileCheck %s --check-prefixes=CHECK,KEPT

// CHECK-LABEL: func.func @adam
// CHECK-SAME: (%[[P:[^:]*]]: tensor<8x4xf32>, %[[G:[^:]*]]: tensor<8x4xbf16>
// CPU-NOT: nn.cast
// CPU: %[[N:.*]] = nn.identity %[[G]] {nn.gradient_of = "w"} : tensor<8x4xbf16>
// CPU: nn.fused_sum_squares %[[N]] : tensor<8x4xbf16> -> tensor<f32>
// CPU: nn.adam_update %[[P]], %[[N]], {{.*}} : (tensor<8x4xf32>, tensor<8x4xbf16>,
// KEPT: nn.cast %[[G]]
// KEPT: nn.identity {{.*}} : tensor<8x4xf32>
func.func @adam(%p: tensor<8x4xf32>, %g: tensor<8x4xbf16>, %m: tensor<8x4xf32>, %v: tensor<8x4xf32>, %s: tensor<f32>)
    -> (tensor<f32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>) {
  %w = nn.cast %g : tensor<8x4xbf16> -> tensor<8x4xf32>
  %n = nn.identity %w {nn.gradient_of = "w"} : tensor<8x4xf32>
  %sq = nn.mul %n, %n : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  %norm = nn.reduce_sum %sq axes [0, 1] : tensor<8x4xf32> -> tensor<f32>
  %p1, %m1, %v1 = nn.adam_update %p, %n, %m, %v, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>)
  return %norm, %p1, %m1, %v1 : tensor<f32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// An f16 gradient into SGD, without a norm.
// CHECK-LABEL: func.func @sgd
// CPU-NOT: nn.cast
// CPU: nn.sgd_update %{{.*}}, %{{.*}}, {{.*}} : (tensor<5xf32>, tensor<5xf16>,
// KEPT: nn.cast
func.func @sgd(%p: tensor<5xf32>, %g: tensor<5xf16>, %s: tensor<f32>) -> (tensor<5xf32>, tensor<5xf32>) {
  %w = nn.cast %g : tensor<5xf16> -> tensor<5xf32>
  %p1, %b1 = nn.sgd_update %p, %w, %p, %s, %s {momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<f32>, tensor<f32>) -> (tensor<5xf32>, tensor<5xf32>)
  return %p1, %b1 : tensor<5xf32>, tensor<5xf32>
}

// -----

// The f32 gradient has another reader (a gradient all-reduced in f32, or
// returned), or the cast feeds a state rather than the gradient: kept.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-2: nn.cast
// CHECK: return
func.func @kept(%p: tensor<5xf32>, %g: tensor<5xbf16>, %h: tensor<5xbf16>, %s: tensor<f32>)
    -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) {
  %w = nn.cast %g : tensor<5xbf16> -> tensor<5xf32>
  %b = nn.cast %h : tensor<5xbf16> -> tensor<5xf32>
  %p1, %b1 = nn.sgd_update %p, %w, %b, %s, %s {momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<f32>, tensor<f32>) -> (tensor<5xf32>, tensor<5xf32>)
  return %p1, %b1, %w : tensor<5xf32>, tensor<5xf32>, tensor<5xf32>
}
