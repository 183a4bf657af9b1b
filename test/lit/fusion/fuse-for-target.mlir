// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cpu})' | FileCheck %s --check-prefixes=CHECK,FUSED
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=cuda})' | FileCheck %s --check-prefixes=CHECK,FUSED
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=none})' | FileCheck %s --check-prefixes=CHECK,NONE
// The default target is the host's.
// RUN: dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target)' | FileCheck %s --check-prefixes=CHECK,FUSED

// A target no description names is a diagnostic.
// RUN: not dist-opt %s --split-input-file --pass-pipeline='builtin.module(dist-fuse-for-target{target=tpu})' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: dist-fuse-for-target: unknown target 'tpu' (expected one of cpu, cuda, none)

// A linear layer as torch exports it, then its GELU: one fused op reads the
// stored weight and applies the bias and the GELU.
// CHECK-LABEL: func.func @linear_gelu
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>, %[[W:.*]]: tensor<64x32xf32>, %[[B:.*]]: tensor<64xf32>)
// FUSED-NEXT: %[[Y:.*]] = nn.fused_matmul %[[X]], %[[W]] transposed bias %[[B]] gelu : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
// FUSED-NEXT: return %[[Y]]
// NONE-NEXT: nn.transpose %[[W]] perm [1, 0]
// NONE-NEXT: nn.matmul
// NONE-NEXT: nn.add
// NONE-NEXT: nn.gelu
// NONE-NOT: nn.fused_matmul
func.func @linear_gelu(%x: tensor<8x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %wt = nn.transpose %w perm [1, 0] : tensor<64x32xf32> -> tensor<32x64xf32>
  %m = nn.matmul %x, %wt : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %h = nn.add %b, %m : tensor<64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %g = nn.gelu %h : tensor<8x64xf32>
  return %g : tensor<8x64xf32>
}

// -----

// Both operands of a weight gradient read transposed, no epilogue.
// CHECK-LABEL: func.func @both_transposed
// CHECK-SAME: (%[[D:.*]]: tensor<33x12xf32>, %[[X:.*]]: tensor<12x33xf32>)
// FUSED-NEXT: nn.fused_matmul %[[D]] transposed, %[[X]] transposed : tensor<33x12xf32>, tensor<12x33xf32> -> tensor<12x12xf32>
// NONE-COUNT-2: nn.transpose
// NONE-NEXT: nn.matmul
func.func @both_transposed(%d: tensor<33x12xf32>, %x: tensor<12x33xf32>) -> tensor<12x12xf32> {
  %dt = nn.transpose %d perm [1, 0] : tensor<33x12xf32> -> tensor<12x33xf32>
  %xt = nn.transpose %x perm [1, 0] : tensor<12x33xf32> -> tensor<33x12xf32>
  %y = nn.matmul %dt, %xt : tensor<12x33xf32>, tensor<33x12xf32> -> tensor<12x12xf32>
  return %y : tensor<12x12xf32>
}

// -----

// The GELU's input is read elsewhere (as a training step's backward does):
// the bias folds, the GELU stays. The transposed matrix is a result too: it
// must exist, and the matmul reads it as it is.
// CHECK-LABEL: func.func @gelu_input_read_elsewhere
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>, %[[W:.*]]: tensor<64x32xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK-NEXT: %[[WT:.*]] = nn.transpose %[[W]]
// FUSED-NEXT: %[[H:.*]] = nn.fused_matmul %[[X]], %[[WT]] bias %[[B]] : tensor<8x32xf32>, tensor<32x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
// FUSED-NEXT: %[[G:.*]] = nn.gelu %[[H]]
// FUSED-NEXT: return %[[G]], %[[H]], %[[WT]]
// NONE-NEXT: nn.matmul
// NONE-NEXT: nn.add
func.func @gelu_input_read_elsewhere(%x: tensor<8x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>)
    -> (tensor<8x64xf32>, tensor<8x64xf32>, tensor<32x64xf32>) {
  %wt = nn.transpose %w perm [1, 0] : tensor<64x32xf32> -> tensor<32x64xf32>
  %m = nn.matmul %x, %wt : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %h = nn.add %m, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %g = nn.gelu %h : tensor<8x64xf32>
  return %g, %h, %wt : tensor<8x64xf32>, tensor<8x64xf32>, tensor<32x64xf32>
}

