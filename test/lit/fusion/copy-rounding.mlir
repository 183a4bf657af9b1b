// A compute copy kept as state (dist-persist-compute-copies) is the new f32
// parameter rounded by a cast. On cpu, whose adam_update can write that
// rounding itself, the cast becomes the update's fourth result; cuda and
// none keep the cast. A cast of another value, or a second cast of the
// same update, stays.
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cpu})' | FileCheck %s --check-prefixes=CHECK,CPU
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cuda})' | FileCheck %s --check-prefixes=CHECK,KEPT
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=none})' | FileCheck %s --check-prefixes=CHECK,KEPT

// CHECK-LABEL: func.func @adam
// CPU: %[[P:.*]], %{{.*}}, %{{.*}}, %[[COPY:.*]] = nn.adam_update {{.*}} -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xbf16>)
// CPU-NEXT: %[[F16:.*]] = nn.cast %[[P]] {nn.phase = "optimizer"} : tensor<8x4xf32> -> tensor<8x4xf16>
// CPU-NEXT: return %[[P]], %{{.*}}, %{{.*}}, %[[COPY]], %[[F16]] :
// KEPT: %[[P:.*]], %{{.*}}, %{{.*}} = nn.adam_update {{.*}} -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>)
// KEPT-NEXT: nn.cast %[[P]] {nn.phase = "optimizer"} : tensor<8x4xf32> -> tensor<8x4xbf16>
func.func @adam(%p: tensor<8x4xf32>, %g: tensor<8x4xf32>, %m: tensor<8x4xf32>, %v: tensor<8x4xf32>, %s: tensor<f32>)
    -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xbf16>, tensor<8x4xf16>) {
  %p1, %m1, %v1 = nn.adam_update %p, %g, %m, %v, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, nn.phase = "optimizer", weight_decay = 0.0 : f64} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>)
  %c = nn.cast %p1 {nn.phase = "optimizer"} : tensor<8x4xf32> -> tensor<8x4xbf16>
  %h = nn.cast %p1 {nn.phase = "optimizer"} : tensor<8x4xf32> -> tensor<8x4xf16>
  return %p1, %m1, %v1, %c, %h : tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xf32>, tensor<8x4xbf16>, tensor<8x4xf16>
}

// -----

// The rounding of a moment is not a copy of the parameter.
// CHECK-LABEL: func.func @moment
// CHECK: nn.adam_update {{.*}} -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: nn.cast
func.func @moment(%p: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xbf16> {
  %p1, %m1, %v1 = nn.adam_update %p, %p, %p, %p, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %c = nn.cast %m1 : tensor<4xf32> -> tensor<4xbf16>
  return %c : tensor<4xbf16>
}
