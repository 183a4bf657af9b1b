// RUN: dist-opt %s --canonicalize | FileCheck %s
// An einsum that is one matrix product without batch letters becomes
// nn.matmul of the operands as matrices (the GEMM kernels' form); the rest
// stay einsums.

// A linear layer's weight gradient summed over batch and sequence rows:
// x^T d with x as [rows, k] and d as [rows, n].
// CHECK-LABEL: func.func @weight_gradient
func.func @weight_gradient(%x: tensor<2x6x3xf32>, %d: tensor<2x6x4xf32>) -> tensor<3x4xf32> {
  // CHECK: %[[X:.*]] = nn.reshape %arg0 {nn.phase = "backward"} : tensor<2x6x3xf32> -> tensor<12x3xf32>
  // CHECK: %[[XT:.*]] = nn.transpose %[[X]] perm [1, 0] {nn.phase = "backward"} : tensor<12x3xf32> -> tensor<3x12xf32>
  // CHECK: %[[D:.*]] = nn.reshape %arg1 {nn.phase = "backward"} : tensor<2x6x4xf32> -> tensor<12x4xf32>
  // CHECK: %[[G:.*]] = nn.matmul %[[XT]], %[[D]] {nn.phase = "backward"} : tensor<3x12xf32>, tensor<12x4xf32> -> tensor<3x4xf32>
  // CHECK-NOT: nn.einsum
  // CHECK: return %[[G]]
  %g = nn.einsum "abk,abn->kn" %x, %d {nn.phase = "backward"} : (tensor<2x6x3xf32>, tensor<2x6x4xf32>) -> tensor<3x4xf32>
  return %g : tensor<3x4xf32>
}

// The same in the weight's transposed layout: the operands swap.
// CHECK-LABEL: func.func @transposed_weight_gradient
func.func @transposed_weight_gradient(%x: tensor<2x6x3xf32>, %d: tensor<2x6x4xf32>) -> tensor<4x3xf32> {
  // CHECK: %[[D:.*]] = nn.reshape %arg1 : tensor<2x6x4xf32> -> tensor<12x4xf32>
  // CHECK: %[[DT:.*]] = nn.transpose %[[D]] perm [1, 0] : tensor<12x4xf32> -> tensor<4x12xf32>
  // CHECK: %[[X:.*]] = nn.reshape %arg0 : tensor<2x6x3xf32> -> tensor<12x3xf32>
  // CHECK: nn.matmul %[[DT]], %[[X]] : tensor<4x12xf32>, tensor<12x3xf32> -> tensor<4x3xf32>
  %g = nn.einsum "abk,abn->nk" %x, %d : (tensor<2x6x3xf32>, tensor<2x6x4xf32>) -> tensor<4x3xf32>
  return %g : tensor<4x3xf32>
}

// Several result letters per side: the result is reshaped back.
// CHECK-LABEL: func.func @grouped
func.func @grouped(%a: tensor<2x3x5xf32>, %b: tensor<5x4x2xf32>) -> tensor<2x3x4x2xf32> {
  // CHECK: %[[A:.*]] = nn.reshape %arg0 : tensor<2x3x5xf32> -> tensor<6x5xf32>
  // CHECK: %[[B:.*]] = nn.reshape %arg1 : tensor<5x4x2xf32> -> tensor<5x8xf32>
  // CHECK: %[[P:.*]] = nn.matmul %[[A]], %[[B]] : tensor<6x5xf32>, tensor<5x8xf32> -> tensor<6x8xf32>
  // CHECK: nn.reshape %[[P]] : tensor<6x8xf32> -> tensor<2x3x4x2xf32>
  %g = nn.einsum "mik,knj->minj" %a, %b : (tensor<2x3x5xf32>, tensor<5x4x2xf32>) -> tensor<2x3x4x2xf32>
  return %g : tensor<2x3x4x2xf32>
}

// Not one plain product: a batch letter (g), summed letters in another order
// in the two operands, letters of one side interleaved, a letter summed
// within one operand, a dynamic extent, three operands.
// CHECK-LABEL: func.func @kept
func.func @kept(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %c: tensor<3x2x5xf32>,
                %d: tensor<2x3x5xf32>, %e: tensor<?x3xf32>, %f: tensor<?x4xf32>)
    -> (tensor<2x3x5xf32>, tensor<5x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x4xf32>, tensor<4xf32>) {
  // CHECK-COUNT-6: nn.einsum
  // CHECK-NOT: nn.matmul
  %0 = nn.einsum "gij,gjk->gik" %a, %b : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %1 = nn.einsum "abi,bak->ik" %d, %c : (tensor<2x3x5xf32>, tensor<3x2x5xf32>) -> tensor<5x5xf32>
  %2 = nn.einsum "aik,akj->ij" %a, %b : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<3x5xf32>
  %3 = nn.einsum "aij,bjk->ik" %a, %b : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<3x5xf32>
  %4 = nn.einsum "ak,an->kn" %e, %f : (tensor<?x3xf32>, tensor<?x4xf32>) -> tensor<3x4xf32>
  %5 = nn.einsum "aij,ajk,aik->j" %a, %b, %d : (tensor<2x3x4xf32>, tensor<2x4x5xf32>, tensor<2x3x5xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x3x5xf32>, tensor<5x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x4xf32>, tensor<4xf32>
}