// -----

// Nothing the kernels do not take: a bias computed after the product (the
// fused op stands where the matmul stood), a tanh GELU, a transposed lhs of
// a batched product, an epilogue on a bf16 product (the transposed weight
// still folds).
// CHECK-LABEL: func.func @not_fused
// CHECK-SAME: (%[[X:.*]]: tensor<8x32xf32>, %[[W:.*]]: tensor<32x64xf32>, %[[C:.*]]: tensor<1x64xf32>,
// CHECK-SAME: %[[A:.*]]: tensor<32x8xf32>, %[[BW:.*]]: tensor<2x32x64xf32>, %[[H:.*]]: tensor<8x32xbf16>, %[[HW:.*]]: tensor<64x32xbf16>, %[[HB:.*]]: tensor<64xbf16>)
// CHECK-NEXT: %[[M:.*]] = nn.matmul %[[X]], %[[W]]
// CHECK-NEXT: %[[B:.*]] = nn.reshape %[[C]]
// CHECK-NEXT: nn.add %[[M]], %[[B]]
// CHECK-NEXT: %[[M2:.*]] = nn.matmul %[[X]], %[[W]]
// CHECK-NEXT: nn.gelu %[[M2]] {approximate = "tanh"}
// CHECK-NEXT: %[[AT:.*]] = nn.transpose %[[A]]
// CHECK-NEXT: nn.matmul %[[AT]], %[[BW]]
// NONE-NEXT: %[[HWT:.*]] = nn.transpose %[[HW]]
// NONE-NEXT: nn.matmul %[[H]], %[[HWT]]
// FUSED-NEXT: %[[HM:.*]] = nn.fused_matmul %[[H]], %[[HW]] transposed : tensor<8x32xbf16>, tensor<64x32xbf16> -> tensor<8x64xbf16>
// FUSED-NEXT: nn.add %[[HM]], %[[HB]]
func.func @not_fused(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %c: tensor<1x64xf32>,
                     %a: tensor<32x8xf32>, %bw: tensor<2x32x64xf32>,
                     %h: tensor<8x32xbf16>, %hw: tensor<64x32xbf16>, %hb: tensor<64xbf16>)
    -> (tensor<8x64xf32>, tensor<8x64xf32>, tensor<2x8x64xf32>, tensor<8x64xbf16>) {
  %m = nn.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %b = nn.reshape %c : tensor<1x64xf32> -> tensor<64xf32>
  %y = nn.add %m, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %m2 = nn.matmul %x, %w : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  %g = nn.gelu %m2 {approximate = "tanh"} : tensor<8x64xf32>
  %at = nn.transpose %a perm [1, 0] : tensor<32x8xf32> -> tensor<8x32xf32>
  %p = nn.matmul %at, %bw : tensor<8x32xf32>, tensor<2x32x64xf32> -> tensor<2x8x64xf32>
  %hwt = nn.transpose %hw perm [1, 0] : tensor<64x32xbf16> -> tensor<32x64xbf16>
  %hm = nn.matmul %h, %hwt : tensor<8x32xbf16>, tensor<32x64xbf16> -> tensor<8x64xbf16>
  %hy = nn.add %hm, %hb : tensor<8x64xbf16>, tensor<64xbf16> -> tensor<8x64xbf16>
  return %y, %g, %p, %hy : tensor<8x64xf32>, tensor<8x64xf32>, tensor<2x8x64xf32>, tensor<8x64xbf16>
}

// -----

