// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-select-stage{rank=3})' | FileCheck %s --check-prefix=RANK3
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-select-stage{rank=1})' | FileCheck %s --check-prefix=RANK1
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-select-stage{rank=3}, dist-partition{rank=3})' | FileCheck %s --check-prefix=PARTITION

// Mistakes are diagnostics.
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-select-stage{rank=4})' 2>&1 | FileCheck %s --check-prefix=OUTSIDE
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-select-stage)' 2>&1 | FileCheck %s --check-prefix=NO-RANK
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-select-stage{rank=0}, dist-select-stage{rank=0})' 2>&1 | FileCheck %s --check-prefix=NO-STAGES

// Rank 3 of [pp = 2, tp = 2] is pp = 1: stage 1's ops and attributes become
// the module's (not its name); stage 0 is dropped.
// RANK3: module attributes {dist.pipeline_axis = "pp", dist.stage = 1 : i64, nn.opset = 17 : i64} {
// RANK3-NEXT: dist.mesh @mesh [pp = 2, tp = 2]
// RANK3-NEXT: func.func @main() -> tensor<4x8xf32> {
// RANK3-NEXT: dist.recv on @mesh axis "pp" from 0 tag 0
// RANK3-NOT: module @stage
// RANK3-NOT: dist.send

// RANK1: module attributes {dist.pipeline_axis = "pp", dist.stage = 0 : i64, nn.opset = 17 : i64} {
// RANK1: dist.send

// Then dist-partition gives what rank 3 runs.
// PARTITION: module attributes {dist.pipeline_axis = "pp", dist.rank = 3 : i64, dist.stage = 1 : i64, nn.opset = 17 : i64} {
// PARTITION: dist.recv {{.*}}: tensor<4x4xf32>
// PARTITION: nn.relu {{.*}}: tensor<4x4xf32>

// OUTSIDE: error: dist-select-stage: rank 4 is outside mesh @mesh of 4 devices
// NO-RANK: error: dist-select-stage needs rank=<the rank whose stage to keep>
// NO-STAGES: error: dist-select-stage: the module has no pipeline stages (dist-cut-pipeline-stages makes them)

module attributes {nn.opset = 17 : i64} {
  module @stage0 attributes {dist.pipeline_axis = "pp", dist.stage = 0 : i64, nn.opset = 17 : i64} {
    dist.mesh @mesh [pp = 2, tp = 2]
    func.func @main(%x: tensor<4x8xf32>) {
      %a = nn.relu %x : tensor<4x8xf32>
      dist.send %a on @mesh axis "pp" to 1 tag 0 : tensor<4x8xf32>
      return
    }
  }
  module @stage1 attributes {dist.pipeline_axis = "pp", dist.stage = 1 : i64, nn.opset = 17 : i64} {
    dist.mesh @mesh [pp = 2, tp = 2]
    func.func @main() -> tensor<4x8xf32> {
      %a = dist.recv on @mesh axis "pp" from 0 tag 0 {dist.sharding = [#dist.sharding<@mesh, [R, S(1)]>]} : tensor<4x8xf32>
      %r = nn.relu %a {dist.sharding = [#dist.sharding<@mesh, [R, S(1)]>]} : tensor<4x8xf32>
      return %r : tensor<4x8xf32>
    }
  }
}
