// Single-head attention over [batch, seq, features]: scores have no heads
// dimension for ulysses to split.
func.func @main(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>) -> tensor<2x16x8xf32> {
  %kt = nn.transpose %k perm [0, 2, 1] : tensor<2x16x8xf32> -> tensor<2x8x16xf32>
  %s = nn.matmul %q, %kt : tensor<2x16x8xf32>, tensor<2x8x16xf32> -> tensor<2x16x16xf32>
  %p = nn.softmax %s axis 2 : tensor<2x16x16xf32>
  %y = nn.matmul %p, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  return %y : tensor<2x16x8xf32>
}
