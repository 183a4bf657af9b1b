// Resize and GridSample on a batch of two images, for the split runs of
// test/lit/import/image-ops.test.
func.func @main(%x: tensor<2x2x4x4xf32> {nn.name = "X"},
                %g: tensor<2x3x5x2xf32> {nn.name = "Grid"})
    -> (tensor<2x2x8x6xf32>, tensor<2x2x3x5xf32>) {
  %r = nn.resize %x {mode = "cubic", scales = array<f64: 1.0, 1.0, 2.0, 1.5>, sizes = array<i64: 2, 2, 8, 6>} : tensor<2x2x4x4xf32> -> tensor<2x2x8x6xf32>
  %s = nn.grid_sample %x, %g {padding_mode = "border"} : (tensor<2x2x4x4xf32>, tensor<2x3x5x2xf32>) -> tensor<2x2x3x5xf32>
  return %r, %s : tensor<2x2x8x6xf32>, tensor<2x2x3x5xf32>
}
