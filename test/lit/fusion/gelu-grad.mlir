// The exact GELU's gradient as its rule writes it (eleven element-wise ops:
// dy * (0.5 * (1 + erf(x * 1/sqrt 2)) + x * exp(-x^2 / 2) / sqrt(2 pi)))
// becomes one nn.fused_gelu_grad on cpu and cuda, in f32 and, with the
// constants a bf16 policy rounds, in bf16; none keeps the ops.
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cpu})' | FileCheck %s --check-prefixes=CHECK,FUSED
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cuda})' | FileCheck %s --check-prefixes=CHECK,FUSED
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=none})' | FileCheck %s --check-prefixes=CHECK,NONE

// CHECK-LABEL: func.func @gelu_grad
// CHECK-SAME: (%[[X:.*]]: tensor<8x96xf32>, %[[DY:.*]]: tensor<8x96xf32>)
// FUSED-NEXT: %[[DX:.*]] = nn.fused_gelu_grad %[[X]], %[[DY]] : tensor<8x96xf32>
// FUSED-NEXT: return %[[DX]]
// NONE: nn.erf
// NONE: nn.exp
func.func @gelu_grad(%x: tensor<8x96xf32>, %dy: tensor<8x96xf32>) -> tensor<8x96xf32> {
  %c1 = nn.constant dense<0.707106769> : tensor<f32>
  %t = nn.mul %x, %c1 : tensor<8x96xf32>, tensor<f32> -> tensor<8x96xf32>
  %e = nn.erf %t : tensor<8x96xf32>
  %one = nn.constant dense<1.000000e+00> : tensor<f32>
  %a = nn.add %one, %e : tensor<f32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %half = nn.constant dense<5.000000e-01> : tensor<f32>
  %h = nn.mul %half, %a : tensor<f32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %c2 = nn.constant dense<0.398942292> : tensor<f32>
  %m = nn.constant dense<-5.000000e-01> : tensor<f32>
  %q = nn.mul %x, %x : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %q2 = nn.mul %q, %m : tensor<8x96xf32>, tensor<f32> -> tensor<8x96xf32>
  %ex = nn.exp %q2 : tensor<8x96xf32>
  %p = nn.mul %ex, %c2 : tensor<8x96xf32>, tensor<f32> -> tensor<8x96xf32>
  %xp = nn.mul %x, %p : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %d = nn.add %h, %xp : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %dx = nn.mul %dy, %d : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  return %dx : tensor<8x96xf32>
}

// -----

// bf16 constants (1/sqrt 2 is 0.70703 in bf16, 1/sqrt(2 pi) 0.39844).
// CHECK-LABEL: func.func @gelu_grad_bf16
// FUSED-NEXT: nn.fused_gelu_grad %{{.*}}, %{{.*}} : tensor<4x32xbf16>
// FUSED-NEXT: return
func.func @gelu_grad_bf16(%x: tensor<4x32xbf16>, %dy: tensor<4x32xbf16>) -> tensor<4x32xbf16> {
  %c1 = nn.constant dense<7.070310e-01> : tensor<bf16>
  %t = nn.mul %x, %c1 : tensor<4x32xbf16>, tensor<bf16> -> tensor<4x32xbf16>
  %e = nn.erf %t : tensor<4x32xbf16>
  %one = nn.constant dense<1.000000e+00> : tensor<bf16>
  %a = nn.add %one, %e : tensor<bf16>, tensor<4x32xbf16> -> tensor<4x32xbf16>
  %half = nn.constant dense<5.000000e-01> : tensor<bf16>
  %h = nn.mul %half, %a : tensor<bf16>, tensor<4x32xbf16> -> tensor<4x32xbf16>
  %c2 = nn.constant dense<3.984380e-01> : tensor<bf16>
  %m = nn.constant dense<-5.000000e-01> : tensor<bf16>
  %q = nn.mul %x, %x : tensor<4x32xbf16>, tensor<4x32xbf16> -> tensor<4x32xbf16>
  %q2 = nn.mul %q, %m : tensor<4x32xbf16>, tensor<bf16> -> tensor<4x32xbf16>
  %ex = nn.exp %q2 : tensor<4x32xbf16>
  %p = nn.mul %ex, %c2 : tensor<4x32xbf16>, tensor<bf16> -> tensor<4x32xbf16>
  %xp = nn.mul %x, %p : tensor<4x32xbf16>, tensor<4x32xbf16> -> tensor<4x32xbf16>
  %d = nn.add %h, %xp : tensor<4x32xbf16>, tensor<4x32xbf16> -> tensor<4x32xbf16>
  %dx = nn.mul %d, %dy : tensor<4x32xbf16>, tensor<4x32xbf16> -> tensor<4x32xbf16>
  return %dx : tensor<4x32xbf16>
}

// -----

// Not GELU's gradient: a different constant (the tanh form's 0.7978), or
// an intermediate read elsewhere. The ops stay.
// CHECK-LABEL: func.func @not_gelu_grad
// CHECK-NOT: nn.fused_gelu_grad
// CHECK: nn.erf
// CHECK: nn.erf
func.func @not_gelu_grad(%x: tensor<8x96xf32>, %dy: tensor<8x96xf32>) -> (tensor<8x96xf32>, tensor<8x96xf32>, tensor<8x96xf32>) {
  %c1 = nn.constant dense<0.797884583> : tensor<f32>
  %t = nn.mul %x, %c1 : tensor<8x96xf32>, tensor<f32> -> tensor<8x96xf32>
  %e = nn.erf %t : tensor<8x96xf32>
  %one = nn.constant dense<1.000000e+00> : tensor<f32>
  %a = nn.add %one, %e : tensor<f32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %half = nn.constant dense<5.000000e-01> : tensor<f32>
  %h = nn.mul %half, %a : tensor<f32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %c2 = nn.constant dense<0.398942292> : tensor<f32>
  %m = nn.constant dense<-5.000000e-01> : tensor<f32>
  %q = nn.mul %x, %x : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %q2 = nn.mul %q, %m : tensor<8x96xf32>, tensor<f32> -> tensor<8x96xf32>
  %ex = nn.exp %q2 : tensor<8x96xf32>
  %p = nn.mul %ex, %c2 : tensor<8x96xf32>, tensor<f32> -> tensor<8x96xf32>
  %xp = nn.mul %x, %p : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %d = nn.add %h, %xp : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %dx = nn.mul %dy, %d : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %c1b = nn.constant dense<0.707106769> : tensor<f32>
  %tb = nn.mul %x, %c1b : tensor<8x96xf32>, tensor<f32> -> tensor<8x96xf32>
  %eb = nn.erf %tb : tensor<8x96xf32>
  %ab = nn.add %one, %eb : tensor<f32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %hb = nn.mul %half, %ab : tensor<f32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %qb = nn.mul %x, %x : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %q2b = nn.mul %qb, %m : tensor<8x96xf32>, tensor<f32> -> tensor<8x96xf32>
  %exb = nn.exp %q2b : tensor<8x96xf32>
  %pb = nn.mul %exb, %c2 : tensor<8x96xf32>, tensor<f32> -> tensor<8x96xf32>
  %xpb = nn.mul %x, %pb : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %db = nn.add %hb, %xpb : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  %dxb = nn.mul %dy, %db : tensor<8x96xf32>, tensor<8x96xf32> -> tensor<8x96xf32>
  return %dx, %dxb, %hb : tensor<8x96xf32>, tensor<8x96xf32>, tensor<8x96xf32>
}
