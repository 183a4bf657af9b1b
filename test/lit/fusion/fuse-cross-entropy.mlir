// Cross-entropy as the training step builds it (lib/Training/TrainingStep.cpp)
// becomes two fused ops on the cpu and cuda targets; on cuda they also read
// 16-bit logits and write a 16-bit gradient as stored.
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cpu})' | FileCheck %s --check-prefixes=CHECK,FUSED,CPU
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cuda})' | FileCheck %s --check-prefixes=CHECK,FUSED,CUDA
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=none})' | FileCheck %s --check-prefixes=CHECK,NONE

// The labels' reshape comes after the first sum in the builder's order: it
// moves before the fused sums, which stand where that sum stood.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[L:.*]]: tensor<4x6xf32>, %[[LAB:.*]]: tensor<4xi64>, %[[F:.*]]: tensor<4x1xf32>, %[[W:.*]]: tensor<4x1xf32>)
// FUSED-NEXT: %[[M:.*]] = nn.reduce_max %[[L]] axes [1] keepdims
// FUSED-NEXT: %[[R:.*]] = nn.reshape %[[LAB]]
// FUSED-NEXT: %[[SE:.*]], %[[LL:.*]] = nn.fused_cross_entropy_sums %[[L]], %[[M]], %[[R]] first_class 0 : tensor<4x6xf32>, tensor<4x1xf32>, tensor<4x1xi64>
// FUSED-NEXT: %[[LSE:.*]] = nn.log %[[SE]]
// FUSED-NEXT: %[[NLL:.*]] = nn.sub %[[LSE]], %[[LL]]
// FUSED-NEXT: %[[G:.*]] = nn.fused_cross_entropy_grad %[[L]], %[[M]], %[[F]], %[[W]], %[[R]] first_class 0 : tensor<4x6xf32>, tensor<4x1xf32>, tensor<4x1xi64> -> tensor<4x6xf32>
// FUSED-NEXT: return %[[NLL]], %[[G]]
// FUSED-NOT: nn.constant
// NONE-NOT: nn.fused_cross_entropy
func.func @cross_entropy(%l: tensor<4x6xf32>, %lab: tensor<4xi64>, %f: tensor<4x1xf32>, %w: tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<4x6xf32>) {
  %m = nn.reduce_max %l axes [1] keepdims : tensor<4x6xf32> -> tensor<4x1xf32>
  %z = nn.sub %l, %m : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  %e = nn.exp %z : tensor<4x6xf32>
  %s = nn.reduce_sum %e axes [1] keepdims : tensor<4x6xf32> -> tensor<4x1xf32>
  %lse = nn.log %s : tensor<4x1xf32>
  %r = nn.reshape %lab : tensor<4xi64> -> tensor<4x1xi64>
  %ids = nn.constant dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi64>
  %oh = nn.equal %r, %ids : tensor<4x1xi64>, tensor<6xi64> -> tensor<4x6xi1>
  %zero = nn.constant dense<0.0> : tensor<f32>
  %w0 = nn.where %oh, %z, %zero : tensor<4x6xi1>, tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
  %zl = nn.reduce_sum %w0 axes [1] keepdims : tensor<4x6xf32> -> tensor<4x1xf32>
  %nll = nn.sub %lse, %zl : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
  %sc = nn.mul %e, %f : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  %d = nn.sub %sc, %w : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  %g = nn.where %oh, %d, %sc : tensor<4x6xi1>, tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  return %nll, %g : tensor<4x1xf32>, tensor<4x6xf32>
}

// -----

