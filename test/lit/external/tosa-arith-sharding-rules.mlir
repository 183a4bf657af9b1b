// RUN: dist-opt %s -dist-test-sharding-rules -verify-diagnostics -split-input-file
// Rules of tosa, arith and math ops on tensors.

// tosa element-wise ops broadcast extent-1 dimensions of equal-rank
// operands; tosa.mul's shift is in no factor.
func.func @tosa_elementwise(%a: tensor<4x8xf32>, %b: tensor<1x8xf32>, %c: tensor<4x8xi1>) -> tensor<4x8xf32> {
  // expected-remark @below {{sharding rule: ([i, j], [_, j]) -> ([i, j]) {i=4, j=8} partial=all(0, 1)}}
  %0 = tosa.add %a, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [_, j]) -> ([i, j]) {i=4, j=8} partial=all(0, 1)}}
  %1 = tosa.sub %0, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  // expected-remark @-1 {{sharding rule: () -> ([i]) {i=1}}}
  // expected-remark @below {{sharding rule: ([i, j], [i, j], [_]) -> ([i, j]) {i=4, j=8} partial=one(0, 1)}}
  %2 = tosa.mul %1, %0, %shift : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1xi8>) -> tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [_, j]) -> ([i, j]) {i=4, j=8}}}
  %3 = tosa.maximum %2, %b : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %4 = tosa.tanh %3 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %5 = tosa.sigmoid %4 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=all(1, 2)}}
  %6 = tosa.select %c, %5, %a : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %6 : tensor<4x8xf32>
}

// -----

// tosa.matmul: [N,H,C] x [N,C,W] -> [N,H,W], C a sum; the zero points are in
// no factor. Reductions keep the reduced dimension at extent 1.
func.func @tosa_matmul_reduce(%a: tensor<2x4x16xf32>, %b: tensor<2x16x8xf32>) -> (tensor<2x1x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>) {
  %zp = "tosa.const"() {values = dense<0.0> : tensor<1xf32>} : () -> tensor<1xf32>
  // expected-remark @-1 {{sharding rule: () -> ([i]) {i=1}}}
  // expected-remark @below {{sharding rule: ([i, j, l], [i, l, k], [_], [_]) -> ([i, j, k]) {i=2, j=4, k=8, l=16} reduction={l} partial=one(0, 1)}}
  %0 = tosa.matmul %a, %b, %zp, %zp : (tensor<2x4x16xf32>, tensor<2x16x8xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j, k]) -> ([i, _, k]) {i=2, j=4, k=8} reduction={j} partial=all(0)}}
  %1 = tosa.reduce_sum %0 {axis = 1 : i32} : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
  // expected-remark @below {{sharding rule: ([i, j, k]) -> ([i, j, _]) {i=2, j=4, k=8} reduction={k}}}
  %2 = tosa.reduce_max %0 {axis = 2 : i32} : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  // expected-remark @below {{sharding rule: ([i, j, k]) -> ([i, j, _]) {i=2, j=4, k=8} whole={k}}}
  %3 = tosa.reduce_product %0 {axis = 2 : i32} : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
  return %1, %2, %3 : tensor<2x1x8xf32>, tensor<2x4x1xf32>, tensor<2x4x1xf32>
}

// -----

func.func @tosa_transpose(%a: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  // expected-remark @below {{sharding rule: ([i, j, k]) -> ([k, i, j]) {i=2, j=3, k=4} partial=all(0)}}
  %0 = tosa.transpose %a {perms = array<i32: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// arith and math ops on tensors are element-wise. A splat constant may be
// split; any other constant stays whole (its users slice it locally).
func.func @arith_math(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %i: tensor<4x8xi32>) -> tensor<4x8xf32> {
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=all(0, 1)}}
  %0 = arith.addf %a, %b : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=one(0, 1)}}
  %1 = arith.mulf %0, %b : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=one(0)}}
  %2 = arith.divf %1, %b : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8}}}
  %3 = arith.maximumf %2, %a : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=all(0, 1)}}
  %4 = arith.subi %i, %i : tensor<4x8xi32>
  // expected-remark @below {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %5 = arith.sitofp %4 : tensor<4x8xi32> to tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8}}}
  %6 = arith.cmpf olt, %5, %3 : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=all(1, 2)}}
  %7 = arith.select %6, %3, %5 : tensor<4x8xi1>, tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %8 = math.exp %7 : tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %9 = math.tanh %8 : tensor<4x8xf32>
  %splat = arith.constant dense<1.0> : tensor<4x8xf32>
  // expected-remark @-1 {{sharding rule: () -> ([i, j]) {i=4, j=8}}}
  %dense = arith.constant dense<[[1.0], [2.0], [3.0], [4.0]]> : tensor<4x1xf32>
  // expected-remark @-1 {{sharding rule: () -> ([i, j]) {i=4, j=1} whole={i, j}}}
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=all(0, 1)}}
  %10 = arith.addf %9, %splat : tensor<4x8xf32>
  return %10 : tensor<4x8xf32>
}
