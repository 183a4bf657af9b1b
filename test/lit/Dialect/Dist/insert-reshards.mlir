// RUN: dist-opt %s -dist-propagate-sharding -dist-insert-reshards -split-input-file | FileCheck %s

// The row-parallel product stays partial through the bias add; the sum is
// reduced where the value leaves the function. The replicated bias joins the
// partial sum through a (free) partial view.
dist.mesh @mesh [tp = 2]
// CHECK-LABEL: func.func @mlp
func.func @mlp(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %w1 = nn.weight "fc1.weight" : tensor<64x256xf32>
  %w2 = nn.weight "fc2.weight" : tensor<256x64xf32>
  %b2 = nn.weight "fc2.bias" : tensor<64xf32>
  %w1a = dist.annotate %w1 to <@mesh, [S(1)]> : tensor<64x256xf32>
  // CHECK-NOT: = dist.annotate
  // CHECK: %[[H:.*]] = nn.matmul
  %h = nn.matmul %x, %w1a : tensor<4x64xf32>, tensor<64x256xf32> -> tensor<4x256xf32>
  %g = nn.gelu %h : tensor<4x256xf32>
  // CHECK: %[[Y:.*]] = nn.matmul
  %y = nn.matmul %g, %w2 : tensor<4x256xf32>, tensor<256x64xf32> -> tensor<4x64xf32>
  // CHECK: %[[B:.*]] = dist.reshard %{{.*}} from <@mesh, [R]> to <@mesh, [P(sum)]> reason "operand layout: nn.add
  // CHECK: %[[S:.*]] = nn.add %[[Y]], %[[B]]
  %yb = nn.add %y, %b2 : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>
  // CHECK: %[[R:.*]] = dist.reshard %[[S]] from <@mesh, [P(sum)]> to <@mesh, [R]> reason "function result
  // CHECK: return %[[R]]
  return %yb : tensor<4x64xf32>
}

// -----

// An annotation that disagrees with the producer becomes a reshard that names
// the annotation.
dist.mesh @mesh [x = 2]
// CHECK-LABEL: func.func @annotation_reshard
func.func @annotation_reshard(%a: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %a0 = dist.annotate %a to <@mesh, [S(0)]> priority 0 : tensor<8x8xf32>
  %r = nn.relu %a0 : tensor<8x8xf32>
  // CHECK: nn.relu
  // CHECK-NEXT: dist.reshard %{{.*}} from <@mesh, [S(0)]> to <@mesh, [S(1)]> reason "annotation 'cols'
  %r1 = dist.annotate %r to <@mesh, [S(1)]> priority 1 source "cols" : tensor<8x8xf32>
  return %r1 : tensor<8x8xf32>
}