// A rank's share of a vocabulary-parallel head (classes 3 to 5), the row
// max all-reduced before it is read: the ids say the first class.
// CHECK-LABEL: func.func @vocabulary_share
// FUSED: nn.fused_cross_entropy_sums %{{.*}}, %{{.*}}, %{{.*}} first_class 3 : tensor<2x3xf32>
// FUSED: nn.fused_cross_entropy_grad %{{.*}} first_class 3 : tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xi32> -> tensor<2x3xf32>
func.func @vocabulary_share(%l: tensor<2x3xf32>, %m: tensor<2x1xf32>, %r: tensor<2x1xi32>, %f: tensor<2x1xf32>, %w: tensor<2x1xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x3xf32>) {
  %z = nn.sub %l, %m : tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
  %e = nn.exp %z : tensor<2x3xf32>
  %s = nn.reduce_sum %e axes [1] keepdims : tensor<2x3xf32> -> tensor<2x1xf32>
  %ids = nn.constant dense<[3, 4, 5]> : tensor<3xi32>
  %oh = nn.equal %r, %ids : tensor<2x1xi32>, tensor<3xi32> -> tensor<2x3xi1>
  %zero = nn.constant dense<0.0> : tensor<f32>
  %w0 = nn.where %oh, %z, %zero : tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %zl = nn.reduce_sum %w0 axes [1] keepdims : tensor<2x3xf32> -> tensor<2x1xf32>
  %sc = nn.mul %f, %e : tensor<2x1xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %d = nn.sub %sc, %w : tensor<2x3xf32>, tensor<2x1xf32> -> tensor<2x3xf32>
  %g = nn.where %oh, %d, %sc : tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %s, %zl, %g : tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x3xf32>
}

// -----

// bf16 logits widened for the loss, the gradient narrowed for the head's
// backward. cuda reads and writes them as stored (the row max taken of the
// stored logits and widened: the same value); cpu keeps the casts.
// CHECK-LABEL: func.func @bf16_logits
// CHECK-SAME: (%[[LB:.*]]: tensor<4x6xbf16>
// CUDA-NEXT: %[[MB:.*]] = nn.reduce_max %[[LB]] axes [1] keepdims : tensor<4x6xbf16> -> tensor<4x1xbf16>
// CUDA-NEXT: %[[M:.*]] = nn.cast %[[MB]] : tensor<4x1xbf16> -> tensor<4x1xf32>
// CUDA-NEXT: nn.fused_cross_entropy_sums %[[LB]], %[[M]], %{{.*}} first_class 0 : tensor<4x6xbf16>, tensor<4x1xf32>, tensor<4x1xi64>
// CUDA: %[[G:.*]] = nn.fused_cross_entropy_grad %[[LB]], %[[M]], {{.*}} : tensor<4x6xbf16>, tensor<4x1xf32>, tensor<4x1xi64> -> tensor<4x6xbf16>
// CUDA-NEXT: return %{{.*}}, %[[G]]
// CUDA-NOT: nn.cast
// CPU-NEXT: %[[L:.*]] = nn.cast %[[LB]] : tensor<4x6xbf16> -> tensor<4x6xf32>
// CPU-NEXT: %[[M:.*]] = nn.reduce_max %[[L]]
// CPU-NEXT: nn.fused_cross_entropy_sums %[[L]], %[[M]], %{{.*}} first_class 0 : tensor<4x6xf32>
// CPU: %[[G:.*]] = nn.fused_cross_entropy_grad %[[L]], {{.*}} -> tensor<4x6xf32>
// CPU-NEXT: %[[GB:.*]] = nn.cast %[[G]] : tensor<4x6xf32> -> tensor<4x6xbf16>
// CPU-NEXT: return %{{.*}}, %[[GB]]
func.func @bf16_logits(%lb: tensor<4x6xbf16>, %r: tensor<4x1xi64>, %f: tensor<4x1xf32>, %w: tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<4x6xbf16>) {
  %l = nn.cast %lb : tensor<4x6xbf16> -> tensor<4x6xf32>
  %m = nn.reduce_max %l axes [1] keepdims : tensor<4x6xf32> -> tensor<4x1xf32>
  %z = nn.sub %l, %m : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  %e = nn.exp %z : tensor<4x6xf32>
  %s = nn.reduce_sum %e axes [1] keepdims : tensor<4x6xf32> -> tensor<4x1xf32>
  %ids = nn.constant dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi64>
  %oh = nn.equal %r, %ids : tensor<4x1xi64>, tensor<6xi64> -> tensor<4x6xi1>
  %zero = nn.constant dense<0.0> : tensor<f32>
  %w0 = nn.where %oh, %z, %zero : tensor<4x6xi1>, tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
  %zl = nn.reduce_sum %w0 axes [1] keepdims : tensor<4x6xf32> -> tensor<4x1xf32>
  %nll = nn.sub %s, %zl : tensor<4x1xf32>, tensor<4x1xf32> -> tensor<4x1xf32>
  %sc = nn.mul %e, %f : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  %d = nn.sub %sc, %w : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  %g = nn.where %oh, %d, %sc : tensor<4x6xi1>, tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  %gb = nn.cast %g : tensor<4x6xf32> -> tensor<4x6xbf16>
  return %nll, %gb : tensor<4x1xf32>, tensor<4x6xbf16>
}

