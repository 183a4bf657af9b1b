// RUN: dist-opt %s -dist-test-sharding-rules -verify-diagnostics -split-input-file
// The factor rule of each op, printed as einsum-like factor lists: letters are
// factors, a dimension lists its factors major first, `_` is a dimension in no
// factor.

func.func @matmul(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, k], [k, j]) -> ([i, j]) {i=4, j=8, k=16} reduction={k} partial=one(0, 1)}}
  %0 = nn.matmul %a, %b : tensor<4x16xf32>, tensor<16x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @batched_broadcast_matmul(%a: tensor<2x4x16xf32>, %b: tensor<16x8xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j, l], [l, k]) -> ([i, j, k]) {i=2, j=4, k=8, l=16} reduction={l} partial=one(0, 1)}}
  %0 = nn.matmul %a, %b : tensor<2x4x16xf32>, tensor<16x8xf32> -> tensor<2x4x8xf32>
  return
}

// -----

func.func @broadcast_add(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j], [j]) -> ([i, j]) {i=4, j=8} partial=all(0, 1)}}
  %0 = nn.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // A dimension of extent 1 that broadcasts takes no factor.
  // expected-remark @+1 {{sharding rule: ([i, j], [i, _]) -> ([i, j]) {i=4, j=8} partial=one(0, 1)}}
  %1 = nn.mul %a, %c : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=4, j=8}}}
  %2 = nn.relu %a : tensor<4x8xf32>
  return
}

// -----

func.func @heads(%x: tensor<2x16x64xf32>) {
  // 64 = 4 x 16: the merged dimension is made of the head factor (major)
  // and the head-size factor.
  // expected-remark @+1 {{sharding rule: ([i, j, kl]) -> ([i, j, k, l]) {i=2, j=16, k=4, l=16} partial=all(0)}}
  %0 = nn.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  return
}

// -----

func.func @unrefinable_reshape(%x: tensor<6x4xf32>) {
  // 6x4 -> 4x6 shares no factors: every dimension is whole.
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([k, l]) {i=6, j=4, k=4, l=6} whole={i, j, k, l} partial=all(0)}}
  %0 = nn.reshape %x : tensor<6x4xf32> -> tensor<4x6xf32>
  return
}

// -----

func.func @normalisation(%x: tensor<2x8xf32>, %g: tensor<8xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, j]) {i=2, j=8} whole={j}}}
  %0 = nn.softmax %x axis 1 : tensor<2x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j], [j]) -> ([i, j]) {i=2, j=8} whole={j}}}
  %1 = nn.layer_norm %x, %g axis 1 epsilon 1.0e-05 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i]) {i=2, j=8} reduction={j} partial=all(0)}}
  %2 = nn.reduce_sum %x axes [1] : tensor<2x8xf32> -> tensor<2xf32>
  return
}

// -----

func.func @data_movement(%x: tensor<2x3x4xf32>, %a: tensor<4x8xf32>, %b: tensor<4x2xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j, k]) -> ([k, i, j]) {i=2, j=3, k=4} partial=all(0)}}
  %0 = nn.transpose %x perm [2, 0, 1] : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, k]) {i=4, j=8, k=4} whole={j, k} partial=all(0)}}
  %1 = nn.slice %a starts [0, 2] ends [4, 6] steps [1, 1] : tensor<4x8xf32> -> tensor<4x4xf32>
  // expected-remark @+1 {{sharding rule: ([i, k], [i, l]) -> ([i, j]) {i=4, j=10, k=8, l=2} whole={j, k, l} partial=all(0, 1)}}
  %2 = nn.concat %a, %b axis 1 : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<4x10xf32>
  return
}

// -----

func.func @embedding(%table: tensor<96x64xf32>, %ids: tensor<2x16xi64>) {
  // Splitting the table's rows gives partial (masked) lookups.
  // expected-remark @+1 {{sharding rule: ([i, j], [k, l]) -> ([k, l, j]) {i=96, j=64, k=2, l=16} reduction={i} partial=one(0)}}
  %0 = nn.gather %table, %ids axis 0 : tensor<96x64xf32>, tensor<2x16xi64> -> tensor<2x16x64xf32>
  return
}

// -----

// A convolution's bias is added after the sum over input channels: with the
// channels split it must be a partial sum too (an addend).
func.func @conv_with_bias(%x: tensor<2x8x6x6xf32>, %w: tensor<4x8x3x3xf32>, %b: tensor<4xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, k, l, o], [j, k, m, p], [j]) -> ([i, j, n, q]) {i=2, j=4, k=8, l=6, m=3, n=4, o=6, p=3, q=4} reduction={k} whole={l, m, n, o, p, q} addends={2}}}
  %0 = nn.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x8x6x6xf32>, tensor<4x8x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  return
}

// -----

// GatherElements: dimensions where data and indices agree (other than the
// axis) share a factor; the axis is whole in data and free in the indices.
func.func @gather_elements(%logp: tensor<2x16x96xf32>, %ids: tensor<2x16x1xi64>, %short: tensor<2x8x1xi64>) {
  // expected-remark @+1 {{sharding rule: ([i, j, k], [i, j, l]) -> ([i, j, l]) {i=2, j=16, k=96, l=1} whole={k} partial=one(0)}}
  %0 = nn.gather_elements %logp, %ids axis 2 : tensor<2x16x96xf32>, tensor<2x16x1xi64> -> tensor<2x16x1xf32>
  // Indices shorter than data in dimension 1: it stays whole.
  // expected-remark @+1 {{sharding rule: ([i, j, l], [i, k, m]) -> ([i, k, m]) {i=2, j=16, k=8, l=96, m=1} whole={j, k, l} partial=one(0)}}
  %1 = nn.gather_elements %logp, %short axis 2 : tensor<2x16x96xf32>, tensor<2x8x1xi64> -> tensor<2x8x1xf32>
  return
}

