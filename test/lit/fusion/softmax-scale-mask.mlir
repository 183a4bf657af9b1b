// Attention's scale and causal mask fold into the softmax that reads them
// and into its gradient: softmax(where(mask, fill, x * scale)) and
// where(mask, 0, g) * scale each become one op (nn.fused_softmax,
// nn.fused_softmax_grad with `mask` and `scale`), on both targets for f32;
// in bf16 only on cuda, whose kernels round the scaled scores to bf16 as
// stored (the host's run 16-bit floats through f32 copies).
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cpu})' | FileCheck %s --check-prefixes=CHECK,FUSED,CPU
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cuda})' | FileCheck %s --check-prefixes=CHECK,FUSED,CUDA
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=none})' | FileCheck %s --check-prefixes=CHECK,NONE

// GPT-2 as torch exports it: scores times a scalar, -inf where the causal
// mask [1, 1, T, T] is true; the gradient rule's where and product. The
// scalars nothing else reads go.
// CHECK-LABEL: func.func @gpt_attention
// CHECK-SAME: (%[[S:.*]]: tensor<2x4x8x8xf32>, %[[M:.*]]: tensor<1x1x8x8xi1>, %[[DY:.*]]: tensor<2x4x8x8xf32>)
// FUSED-NEXT: %[[Y:.*]] = nn.fused_softmax %[[S]] mask %[[M]] axis 3 {fill = 0xFFF0000000000000 : f64, scale = 1.250000e-01 : f64} : tensor<2x4x8x8xf32>, tensor<1x1x8x8xi1> -> tensor<2x4x8x8xf32>
// FUSED-NEXT: %[[DX:.*]] = nn.fused_softmax_grad %[[Y]], %[[DY]] mask %[[M]] axis 3 {scale = 1.250000e-01 : f64} : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<1x1x8x8xi1> -> tensor<2x4x8x8xf32>
// FUSED-NEXT: return %[[Y]], %[[DX]]
// NONE-COUNT-2: nn.constant
// NONE-NEXT: nn.mul
// NONE-NEXT: nn.where
// NONE-NEXT: nn.softmax
func.func @gpt_attention(%s: tensor<2x4x8x8xf32>, %m: tensor<1x1x8x8xi1>, %dy: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  %c = nn.constant dense<1.250000e-01> : tensor<f32>
  %inf = nn.constant dense<0xFF800000> : tensor<f32>
  %x = nn.mul %s, %c : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
  %w = nn.where %m, %inf, %x : tensor<1x1x8x8xi1>, tensor<f32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %y = nn.softmax %w axis 3 : tensor<2x4x8x8xf32>
  %p = nn.mul %dy, %y : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %sum = nn.reduce_sum %p axes [3] keepdims : tensor<2x4x8x8xf32> -> tensor<2x4x8x1xf32>
  %d = nn.sub %dy, %sum : tensor<2x4x8x8xf32>, tensor<2x4x8x1xf32> -> tensor<2x4x8x8xf32>
  %g = nn.mul %y, %d : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %zero = nn.constant dense<0.000000e+00> : tensor<f32>
  %gw = nn.where %m, %zero, %g : tensor<1x1x8x8xi1>, tensor<f32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %dx = nn.mul %gw, %c : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
  return %y, %dx : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>
}

// -----

// A Llama export: scores divided by a scalar, a mask [T, T] that keeps
// where it is true (the where's branches the other way round), a finite
// fill. The quotient stays a quotient (`divide`): x / c and x * (1 / c)
// round differently.
// CHECK-LABEL: func.func @llama_attention
// CHECK-SAME: (%[[S:.*]]: tensor<2x4x8x8xf32>, %[[M:.*]]: tensor<8x8xi1>, %[[DY:.*]]: tensor<2x4x8x8xf32>)
// FUSED-NEXT: %[[Y:.*]] = nn.fused_softmax %[[S]] mask %[[M]] axis 3 {divide, fill = -1.000000e+04 : f64, mask_keeps, scale = 3.000000e+00 : f64}
// FUSED-NEXT: nn.fused_softmax_grad %[[Y]], %[[DY]] mask %[[M]] axis 3 {divide, mask_keeps, scale = 3.000000e+00 : f64}
// NONE: nn.div
func.func @llama_attention(%s: tensor<2x4x8x8xf32>, %m: tensor<8x8xi1>, %dy: tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) {
  %c = nn.constant dense<3.000000e+00> : tensor<f32>
  %fill = nn.constant dense<-1.000000e+04> : tensor<f32>
  %x = nn.div %s, %c : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
  %w = nn.where %m, %x, %fill : tensor<8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
  %y = nn.softmax %w axis 3 : tensor<2x4x8x8xf32>
  %p = nn.mul %dy, %y : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %sum = nn.reduce_sum %p axes [3] keepdims : tensor<2x4x8x8xf32> -> tensor<2x4x8x1xf32>
  %d = nn.sub %dy, %sum : tensor<2x4x8x8xf32>, tensor<2x4x8x1xf32> -> tensor<2x4x8x8xf32>
  %g = nn.mul %y, %d : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %zero = nn.constant dense<0.000000e+00> : tensor<f32>
  %gw = nn.where %m, %g, %zero : tensor<8x8xi1>, tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
  %dx = nn.div %gw, %c : tensor<2x4x8x8xf32>, tensor<f32> -> tensor<2x4x8x8xf32>
  return %y, %dx : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>
}

