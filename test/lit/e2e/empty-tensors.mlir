// Zero-size dimensions (an Unsqueeze of an empty tensor) partition and run:
// no sharding rule divides by an empty extent.
// RUN: dist-run %s --mesh tp=2 --plan tp --check 2>&1 | FileCheck %s
// RUN: dist-run %s --mesh dp=2 --plan dp --check 2>&1 | FileCheck %s
// CHECK: check passed: 1 output(s) on 2 rank(s)
func.func @main(%x: tensor<2x0xf32> {nn.name = "x"}) -> (tensor<2x1x0xf32> {nn.name = "y"}) {
  %y = nn.reshape %x : tensor<2x0xf32> -> tensor<2x1x0xf32>
  return %y : tensor<2x1x0xf32>
}
