// RUN: dist-opt %s -dist-propagate-sharding -split-input-file | FileCheck %s

// Megatron MLP: a column-parallel first matmul and a row-parallel second one.
// The split flows through the bias and the activation; the second product is
// partial, and stays partial through the bias add (a linear op).
dist.mesh @mesh [tp = 2]
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %{{.*}}: tensor<4x64xf32> {dist.sharding = #dist.sharding<@mesh, [R]>}
func.func @mlp(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  // CHECK: nn.weight "fc1.weight" {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(1)]>]
  %w1 = nn.weight "fc1.weight" : tensor<64x256xf32>
  // CHECK: nn.weight "fc1.bias" {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(0)]>]
  %b1 = nn.weight "fc1.bias" : tensor<256xf32>
  // CHECK: nn.weight "fc2.weight" {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(0)]>]
  %w2 = nn.weight "fc2.weight" : tensor<256x64xf32>
  // CHECK: nn.weight "fc2.bias" {dist.sharding = [#dist.sharding<@mesh, [R]>]}
  %b2 = nn.weight "fc2.bias" : tensor<64xf32>
  %w1a = dist.annotate %w1 to <@mesh, [S(1)]> source "fc1: colwise" : tensor<64x256xf32>
  // CHECK: nn.matmul {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(1)]>]
  %h = nn.matmul %x, %w1a : tensor<4x64xf32>, tensor<64x256xf32> -> tensor<4x256xf32>
  // CHECK: nn.add {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(1)]>]
  %hb = nn.add %h, %b1 : tensor<4x256xf32>, tensor<256xf32> -> tensor<4x256xf32>
  // CHECK: nn.gelu {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(1)]>]
  %g = nn.gelu %hb : tensor<4x256xf32>
  // CHECK: nn.matmul {{.*}}dist.sharding = [#dist.sharding<@mesh, [P(sum)]>]
  %y = nn.matmul %g, %w2 : tensor<4x256xf32>, tensor<256x64xf32> -> tensor<4x64xf32>
  // CHECK: nn.add {{.*}}dist.sharding = [#dist.sharding<@mesh, [P(sum)]>]
  %yb = nn.add %y, %b2 : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>
  return %yb : tensor<4x64xf32>
}

// -----

// Priority 0 beats priority 1 even when it costs more.
dist.mesh @mesh [x = 4]
// CHECK-LABEL: func.func @priorities
func.func @priorities(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %a1 = dist.annotate %a to <@mesh, [S(0)]> priority 1 : tensor<64x64xf32>
  %b1 = dist.annotate %b to <@mesh, [S(1)]> priority 0 : tensor<64x64xf32>
  // CHECK: nn.add {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(1)]>]
  %c = nn.add %a1, %b1 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}

// -----

// Equal priorities: the larger tensor keeps its sharding.
dist.mesh @mesh [x = 4]
// CHECK-LABEL: func.func @bigger_wins
func.func @bigger_wins(%a: tensor<64x64xf32>, %b: tensor<1x64xf32>) -> tensor<64x64xf32> {
  %a1 = dist.annotate %a to <@mesh, [S(0)]> : tensor<64x64xf32>
  %b1 = dist.annotate %b to <@mesh, [S(1)]> : tensor<1x64xf32>
  // CHECK: nn.add {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(0)]>]
  %c = nn.add %a1, %b1 : tensor<64x64xf32>, tensor<1x64xf32> -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}

// -----

// Splitting features into heads keeps the split on the head dimension; the
// softmax over keys does not take a split of its own axis.
dist.mesh @mesh [tp = 4]
// CHECK-LABEL: func.func @heads
func.func @heads(%x: tensor<2x16x64xf32>) -> tensor<2x4x16x16xf32> {
  %xa = dist.annotate %x to <@mesh, [S(2)]> : tensor<2x16x64xf32>
  // CHECK: nn.reshape {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(2)]>]
  %h = nn.reshape %xa : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  // CHECK: nn.transpose {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(1)]>]
  %t = nn.transpose %h perm [0, 2, 1, 3] : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  // CHECK: nn.softmax {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(1)]>]
  %s = nn.softmax %t axis 3 : tensor<2x4x16x16xf32>
  return %s : tensor<2x4x16x16xf32>
}

// -----

// A split of the softmax axis is not taken: the result stays replicated.
dist.mesh @mesh [tp = 4]
// CHECK-LABEL: func.func @softmax_axis
func.func @softmax_axis(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %xa = dist.annotate %x to <@mesh, [S(1)]> : tensor<8x64xf32>
  // CHECK: nn.softmax {{.*}}dist.sharding = [#dist.sharding<@mesh, [R]>]
  %s = nn.softmax %xa axis 1 : tensor<8x64xf32>
  return %s : tensor<8x64xf32>
}

// -----

// Two mesh axes: batch over dp, features over tp; weights are replicated
// over dp.
dist.mesh @mesh [dp = 2, tp = 2]
// CHECK-LABEL: func.func @two_axes
func.func @two_axes(%x: tensor<8x32xf32>) -> tensor<8x64xf32> {
  %xa = dist.annotate %x to <@mesh, [S(0), ?]> : tensor<8x32xf32>
  // CHECK: nn.weight "w" {{.*}}dist.sharding = [#dist.sharding<@mesh, [R, S(1)]>]
  %w = nn.weight "w" : tensor<32x64xf32>
  %wa = dist.annotate %w to <@mesh, [?, S(1)]> : tensor<32x64xf32>
  // CHECK: nn.matmul {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(0), S(1)]>]
  %y = nn.matmul %xa, %wa : tensor<8x32xf32>, tensor<32x64xf32> -> tensor<8x64xf32>
  // CHECK: nn.relu {{.*}}dist.sharding = [#dist.sharding<@mesh, [S(0), S(1)]>]
  %r = nn.relu %y : tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// -----

// A vocabulary-split embedding table gives a partial lookup.
dist.mesh @mesh [tp = 2]
// CHECK-LABEL: func.func @embedding
func.func @embedding(%ids: tensor<2x16xi64>) -> tensor<2x16x64xf32> {
  %wte = nn.weight "wte" : tensor<96x64xf32>
  %wa = dist.annotate %wte to <@mesh, [S(0)]> : tensor<96x64xf32>
  // CHECK: nn.gather {{.*}}dist.sharding = [#dist.sharding<@mesh, [P(sum)]>]
  %e = nn.gather %wa, %ids axis 0 : tensor<96x64xf32>, tensor<2x16xi64> -> tensor<2x16x64xf32>
  return %e : tensor<2x16x64xf32>
}

// -----

// Every decision records its cause.
dist.mesh @mesh [tp = 2]
// CHECK-LABEL: func.func @causes
func.func @causes(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %xa = dist.annotate %x to <@mesh, [S(0)]> source "rows: my plan" : tensor<4x8xf32>
  // CHECK: nn.relu {{.*}}dist.cause = ["tp S(0) from 'rows: my plan'"]
  %r = nn.relu %xa : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
