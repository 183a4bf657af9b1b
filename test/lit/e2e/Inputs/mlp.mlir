// A Megatron MLP written by hand; weights have no file, so dist-run gives
// them deterministic synthetic values.
func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %w1 = nn.weight "fc1.weight" : tensor<64x256xf32>
  %b1 = nn.weight "fc1.bias" : tensor<256xf32>
  %w2 = nn.weight "fc2.weight" : tensor<256x64xf32>
  %b2 = nn.weight "fc2.bias" : tensor<64xf32>
  %h = nn.matmul %x, %w1 : tensor<4x64xf32>, tensor<64x256xf32> -> tensor<4x256xf32>
  %hb = nn.add %h, %b1 : tensor<4x256xf32>, tensor<256xf32> -> tensor<4x256xf32>
  %g = nn.gelu %hb : tensor<4x256xf32>
  %y = nn.matmul %g, %w2 : tensor<4x256xf32>, tensor<256x64xf32> -> tensor<4x64xf32>
  %yb = nn.add %y, %b2 : tensor<4x64xf32>, tensor<64xf32> -> tensor<4x64xf32>
  return %yb : tensor<4x64xf32>
}
