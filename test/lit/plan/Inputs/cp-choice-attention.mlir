// Multi-head attention over [batch 1, SEQ positions, HEADS heads of 16]
// (HIDDEN = HEADS x 16), a template: the test fills in SEQ, HEADS and
// HIDDEN with sed. Q, K and V are the input itself, viewed by heads.
func.func @main(%x: tensor<1xSEQxHIDDENxf32>) -> tensor<1xSEQxHIDDENxf32> {
  %h = nn.reshape %x : tensor<1xSEQxHIDDENxf32> -> tensor<1xSEQxHEADSx16xf32>
  %q = nn.transpose %h perm [0, 2, 1, 3] : tensor<1xSEQxHEADSx16xf32> -> tensor<1xHEADSxSEQx16xf32>
  %kt = nn.transpose %h perm [0, 2, 3, 1] : tensor<1xSEQxHEADSx16xf32> -> tensor<1xHEADSx16xSEQxf32>
  %s = nn.matmul %q, %kt : tensor<1xHEADSxSEQx16xf32>, tensor<1xHEADSx16xSEQxf32> -> tensor<1xHEADSxSEQxSEQxf32>
  %p = nn.softmax %s axis 3 : tensor<1xHEADSxSEQxSEQxf32>
  %o = nn.matmul %p, %q : tensor<1xHEADSxSEQxSEQxf32>, tensor<1xHEADSxSEQx16xf32> -> tensor<1xHEADSxSEQx16xf32>
  %t = nn.transpose %o perm [0, 2, 1, 3] : tensor<1xHEADSxSEQx16xf32> -> tensor<1xSEQxHEADSx16xf32>
  %y = nn.reshape %t : tensor<1xSEQxHEADSx16xf32> -> tensor<1xSEQxHIDDENxf32>
  return %y : tensor<1xSEQxHIDDENxf32>
}
