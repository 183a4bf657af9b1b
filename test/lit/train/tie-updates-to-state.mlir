// RUN: dist-opt %s -split-input-file --dist-tie-updates-to-state | FileCheck %s
// RUN: dist-opt %s -split-input-file --dist-tie-updates-to-state --dist-insert-reshards | FileCheck %s --check-prefix=RESHARD

// A ZeRO-1 step after propagation: the momentum is stored split over dp and
// the new weight is computed split, but the weight is stored replicated.
// Each update takes the sharding of what it updates.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32> {nn.name = "loss"},
// CHECK-SAME: tensor<8x2xf32> {dist.sharding = #dist.sharding<@mesh, [R]>, nn.name = "update:fc.weight", nn.updates = "fc.weight"},
// CHECK-SAME: tensor<8x2xf32> {dist.sharding = #dist.sharding<@mesh, [S(0)]>, nn.name = "update:fc.weight/momentum", nn.updates = "fc.weight/momentum"})

// The split new weight is gathered where it leaves the step; the momentum
// already has its stored layout.
// RESHARD-LABEL: func.func @main
// RESHARD: %[[NEXT:.*]] = nn.sub
// RESHARD-NEXT: %[[FULL:.*]] = dist.reshard %[[NEXT]] from <@mesh, [S(0)]> to <@mesh, [R]> reason "function result
// RESHARD-NEXT: return %{{.*}}, %[[FULL]], %{{.*}} :
dist.mesh @mesh [dp = 2]
func.func @main(%g: tensor<8x2xf32> {dist.sharding = #dist.sharding<@mesh, [S(0)]>}, %lr: tensor<f32> {dist.sharding = #dist.sharding<@mesh, [R]>})
    -> (tensor<f32> {nn.name = "loss"},
        tensor<8x2xf32> {nn.name = "update:fc.weight", nn.updates = "fc.weight"},
        tensor<8x2xf32> {nn.name = "update:fc.weight/momentum", nn.updates = "fc.weight/momentum"}) {
  %w = nn.weight "fc.weight" {dist.sharding = [#dist.sharding<@mesh, [R]>]} : tensor<8x2xf32>
  %m = nn.variable "fc.weight/momentum" {dist.sharding = [#dist.sharding<@mesh, [S(0)]>], nn.phase = "optimizer", nn.state_of = "fc.weight"} : tensor<8x2xf32>
  %m1 = nn.add %m, %g {dist.sharding = [#dist.sharding<@mesh, [S(0)]>], nn.phase = "optimizer"} : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
  %s = nn.mul %lr, %m1 {dist.sharding = [#dist.sharding<@mesh, [S(0)]>], nn.phase = "optimizer"} : tensor<f32>, tensor<8x2xf32> -> tensor<8x2xf32>
  %w1 = nn.sub %w, %s {dist.sharding = [#dist.sharding<@mesh, [S(0)]>], nn.phase = "optimizer"} : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
  return %lr, %w1, %m1 : tensor<f32>, tensor<8x2xf32>, tensor<8x2xf32>
}

// -----

// A forward model (no nn.updates results) is left as it is.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: -> (tensor<8x2xf32> {dist.sharding = #dist.sharding<@mesh, [S(0)]>})
// RESHARD-LABEL: func.func @forward
dist.mesh @mesh [dp = 2]
func.func @forward(%x: tensor<8x2xf32> {dist.sharding = #dist.sharding<@mesh, [S(0)]>}) -> (tensor<8x2xf32> {dist.sharding = #dist.sharding<@mesh, [S(0)]>}) {
  %w = nn.weight "fc.weight" {dist.sharding = [#dist.sharding<@mesh, [R]>]} : tensor<8x2xf32>
  %y = nn.add %x, %w {dist.sharding = [#dist.sharding<@mesh, [S(0)]>]} : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
  return %y : tensor<8x2xf32>
}
