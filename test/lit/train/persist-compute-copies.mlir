// RUN: dist-opt %s -split-input-file --dist-persist-compute-copies | FileCheck %s
// RUN: dist-opt %s -split-input-file --dist-persist-compute-copies --dist-insert-reshards | FileCheck %s --check-prefix=RESHARD

// A bf16 step after propagation (ZeRO-1/2 with split masters): forward
// reads the master's bf16 cast, split as the master is and gathered where
// the matmul reads it. The cast becomes a variable laid out as the cast
// was, and the step's new result is the updated master rounded, laid out
// as the variable. The LayerNorm-like f32 reader of the second weight keeps
// reading the master, and the weight that does not train keeps its cast.
// CHECK-LABEL: func.func @main
// CHECK-SAME: tensor<2x8xf32> {dist.sharding = #dist.sharding<@mesh, [S(0)]>, nn.name = "update:fc.weight", nn.updates = "fc.weight"}
// CHECK-SAME: tensor<2x8xbf16> {dist.sharding = #dist.sharding<@mesh, [S(0)]>, nn.name = "update:fc.weight/compute_copy", nn.updates = "fc.weight/compute_copy"}
// CHECK-SAME: tensor<2xbf16> {nn.name = "update:ln.weight/compute_copy", nn.updates = "ln.weight/compute_copy"})
// CHECK: %[[W:.*]] = nn.weight "fc.weight"
// CHECK-NEXT: %[[COPY:.*]] = nn.variable "fc.weight/compute_copy" {dist.gathered_once, dist.sharding = [#dist.sharding<@mesh, [S(0)]>], nn.copy_of = "fc.weight"} : tensor<2x8xbf16>
// CHECK: %[[LN:.*]] = nn.weight "ln.weight"
// CHECK-NEXT: %[[LNCOPY:.*]] = nn.variable "ln.weight/compute_copy" {nn.copy_of = "ln.weight"} : tensor<2xbf16>
// CHECK: %[[FROZEN:.*]] = nn.weight "frozen"
// CHECK-NEXT: nn.cast %[[FROZEN]]
// CHECK: dist.annotate %[[COPY]]
// CHECK: nn.mul %[[LN]], %[[LN]]
// CHECK: nn.add %{{.*}}, %[[LNCOPY]]
// CHECK: %[[NEXT:.*]] = nn.sub %[[W]]
// CHECK: %[[ROUNDED:.*]] = nn.cast %[[NEXT]] {dist.sharding = [#dist.sharding<@mesh, [S(0)]>], nn.phase = "optimizer"} : tensor<2x8xf32> -> tensor<2x8xbf16>
// CHECK: %[[LNROUNDED:.*]] = nn.cast %{{.*}} {nn.phase = "optimizer"} : tensor<2xf32> -> tensor<2xbf16>
// CHECK: return %{{.*}}, %[[NEXT]], %{{.*}}, %[[ROUNDED]], %[[LNROUNDED]] :

// The new copy needs no move: it is made where the variable lives.
// RESHARD-LABEL: func.func @main
// RESHARD: %[[ROUNDED:.*]] = nn.cast
// RESHARD-NOT: dist.reshard %[[ROUNDED]]
// RESHARD: return
dist.mesh @mesh [dp = 2]
func.func @main(%x: tensor<4x2xf32> {dist.sharding = #dist.sharding<@mesh, [R]>}, %g: tensor<2x8xf32> {dist.sharding = #dist.sharding<@mesh, [S(0)]>})
    -> (tensor<4x8xbf16> {nn.name = "loss"},
        tensor<2x8xf32> {dist.sharding = #dist.sharding<@mesh, [S(0)]>, nn.name = "update:fc.weight", nn.updates = "fc.weight"},
        tensor<2xf32> {nn.name = "update:ln.weight", nn.updates = "ln.weight"}) {
  %w = nn.weight "fc.weight" {dist.sharding = [#dist.sharding<@mesh, [S(0)]>]} : tensor<2x8xf32>
  %c = nn.cast %w {dist.gathered_once, dist.sharding = [#dist.sharding<@mesh, [S(0)]>]} : tensor<2x8xf32> -> tensor<2x8xbf16>
  %ln = nn.weight "ln.weight" : tensor<2xf32>
  %lnc = nn.cast %ln : tensor<2xf32> -> tensor<2xbf16>
  %fz = nn.weight "frozen" : tensor<2xf32>
  %fzc = nn.cast %fz : tensor<2xf32> -> tensor<2xbf16>
  %whole = dist.annotate %c to <@mesh, [R]> : tensor<2x8xbf16>
  %xc = nn.cast %x {dist.sharding = [#dist.sharding<@mesh, [R]>]} : tensor<4x2xf32> -> tensor<4x2xbf16>
  %sq = nn.mul %ln, %ln : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %xa = nn.add %xc, %lnc : tensor<4x2xbf16>, tensor<2xbf16> -> tensor<4x2xbf16>
  %xb = nn.add %xa, %fzc : tensor<4x2xbf16>, tensor<2xbf16> -> tensor<4x2xbf16>
  %y = nn.matmul %xb, %whole : tensor<4x2xbf16>, tensor<2x8xbf16> -> tensor<4x8xbf16>
  %w1 = nn.sub %w, %g {dist.sharding = [#dist.sharding<@mesh, [S(0)]>], nn.phase = "optimizer"} : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %ln1 = nn.sub %ln, %sq {nn.phase = "optimizer"} : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %y, %w1, %ln1 : tensor<4x8xbf16>, tensor<2x8xf32>, tensor<2xf32>
}

// -----

// An f32 step (no narrowing cast of a parameter) is left as it is.
// CHECK-LABEL: func.func @f32
// CHECK-NOT: nn.variable
// CHECK: return
func.func @f32(%g: tensor<2x8xf32>) -> (tensor<2x8xf32> {nn.name = "update:fc.weight", nn.updates = "fc.weight"}) {
  %w = nn.weight "fc.weight" : tensor<2x8xf32>
  %w1 = nn.sub %w, %g {nn.phase = "optimizer"} : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  return %w1 : tensor<2x8xf32>
}