// A weight the matmuls of every microbatch read: one stored matrix, read
// transposed inside the loop.
// CHECK-LABEL: func.func @microbatches
// CHECK-SAME: (%{{.*}}: tensor<4x16xf32>, %{{.*}}: tensor<4x16xf32>, %[[W:.*]]: tensor<8x16xf32>)
// FUSED-NOT: nn.transpose
// FUSED: nn.microbatch_loop
// FUSED: nn.fused_matmul %{{.*}}, %[[W]] transposed : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
// NONE: nn.transpose %[[W]]
// NONE: nn.microbatch_loop
// NONE: nn.matmul
func.func @microbatches(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>, %w: tensor<8x16xf32>) -> tensor<4x8xf32> {
  %wt = nn.transpose %w perm [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
  %y = nn.microbatch_loop (%mb) count 2 : tensor<4x8xf32> {
    %xi = nn.microbatch_select %mb, %a, %b : tensor<4x16xf32>
    %p = nn.matmul %xi, %wt : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
    nn.microbatch_yield %p : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}

// -----

// Softmax's gradient as its rule writes it (attention's scores, the sum
// along the last axis): one fused op of y and dy.
// CHECK-LABEL: func.func @softmax_grad
// CHECK-SAME: (%[[Y:.*]]: tensor<2x4x8x8xf32>, %[[DY:.*]]: tensor<2x4x8x8xf32>)
// FUSED-NEXT: %[[DX:.*]] = nn.fused_softmax_grad %[[Y]], %[[DY]] axis 3 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
// FUSED-NEXT: return %[[DX]]
// NONE-NEXT: nn.mul
// NONE-NEXT: nn.reduce_sum
// NONE-NEXT: nn.sub
// NONE-NEXT: nn.mul
func.func @softmax_grad(%y: tensor<2x4x8x8xf32>, %dy: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %p = nn.mul %dy, %y : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %s = nn.reduce_sum %p axes [3] keepdims : tensor<2x4x8x8xf32> -> tensor<2x4x8x1xf32>
  %d = nn.sub %dy, %s : tensor<2x4x8x8xf32>, tensor<2x4x8x1xf32> -> tensor<2x4x8x8xf32>
  %dx = nn.mul %y, %d : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  return %dx : tensor<2x4x8x8xf32>
}

// -----

// The products in the other order, an axis that is not last, bf16.
// CHECK-LABEL: func.func @softmax_grad_inner_axis
// FUSED-NEXT: nn.fused_softmax_grad %{{.*}}, %{{.*}} axis 0 : tensor<5x3xbf16>, tensor<5x3xbf16> -> tensor<5x3xbf16>
// NONE-NOT: nn.fused_softmax_grad
func.func @softmax_grad_inner_axis(%y: tensor<5x3xbf16>, %dy: tensor<5x3xbf16>) -> tensor<5x3xbf16> {
  %p = nn.mul %y, %dy : tensor<5x3xbf16>, tensor<5x3xbf16> -> tensor<5x3xbf16>
  %s = nn.reduce_sum %p axes [0] keepdims : tensor<5x3xbf16> -> tensor<1x3xbf16>
  %d = nn.sub %dy, %s : tensor<5x3xbf16>, tensor<1x3xbf16> -> tensor<5x3xbf16>
  %dx = nn.mul %d, %y : tensor<5x3xbf16>, tensor<5x3xbf16> -> tensor<5x3xbf16>
  return %dx : tensor<5x3xbf16>
}

// -----

// The sum has another reader: it must stay, so nothing is fused. Nor is a
// difference whose lhs is not the product's other operand.
// CHECK-LABEL: func.func @softmax_grad_not_fused
// CHECK-NOT: nn.fused_softmax_grad
// CHECK: return
func.func @softmax_grad_not_fused(%y: tensor<4x8xf32>, %dy: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x8xf32>) {
  %p = nn.mul %dy, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s = nn.reduce_sum %p axes [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = nn.sub %dy, %s : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %dx = nn.mul %y, %d : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %p2 = nn.mul %dy, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s2 = nn.reduce_sum %p2 axes [1] keepdims : tensor<4x8xf32> -> tensor<4x1xf32>
  %d2 = nn.sub %z, %s2 : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  %dx2 = nn.mul %y, %d2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %dx, %s, %dx2 : tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x8xf32>
}
