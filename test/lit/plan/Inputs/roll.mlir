// Rolls of the batch rows (nn.gather with constant indices (i - s) mod 8):
// by 4 rows, whole pieces under dp=2 and dp=4; by 1 row, not.
func.func @main(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %by4 = nn.constant dense<[4, 5, 6, 7, 0, 1, 2, 3]> : tensor<8xi64>
  %a = nn.gather %x, %by4 axis 0 : tensor<8x4xf32>, tensor<8xi64> -> tensor<8x4xf32>
  %by1 = nn.constant dense<[7, 0, 1, 2, 3, 4, 5, 6]> : tensor<8xi64>
  %b = nn.gather %x, %by1 axis 0 : tensor<8x4xf32>, tensor<8xi64> -> tensor<8x4xf32>
  return %a, %b : tensor<8x4xf32>, tensor<8x4xf32>
}