// -----

func.func @scatter_elements(%x: tensor<4x8xf32>, %i: tensor<4x2xi64>, %u: tensor<4x2xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j], [i, k], [i, k]) -> ([i, j]) {i=4, j=8, k=2} whole={j, k} partial=all(0, 2)}}
  %0 = nn.scatter_elements %x, %i, %u axis 1 reduction "add" : (tensor<4x8xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<4x8xf32>
  // max is not linear: partial values are reduced first.
  // expected-remark @+1 {{sharding rule: ([i, j], [i, k], [i, k]) -> ([i, j]) {i=4, j=8, k=2} whole={j, k}}}
  %1 = nn.scatter_elements %x, %i, %u axis 1 reduction "max" : (tensor<4x8xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @cumsum_one_hot(%x: tensor<4x8xf32>, %t: tensor<4xi64>, %v: tensor<2xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, k]) {i=4, j=8, k=8} whole={j, k} partial=all(0)}}
  %0 = nn.cumsum %x axis 1 : tensor<4x8xf32>
  // expected-remark @+1 {{sharding rule: ([i], [j]) -> ([i, k]) {i=4, j=2, k=10} whole={j, k}}}
  %1 = nn.one_hot %t, %v depth 10 axis 1 : tensor<4xi64>, tensor<2xf32> -> tensor<4x10xf32>
  return
}

// -----

// Einsum: one factor per letter; letters the result lacks are reductions
// (a split one leaves a partial sum); a letter repeated in a term is whole.
func.func @einsum(%m: tensor<16x4x8xf32>, %x: tensor<16x32xf32>, %w: tensor<4x32x64xf32>, %e: tensor<4x8x32xf32>, %s: tensor<8x8xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j, k], [i, l]) -> ([j, k, l]) {i=16, j=4, k=8, l=32} reduction={i} partial=one(0, 1)}}
  %0 = nn.einsum "tec,td->ecd" %m, %x : (tensor<16x4x8xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k], [i, k, l]) -> ([i, j, l]) {i=4, j=8, k=32, l=64} reduction={k} partial=one(0, 1)}}
  %1 = nn.einsum "ecd,edf->ecf" %e, %w : (tensor<4x8x32xf32>, tensor<4x32x64xf32>) -> tensor<4x8x64xf32>
  // expected-remark @+1 {{sharding rule: ([i, j, k], [j, k, l]) -> ([i, l]) {i=16, j=4, k=8, l=32} reduction={j, k} partial=one(0, 1)}}
  %2 = nn.einsum "tec,ecd->td" %m, %e : (tensor<16x4x8xf32>, tensor<4x8x32xf32>) -> tensor<16x32xf32>
  // expected-remark @+1 {{sharding rule: ([i, i]) -> ([i]) {i=8} whole={i} partial=one(0)}}
  %3 = nn.einsum "ii->i" %s : (tensor<8x8xf32>) -> tensor<8xf32>
  return
}

// -----

func.func @top_k(%g: tensor<16x4xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j]) -> ([i, k]) {i=16, j=4, k=2} whole={j, k}}}
  %0 = nn.top_k %g k 2 axis 1 : tensor<16x4xf32> -> tensor<16x2xi64>
  return
}

// -----

// Resize: batch and channels (scale 1) split, resized dimensions whole.
func.func @resize(%x: tensor<2x4x8x8xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j, k, m]) -> ([i, j, l, n]) {i=2, j=4, k=8, l=16, m=8, n=4} whole={k, l, m, n} partial=all(0)}}
  %0 = nn.resize %x {mode = "cubic", scales = array<f64: 1.0, 1.0, 2.0, 0.5>, sizes = array<i64: 2, 4, 16, 4>} : tensor<2x4x8x8xf32> -> tensor<2x4x16x4xf32>
  return
}

// -----

// tf_half_pixel_for_nn shifts every coordinate, scale 1 or not: nothing
// splits.
func.func @resize_shifted(%x: tensor<2x4x8x8xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, k, m, o]) -> ([j, l, n, p]) {i=2, j=2, k=4, l=4, m=8, n=16, o=8, p=16} whole={i, j, k, l, m, n, o, p} partial=all(0)}}
  %0 = nn.resize %x {coordinate_transformation_mode = "tf_half_pixel_for_nn", scales = array<f64: 1.0, 1.0, 2.0, 2.0>, sizes = array<i64: 2, 4, 16, 16>} : tensor<2x4x8x8xf32> -> tensor<2x4x16x16xf32>
  return
}

// -----

// GridSample: batch (image and grid) and channels split; the output's
// points split with the grid's; the image's height and width are whole.
func.func @grid_sample(%x: tensor<2x4x8x8xf32>, %g: tensor<2x3x5x2xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j, k, l], [i, m, n, o]) -> ([i, j, m, n]) {i=2, j=4, k=8, l=8, m=3, n=5, o=2} whole={k, l, o} partial=all(0)}}
  %0 = nn.grid_sample %x, %g : (tensor<2x4x8x8xf32>, tensor<2x3x5x2xf32>) -> tensor<2x4x3x5xf32>
  return
}

// -----

// MaxPool's indices number the whole input: nothing splits.
func.func @max_pool_indices(%x: tensor<2x4x8x8xf32>) {
  // expected-remark @+1 {{sharding rule: ([i, j, k, l]) -> ([m, n, o, p]) {i=2, j=4, k=8, l=8, m=2, n=4, o=4, p=4} whole={i, j, k, l, m, n, o, p}}}
  %0 = nn.max_pool_indices %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<2x4x8x8xf32> -> tensor<2x4x4x4xi64>
  return
}
