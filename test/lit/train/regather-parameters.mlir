// RUN: dist-opt %s -split-input-file --dist-regather-parameters | FileCheck %s

// FSDP: a parameter stored split is gathered for forward and, instead of
// keeping that copy alive, gathered again before its first backward reader.
// CHECK-LABEL: func.func @fsdp
// CHECK: %[[W:.*]] = nn.weight "fc.weight"
// CHECK-NEXT: %[[G:.*]] = dist.reshard %[[W]] from <@mesh, [S(0)]> to <@mesh, [R]> reason "operand layout: nn.matmul"
// CHECK-NEXT: %[[Y:.*]] = nn.matmul %{{.*}}, %[[G]]
// CHECK-NEXT: %[[DY:.*]] = nn.relu %[[Y]]
// CHECK-NEXT: %[[G2:.*]] = dist.reshard %[[W]] from <@mesh, [S(0)]> to <@mesh, [R]> reason "operand layout: nn.matmul; gathered again for backward (the forward copy is freed after forward)"
// CHECK-NEXT: nn.transpose %[[G2]]
dist.mesh @mesh [dp = 2]
func.func @fsdp(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = nn.weight "fc.weight" {dist.sharding = [#dist.sharding<@mesh, [S(0)]>]} : tensor<8x2xf32>
  %g = dist.reshard %w from <@mesh, [S(0)]> to <@mesh, [R]> reason "operand layout: nn.matmul" : tensor<8x2xf32> -> tensor<8x2xf32>
  %y = nn.matmul %x, %g : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  %dy = nn.relu %y {nn.phase = "loss"} : tensor<4x2xf32>
  %gt = nn.transpose %g perm [1, 0] {nn.phase = "backward"} : tensor<8x2xf32> -> tensor<2x8xf32>
  %dx = nn.matmul %dy, %gt {nn.phase = "backward"} : tensor<4x2xf32>, tensor<2x8xf32> -> tensor<4x8xf32>
  return %dx : tensor<4x8xf32>
}

// -----

// With gradient accumulation forward and backward alternate per microbatch:
// each run of one phase reads its own gather.
// CHECK-LABEL: func.func @accumulate
// CHECK: %[[G:.*]] = dist.reshard %[[W:[^ ]*]] from
// CHECK-NEXT: nn.matmul %{{.*}}, %[[G]]
// CHECK-NEXT: %[[G2:.*]] = dist.reshard %[[W]] {{.*}}gathered again for backward
// CHECK-NEXT: nn.transpose %[[G2]] perm [1, 0] {nn.phase = "backward"}
// CHECK-NEXT: %[[G3:.*]] = dist.reshard %[[W]] {{.*}}gathered again for the next microbatch's forward
// CHECK-NEXT: nn.matmul %{{.*}}, %[[G3]]
// CHECK-NEXT: %[[G4:.*]] = dist.reshard %[[W]] {{.*}}gathered again for backward
// CHECK-NEXT: nn.transpose %[[G4]] perm [1, 0] {nn.phase = "backward"}
dist.mesh @mesh [dp = 2]
func.func @accumulate(%x: tensor<4x8xf32>, %x1: tensor<4x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %w = nn.weight "fc.weight" {dist.sharding = [#dist.sharding<@mesh, [S(0)]>]} : tensor<8x2xf32>
  %g = dist.reshard %w from <@mesh, [S(0)]> to <@mesh, [R]> reason "operand layout: nn.matmul" : tensor<8x2xf32> -> tensor<8x2xf32>
  %y = nn.matmul %x, %g : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  %t = nn.transpose %g perm [1, 0] {nn.phase = "backward"} : tensor<8x2xf32> -> tensor<2x8xf32>
  %y1 = nn.matmul %x1, %g : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  %t1 = nn.transpose %g perm [1, 0] {nn.phase = "backward"} : tensor<8x2xf32> -> tensor<2x8xf32>
  return %t, %t1 : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// A forward model: one reader phase, nothing to copy.
// CHECK-LABEL: func.func @forward
// CHECK-COUNT-1: dist.reshard
// CHECK-NOT: dist.reshard
dist.mesh @mesh [dp = 2]
func.func @forward(%x: tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %w = nn.weight "fc.weight" {dist.sharding = [#dist.sharding<@mesh, [S(0)]>]} : tensor<8x2xf32>
  %g = dist.reshard %w from <@mesh, [S(0)]> to <@mesh, [R]> reason "operand layout: nn.matmul" : tensor<8x2xf32> -> tensor<8x2xf32>
  %y = nn.matmul %x, %g : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  %y1 = nn.matmul %x, %g : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
  return %y, %y1 : tensor<4x2xf32>, tensor<4x2xf32>
}