// -----

// A bf16 policy: the scores, their scale and mask in bf16, the softmax in
// f32. On cuda the fused softmax reads the bf16 scores as stored and
// applies the bf16 scale and mask; its gradient writes bf16 through the
// where and the product. The host keeps the bf16 ops and fuses nothing
// across the casts.
// CHECK-LABEL: func.func @bf16_attention
// CHECK-SAME: (%[[S:.*]]: tensor<2x4x8x8xbf16>, %[[M:.*]]: tensor<1x1x8x8xi1>, %[[DYB:.*]]: tensor<2x4x8x8xbf16>)
// CUDA-NEXT: %[[Y:.*]] = nn.fused_softmax %[[S]] mask %[[M]] axis 3 {fill = 0xFFF0000000000000 : f64, scale = 1.250000e-01 : f64} : tensor<2x4x8x8xbf16>, tensor<1x1x8x8xi1> -> tensor<2x4x8x8xf32>
// CUDA-NEXT: %[[YB:.*]] = nn.cast %[[Y]]
// CUDA-NEXT: %[[DX:.*]] = nn.fused_softmax_grad %[[Y]], %[[DYB]] mask %[[M]] axis 3 {scale = 1.250000e-01 : f64} : tensor<2x4x8x8xf32>, tensor<2x4x8x8xbf16>, tensor<1x1x8x8xi1> -> tensor<2x4x8x8xbf16>
// CUDA-NEXT: return %[[YB]], %[[DX]]
// CPU: nn.mul %[[S]]
// CPU-NEXT: nn.where
// CPU-NEXT: nn.cast
// CPU-NEXT: nn.softmax
// CPU: nn.fused_softmax_grad %{{.*}}, %{{.*}} axis 3 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
// CPU-NEXT: nn.cast
// CPU-NEXT: nn.constant
// CPU-NEXT: nn.where
// CPU-NEXT: nn.mul
func.func @bf16_attention(%s: tensor<2x4x8x8xbf16>, %m: tensor<1x1x8x8xi1>, %dyb: tensor<2x4x8x8xbf16>) -> (tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>) {
  %c = nn.constant dense<1.250000e-01> : tensor<bf16>
  %inf = nn.constant dense<0xFF80> : tensor<bf16>
  %x = nn.mul %s, %c : tensor<2x4x8x8xbf16>, tensor<bf16> -> tensor<2x4x8x8xbf16>
  %w = nn.where %m, %inf, %x : tensor<1x1x8x8xi1>, tensor<bf16>, tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xbf16>
  %xf = nn.cast %w : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %y = nn.softmax %xf axis 3 : tensor<2x4x8x8xf32>
  %yb = nn.cast %y : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
  %dy = nn.cast %dyb : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %p = nn.mul %dy, %y : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %sum = nn.reduce_sum %p axes [3] keepdims : tensor<2x4x8x8xf32> -> tensor<2x4x8x1xf32>
  %d = nn.sub %dy, %sum : tensor<2x4x8x8xf32>, tensor<2x4x8x1xf32> -> tensor<2x4x8x8xf32>
  %g = nn.mul %y, %d : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %gb = nn.cast %g : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xbf16>
  %zero = nn.constant dense<0.000000e+00> : tensor<bf16>
  %gw = nn.where %m, %zero, %gb : tensor<1x1x8x8xi1>, tensor<bf16>, tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xbf16>
  %dx = nn.mul %c, %gw : tensor<bf16>, tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xbf16>
  return %yb, %dx : tensor<2x4x8x8xbf16>, tensor<2x4x8x8xbf16>
}

// -----

