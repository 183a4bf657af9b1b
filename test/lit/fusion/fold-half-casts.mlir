// A bf16 policy computes softmax in f32: casts widen its input and the
// gradient of its output and narrow its gradient. On cuda, whose softmax
// and softmax_grad kernels read and write 16-bit floats as stored, those
// casts fold in; cpu keeps them (its kernels would widen the same values).
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cuda})' | FileCheck %s --check-prefixes=CHECK,CUDA
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cpu})' | FileCheck %s --check-prefixes=CHECK,CPU

// CHECK-LABEL: func.func @attention_softmax
// CHECK-SAME: (%[[S:.*]]: tensor<2x4x8x8xbf16>, %[[DYB:.*]]: tensor<2x4x8x8xbf16>)
// CUDA-NEXT: %[[Y:.*]] = nn.fused_softmax %[[S]] axis 3 : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
// CUDA-NEXT: %[[YB:.*]] = nn.cast %[[Y]] : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
// CUDA-NEXT: %[[DX:.*]] = nn.fused_softmax_grad %[[Y]], %[[DYB]] axis 3 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xbf16>
// CUDA-NEXT: return %[[YB]], %[[DX]]
// CPU-NEXT: nn.cast %[[S]]
// CPU-NEXT: nn.softmax
// CPU-NEXT: nn.cast
// CPU-NEXT: nn.cast %[[DYB]]
// CPU-NEXT: nn.fused_softmax_grad %{{.*}}, %{{.*}} axis 3 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
// CPU-NEXT: nn.cast
func.func @attention_softmax(%s: tensor<2x4x8x8xbf16>, %dyb: tensor<2x4x8x8xbf16>) -> (tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>) {
  %x = nn.cast %s : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %y = nn.softmax %x axis 3 : tensor<2x4x8x8xf32>
  %yb = nn.cast %y : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
  %dy = nn.cast %dyb : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %p = nn.mul %dy, %y : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %sum = nn.reduce_sum %p axes [3] keepdims : tensor<2x4x8x8xf32> -> tensor<2x4x8x1xf32>
  %d = nn.sub %dy, %sum : tensor<2x4x8x8xf32>, tensor<2x4x8x1xf32> -> tensor<2x4x8x8xf32>
  %dx = nn.mul %y, %d : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %dxb = nn.cast %dx : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
  return %yb, %dxb : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>
}

// -----

// A widened input another op also reads stays; so does a gradient read
// twice. Only what nothing else reads folds.
// CHECK-LABEL: func.func @casts_read_elsewhere
// CUDA: %[[X:.*]] = nn.cast
// CUDA-NEXT: nn.softmax %[[X]] axis 1 : tensor<4x8xf32>
// CUDA: %[[DX:.*]] = nn.fused_softmax_grad %{{.*}}, %{{.*}} axis 1 : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4x8xf32>
// CUDA-NEXT: nn.cast %[[DX]]
// CUDA-NEXT: return
func.func @casts_read_elsewhere(%s: tensor<4x8xbf16>, %dyh: tensor<4x8xf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>) {
  %x = nn.cast %s : tensor<4x8xbf16> -> tensor<4x8xf32>
  %y = nn.softmax %x axis 1 : tensor<4x8xf32>
  %dy = nn.cast %dyh : tensor<4x8xf16> -> tensor<4x8xf32>
  %p = nn.mul %dy, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %sum = nn.reduce_sum %p axes [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = nn.sub %dy, %sum : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %dx = nn.mul %y, %d : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %dxb = nn.cast %dx : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %x, %y, %dxb, %dx : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>
}
