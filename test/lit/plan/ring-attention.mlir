// RUN: dist-opt %s -dist-ring-attention="size=2" | FileCheck %s
// RUN: dist-opt %s -dist-ring-attention="size=2" | not grep nn.softmax
// RUN: dist-run %s --mesh cp=2 --plan %S/../train/Inputs/cp-ring.yaml --check 2>/dev/null | FileCheck %s --check-prefix=PASS
// PASS: check passed: 1 output(s) on 2 rank(s)

// Causal single-head attention over 8 positions as ring attention over 2
// blocks of 4: Q, Kᵀ and V get a block dimension, step 1 reads K and V
// rolled by one block (gathers with indices [1, 0]), each step cuts the
// [8, 8] mask into the [4, 4] blocks of its (query block, key block) pairs,
// the -inf fill becomes the lowest finite value (query block 0 sees none of
// key block 1: no NaN), and the steps merge by their log-sum-exps; no
// whole-sequence softmax is left. On cp=2 the result is the single
// device's.
// CHECK-LABEL: func.func @main
// CHECK: nn.reshape %arg0 {{.*}} -> tensor<2x2x4x8xf32>
// CHECK: nn.transpose {{.*}} perm [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
// CHECK: nn.reshape %arg2 {{.*}} -> tensor<2x2x4x8xf32>
// CHECK: nn.gather_elements {{.*}} axis 3 : tensor<2x4x4x2xi1>, tensor<2x4x4x1xi64> -> tensor<2x4x4x1xi1>
// CHECK: %[[LOW:.*]] = nn.constant dense<-3.40282347E+38> : tensor<f32>
// CHECK: nn.where %{{.*}}, %[[LOW]], %{{.*}} : tensor<2x4x4xi1>, tensor<f32>, tensor<2x2x4x4xf32>
// CHECK: nn.reduce_max {{.*}} axes [3] keepdims : tensor<2x2x4x4xf32> -> tensor<2x2x4x1xf32>
// CHECK: %[[IDX:.*]] = nn.constant dense<[1, 0]> : tensor<2xi64>
// CHECK: nn.gather %{{.*}}, %[[IDX]] axis 1 : tensor<2x2x8x4xf32>, tensor<2xi64> -> tensor<2x2x8x4xf32>
// CHECK: nn.gather %{{.*}}, %{{.*}} axis 1 : tensor<2x2x4x8xf32>, tensor<2xi64> -> tensor<2x2x4x8xf32>
// CHECK: nn.max %{{.*}}, %{{.*}} : tensor<2x2x4x1xf32>, tensor<2x2x4x1xf32> -> tensor<2x2x4x1xf32>
// CHECK: nn.reshape %{{.*}} : tensor<2x2x4x8xf32> -> tensor<2x8x8xf32>
func.func @main(%q: tensor<2x8x8xf32>, %k: tensor<2x8x8xf32>, %v: tensor<2x8x8xf32>) -> tensor<2x8x8xf32> {
  %kt = nn.transpose %k perm [0, 2, 1] : tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %s = nn.matmul %q, %kt : tensor<2x8x8xf32>, tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %c0 = nn.constant dense<0> : tensor<i64>
  %c1 = nn.constant dense<1> : tensor<i64>
  %c8 = nn.constant dense<8> : tensor<i64>
  %r = nn.range %c0, %c8, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<8xi64>
  %rows = nn.reshape %r : tensor<8xi64> -> tensor<8x1xi64>
  %future = nn.greater %r, %rows : tensor<8xi64>, tensor<8x1xi64> -> tensor<8x8xi1>
  %ninf = nn.constant dense<0xFF800000> : tensor<f32>
  %m = nn.where %future, %ninf, %s : tensor<8x8xi1>, tensor<f32>, tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  %p = nn.softmax %m axis 2 : tensor<2x8x8xf32>
  %y = nn.matmul %p, %v : tensor<2x8x8xf32>, tensor<2x8x8xf32> -> tensor<2x8x8xf32>
  return %y : tensor<2x8x8xf32>
}
