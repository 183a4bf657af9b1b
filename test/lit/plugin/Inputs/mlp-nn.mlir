// An imported model in the nn dialect (what dist-opt's importer makes of an
// ONNX MLP), for the plugin's whole-compile test.
func.func @main(%x: tensor<4x8xf32> {nn.name = "x"}) -> (tensor<4x2xf32> {nn.name = "y"}) {
  %w = nn.weight "fc.weight" : tensor<8x2xf32>
  %b = nn.weight "fc.bias" : tensor<2xf32>
  %h = nn.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  %y = nn.add %h, %b : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
