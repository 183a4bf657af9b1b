// RUN: dist-opt %s -dist-test-sharding-rules -verify-diagnostics -split-input-file
// Rules of linalg ops with written-out payloads, read off indexing maps,
// iterator types and payloads: one factor per loop (i, j, k, ... in loop
// order). Payload ops work on scalars and have empty rules.

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// Element-wise add: partial sums pass when both operands carry them.
func.func @add(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-remark @below {{sharding rule: ([i, j], [i, j], [i, j]) -> ([i, j]) {i=4, j=8} partial=all(0, 1)}}
  %0 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x8xf32>, tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    // expected-remark @below {{sharding rule: ([], []) -> ([]) {}}}
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// Scaled by a constant: still linear. A bias broadcast along rows: the
// bias's only dimension is the column factor.
func.func @scale_and_bias(%a: tensor<4x8xf32>, %bias: tensor<4xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %two = arith.constant 2.0 : f32
  // expected-remark @-1 {{sharding rule: () -> ([]) {}}}
  // expected-remark @below {{sharding rule: ([i, j], [i], [i, j]) -> ([i, j]) {i=4, j=8} partial=all(0, 1)}}
  %0 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %bias : tensor<4x8xf32>, tensor<4xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%x: f32, %b: f32, %out: f32):
    // expected-remark @below {{sharding rule: ([], []) -> ([]) {}}}
    %m = arith.mulf %x, %two : f32
    // expected-remark @below {{sharding rule: ([], []) -> ([]) {}}}
    %s = arith.addf %m, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// Non-linear payloads (relu, x + 1) let no partial sum through.
func.func @relu(%a: tensor<4x8xf32>, %init: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8}}}
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%x: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    // expected-remark @-1 {{sharding rule: () -> ([]) {}}}
    // expected-remark @below {{sharding rule: ([], []) -> ([]) {}}}
    %r = arith.maximumf %x, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i, j]) -> ([i, j]) {i=4, j=8}}}
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
  ^bb0(%x: f32, %out: f32):
    %one = arith.constant 1.0 : f32
    // expected-remark @-1 {{sharding rule: () -> ([]) {}}}
    // expected-remark @below {{sharding rule: ([], []) -> ([]) {}}}
    %r = arith.addf %x, %one : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// A sum over rows into zeros: the reduced loop is a reduction factor and a
// partial input stays a partial sum. Into an arbitrary init the reduction
// must stay whole (each device would add the init once).
func.func @row_sum(%a: tensor<4x8xf32>, %acc: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %zero = arith.constant 0.0 : f32
  // expected-remark @-1 {{sharding rule: () -> ([]) {}}}
  %e = tensor.empty() : tensor<4xf32>
  // expected-remark @-1 {{sharding rule: () -> ([i]) {i=4}}}
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  // expected-remark @-1 {{sharding rule: ([], [i]) -> ([i]) {i=4}}}
  // expected-remark @below {{sharding rule: ([i, j], [i]) -> ([i]) {i=4, j=8} reduction={j} partial=all(0)}}
  %0 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%x: f32, %out: f32):
    // expected-remark @below {{sharding rule: ([], []) -> ([]) {}}}
    %s = arith.addf %x, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  // expected-remark @below {{sharding rule: ([i, j], [i]) -> ([i]) {i=4, j=8} whole={j} partial=all(0, 1)}}
  %1 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%x: f32, %out: f32):
    // expected-remark @below {{sharding rule: ([], []) -> ([]) {}}}
    %s = arith.addf %x, %out : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// A max needs no identity init: max(init, max of the pieces) is the max.
// linalg.reduce is a structured op too.
func.func @row_max(%a: tensor<4x8xf32>, %acc: tensor<4xf32>) -> tensor<4xf32> {
  // expected-remark @below {{sharding rule: ([i, j], [i]) -> ([i]) {i=4, j=8} reduction={j}}}
  %0 = linalg.reduce ins(%a : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) dimensions = [1]
    (%x: f32, %out: f32) {
      // expected-remark @below {{sharding rule: ([], []) -> ([]) {}}}
      %m = arith.maximumf %x, %out : f32
      linalg.yield %m : f32
    }
  return %0 : tensor<4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
// A combiner that is not a recognised reduction (a product) stays whole.
func.func @row_prod(%a: tensor<4x8xf32>, %acc: tensor<4xf32>) -> tensor<4xf32> {
  // expected-remark @below {{sharding rule: ([i, j], [i]) -> ([i]) {i=4, j=8} whole={j}}}
  %0 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<4x8xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%x: f32, %out: f32):
    // expected-remark @below {{sharding rule: ([], []) -> ([]) {}}}
    %p = arith.mulf %x, %out : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Loops used in index arithmetic (a window `d0 + d1`) or read with
// linalg.index are whole; the input's windowed dimension gets a whole factor
// of its own extent.
func.func @windows(%x: tensor<10xf32>, %w: tensor<3xf32>, %init: tensor<8xf32>, %t: tensor<4x8xf32>) -> (tensor<8xf32>, tensor<4x8xf32>) {
  // expected-remark @below {{sharding rule: ([k], [j], [i]) -> ([i]) {i=8, j=3, k=10} whole={i, j, k}}}
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x, %w : tensor<10xf32>, tensor<3xf32>) outs(%init : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    // expected-remark @below {{sharding rule: ([], []) -> ([]) {}}}
    %m = arith.mulf %a, %b : f32
    // expected-remark @below {{sharding rule: ([], []) -> ([]) {}}}
    %s = arith.addf %m, %out : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  // expected-remark @below {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8} whole={j}}}
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      outs(%t : tensor<4x8xf32>) {
  ^bb0(%out: f32):
    %j = linalg.index 1 : index
    // expected-remark @below {{sharding rule: ([]) -> ([]) {}}}
    %ji = arith.index_cast %j : index to i64
    // expected-remark @below {{sharding rule: ([]) -> ([]) {}}}
    %jf = arith.sitofp %ji : i64 to f32
    linalg.yield %jf : f32
  } -> tensor<4x8xf32>
  return %0, %1 : tensor<8xf32>, tensor<4x8xf32>
}

// -----

// Data movement: transposes and broadcasts let partial sums through. (A
// transpose's loops follow its result.)
func.func @movement(%a: tensor<4x8xf32>, %t: tensor<8x4xf32>, %v: tensor<8xf32>, %b: tensor<4x8xf32>) -> (tensor<8x4xf32>, tensor<4x8xf32>) {
  // expected-remark @below {{sharding rule: ([j, i], [i, j]) -> ([i, j]) {i=8, j=4} partial=all(0)}}
  %0 = linalg.transpose ins(%a : tensor<4x8xf32>) outs(%t : tensor<8x4xf32>) permutation = [1, 0]
  // expected-remark @below {{sharding rule: ([j], [i, j]) -> ([i, j]) {i=4, j=8} partial=all(0)}}
  %1 = linalg.broadcast ins(%v : tensor<8xf32>) outs(%b : tensor<4x8xf32>) dimensions = [0]
  return %0, %1 : tensor<8x4xf32>, tensor<4x8xf32>
}