// -----

// Not the pattern: the exponentials have another reader, or the ids are
// not consecutive. Nothing is fused.
// CHECK-LABEL: func.func @exp_read_elsewhere
// CHECK-NOT: nn.fused_cross_entropy
func.func @exp_read_elsewhere(%l: tensor<4x6xf32>, %m: tensor<4x1xf32>, %r: tensor<4x1xi64>, %f: tensor<4x1xf32>, %w: tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x6xf32>, tensor<4x6xf32>) {
  %z = nn.sub %l, %m : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  %e = nn.exp %z : tensor<4x6xf32>
  %s = nn.reduce_sum %e axes [1] keepdims : tensor<4x6xf32> -> tensor<4x1xf32>
  %ids = nn.constant dense<[0, 1, 2, 3, 4, 5]> : tensor<6xi64>
  %oh = nn.equal %r, %ids : tensor<4x1xi64>, tensor<6xi64> -> tensor<4x6xi1>
  %zero = nn.constant dense<0.0> : tensor<f32>
  %w0 = nn.where %oh, %z, %zero : tensor<4x6xi1>, tensor<4x6xf32>, tensor<f32> -> tensor<4x6xf32>
  %zl = nn.reduce_sum %w0 axes [1] keepdims : tensor<4x6xf32> -> tensor<4x1xf32>
  %sc = nn.mul %e, %f : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  %d = nn.sub %sc, %w : tensor<4x6xf32>, tensor<4x1xf32> -> tensor<4x6xf32>
  %g = nn.where %oh, %d, %sc : tensor<4x6xi1>, tensor<4x6xf32>, tensor<4x6xf32> -> tensor<4x6xf32>
  return %s, %zl, %g, %e : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x6xf32>, tensor<4x6xf32>
}

// CHECK-LABEL: func.func @ids_not_consecutive
// CHECK-NOT: nn.fused_cross_entropy
func.func @ids_not_consecutive(%l: tensor<4x3xf32>, %m: tensor<4x1xf32>, %r: tensor<4x1xi64>, %f: tensor<4x1xf32>, %w: tensor<4x1xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x3xf32>) {
  %z = nn.sub %l, %m : tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x3xf32>
  %e = nn.exp %z : tensor<4x3xf32>
  %s = nn.reduce_sum %e axes [1] keepdims : tensor<4x3xf32> -> tensor<4x1xf32>
  %ids = nn.constant dense<[0, 2, 4]> : tensor<3xi64>
  %oh = nn.equal %r, %ids : tensor<4x1xi64>, tensor<3xi64> -> tensor<4x3xi1>
  %zero = nn.constant dense<0.0> : tensor<f32>
  %w0 = nn.where %oh, %z, %zero : tensor<4x3xi1>, tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
  %zl = nn.reduce_sum %w0 axes [1] keepdims : tensor<4x3xf32> -> tensor<4x1xf32>
  %sc = nn.mul %e, %f : tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x3xf32>
  %d = nn.sub %sc, %w : tensor<4x3xf32>, tensor<4x1xf32> -> tensor<4x3xf32>
  %g = nn.where %oh, %d, %sc : tensor<4x3xi1>, tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  return %s, %zl, %g : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x3xf32>
}