// Only the parts that fit fold. The scaled scores are read elsewhere: the
// mask alone folds. A mask broadcast inside the scores ([4, 1, 8] over
// [4, 3, 8]) or a scale of one value per column is not attention's: the
// softmax stays. A gradient's where that fills with 1, not 0, stays; the
// product after it then stays too.
// CHECK-LABEL: func.func @partly
// CHECK-SAME: (%[[S:.*]]: tensor<4x3x8xf32>, %[[M:.*]]: tensor<3x8xi1>, %[[MI:.*]]: tensor<4x1x8xi1>, %[[V:.*]]: tensor<8xf32>, %[[DY:.*]]: tensor<4x3x8xf32>)
// FUSED: %[[X:.*]] = nn.mul %[[S]]
// FUSED-NEXT: %[[Y:.*]] = nn.fused_softmax %[[X]] mask %[[M]] axis 2 {fill = -1.000000e+04 : f64}
// FUSED: nn.where %[[MI]]
// FUSED-NEXT: nn.softmax
// FUSED: nn.mul %[[S]], %[[V]]
// FUSED-NEXT: nn.softmax
// FUSED: nn.fused_softmax_grad %[[Y]], %[[DY]] axis 2 : tensor<4x3x8xf32>, tensor<4x3x8xf32> -> tensor<4x3x8xf32>
// FUSED-NEXT: nn.constant dense<1.000000e+00>
// FUSED-NEXT: nn.where %[[M]]
// FUSED-NEXT: nn.mul
func.func @partly(%s: tensor<4x3x8xf32>, %m: tensor<3x8xi1>, %mi: tensor<4x1x8xi1>, %v: tensor<8xf32>, %dy: tensor<4x3x8xf32>)
    -> (tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>) {
  %c = nn.constant dense<2.000000e+00> : tensor<f32>
  %fill = nn.constant dense<-1.000000e+04> : tensor<f32>
  %x = nn.mul %s, %c : tensor<4x3x8xf32>, tensor<f32> -> tensor<4x3x8xf32>
  %w = nn.where %m, %fill, %x : tensor<3x8xi1>, tensor<f32>, tensor<4x3x8xf32> -> tensor<4x3x8xf32>
  %y = nn.softmax %w axis 2 : tensor<4x3x8xf32>
  %wi = nn.where %mi, %fill, %s : tensor<4x1x8xi1>, tensor<f32>, tensor<4x3x8xf32> -> tensor<4x3x8xf32>
  %yi = nn.softmax %wi axis 2 : tensor<4x3x8xf32>
  %xv = nn.mul %s, %v : tensor<4x3x8xf32>, tensor<8xf32> -> tensor<4x3x8xf32>
  %yv = nn.softmax %xv axis 2 : tensor<4x3x8xf32>
  %p = nn.mul %dy, %y : tensor<4x3x8xf32>, tensor<4x3x8xf32> -> tensor<4x3x8xf32>
  %sum = nn.reduce_sum %p axes [2] keepdims : tensor<4x3x8xf32> -> tensor<4x3x1xf32>
  %d = nn.sub %dy, %sum : tensor<4x3x8xf32>, tensor<4x3x1xf32> -> tensor<4x3x8xf32>
  %g = nn.mul %y, %d : tensor<4x3x8xf32>, tensor<4x3x8xf32> -> tensor<4x3x8xf32>
  %one = nn.constant dense<1.000000e+00> : tensor<f32>
  %gw = nn.where %m, %one, %g : tensor<3x8xi1>, tensor<f32>, tensor<4x3x8xf32> -> tensor<4x3x8xf32>
  %dx = nn.mul %gw, %c : tensor<4x3x8xf32>, tensor<f32> -> tensor<4x3x8xf32>
  return %x, %yi, %yv, %dx, %y : tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>, tensor<4x3x8xf32>
}

// -----

// A bf16 policy writes its scalars as f32 constants cast to bf16: the scale
// is the constant as the cast rounds it (1/sqrt(8) = 0.35355339 becomes
// bf16 0.353515625), and the casts and constants nothing else reads go.
// CHECK-LABEL: func.func @bf16_policy_scalars
// CHECK-SAME: (%[[S:.*]]: tensor<2x4x8x8xbf16>, %[[M:.*]]: tensor<1x1x8x8xi1>)
// CUDA-NEXT: %[[Y:.*]] = nn.fused_softmax %[[S]] mask %[[M]] axis 3 {fill = 0xFFF0000000000000 : f64, scale = 0.353515625 : f64} : tensor<2x4x8x8xbf16>, tensor<1x1x8x8xi1> -> tensor<2x4x8x8xf32>
// CUDA-NEXT: return %[[Y]]
// CPU: nn.mul
// CPU: nn.where
// CPU: nn.softmax
func.func @bf16_policy_scalars(%s: tensor<2x4x8x8xbf16>, %m: tensor<1x1x8x8xi1>) -> tensor<2x4x8x8xf32> {
  %c32 = nn.constant dense<0.353553385> : tensor<f32>
  %c = nn.cast %c32 : tensor<f32> -> tensor<bf16>
  %inf32 = nn.constant dense<0xFF800000> : tensor<f32>
  %inf = nn.cast %inf32 : tensor<f32> -> tensor<bf16>
  %x = nn.mul %s, %c : tensor<2x4x8x8xbf16>, tensor<bf16> -> tensor<2x4x8x8xbf16>
  %w = nn.where %m, %inf, %x : tensor<1x1x8x8xi1>, tensor<bf16>, tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xbf16>
  %xf = nn.cast %w : tensor<2x4x8x8xbf16> -> tensor<2x4x8x8xf32>
  %y = nn.softmax %xf axis 3 : tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}
