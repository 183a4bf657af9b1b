// Attention with an additive key-padding mask per batch row ([batch, 1,
// keys]): ring attention cuts only scalars and [seq, seq] masks into blocks.
func.func @main(%q: tensor<2x16x8xf32>, %k: tensor<2x16x8xf32>, %v: tensor<2x16x8xf32>, %pad: tensor<2x16xf32>) -> tensor<2x16x8xf32> {
  %kt = nn.transpose %k perm [0, 2, 1] : tensor<2x16x8xf32> -> tensor<2x8x16xf32>
  %s = nn.matmul %q, %kt : tensor<2x16x8xf32>, tensor<2x8x16xf32> -> tensor<2x16x16xf32>
  %m = nn.reshape %pad : tensor<2x16xf32> -> tensor<2x1x16xf32>
  %a = nn.add %s, %m : tensor<2x16x16xf32>, tensor<2x1x16xf32> -> tensor<2x16x16xf32>
  %p = nn.softmax %a axis 2 : tensor<2x16x16xf32>
  %y = nn.matmul %p, %v : tensor<2x16x16xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  return %y : tensor<2x16x8xf32>
}
