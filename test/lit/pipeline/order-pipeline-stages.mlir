// RUN: dist-opt %s -split-input-file -verify-diagnostics --dist-order-pipeline-stages | FileCheck %s

// Stage 1 received tag 1 before tag 0; stage 0 sends tag 0 first, so that
// receive moves first.
// CHECK-LABEL: module @stage1
// CHECK: %[[A:.*]] = dist.recv on @mesh axis "pp" from 0 tag 0
// CHECK-NEXT: %[[B:.*]] = dist.recv on @mesh axis "pp" from 0 tag 1
// CHECK-NEXT: %[[S:.*]] = nn.add %[[B]], %[[A]]
module {
  module @stage0 attributes {dist.pipeline_axis = "pp", dist.stage = 0 : i64} {
    dist.mesh @mesh [pp = 2]
    func.func @main(%x: tensor<4xf32>) {
      %a = nn.relu %x : tensor<4xf32>
      dist.send %a on @mesh axis "pp" to 1 tag 0 : tensor<4xf32>
      %b = nn.neg %x : tensor<4xf32>
      dist.send %b on @mesh axis "pp" to 1 tag 1 : tensor<4xf32>
      return
    }
  }
  module @stage1 attributes {dist.pipeline_axis = "pp", dist.stage = 1 : i64} {
    dist.mesh @mesh [pp = 2]
    func.func @main() -> tensor<4xf32> {
      %b = dist.recv on @mesh axis "pp" from 0 tag 1 : tensor<4xf32>
      %a = dist.recv on @mesh axis "pp" from 0 tag 0 : tensor<4xf32>
      %s = nn.add %b, %a : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      return %s : tensor<4xf32>
    }
  }
}

// -----

// The two sides disagree on a message's type.
module {
  module @stage0 attributes {dist.pipeline_axis = "pp", dist.stage = 0 : i64} {
    dist.mesh @mesh [pp = 2]
    func.func @main(%x: tensor<4xf32>) {
      // expected-error @+1 {{pipeline: stage 0 sends tag 0 ('tensor<4xf32>') to stage 1, which expects 'tensor<8xf32>' there}}
      dist.send %x on @mesh axis "pp" to 1 tag 0 : tensor<4xf32>
      return
    }
  }
  module @stage1 attributes {dist.pipeline_axis = "pp", dist.stage = 1 : i64} {
    dist.mesh @mesh [pp = 2]
    func.func @main() -> tensor<8xf32> {
      %a = dist.recv on @mesh axis "pp" from 0 tag 0 : tensor<8xf32>
      return %a : tensor<8xf32>
    }
  }
}

// -----

// A receive nobody sends.
module {
  module @stage0 attributes {dist.pipeline_axis = "pp", dist.stage = 0 : i64} {
    dist.mesh @mesh [pp = 2]
    func.func @main(%x: tensor<4xf32>) {
      return
    }
  }
  module @stage1 attributes {dist.pipeline_axis = "pp", dist.stage = 1 : i64} {
    dist.mesh @mesh [pp = 2]
    func.func @main() -> tensor<4xf32> {
      // expected-error @+1 {{pipeline: stage 1 receives tag 0 from stage 0, which never sends it}}
      %a = dist.recv on @mesh axis "pp" from 0 tag 0 : tensor<4xf32>
      return %a : tensor<4xf32>
    }
  }
}

// -----

// A training step whose stages each wait for the other before sending:
// they would deadlock.
module {
  module @stage0 attributes {dist.pipeline_axis = "pp", dist.stage = 0 : i64} {
    dist.mesh @mesh [pp = 2]
    func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32> {nn.updates = "w"}) {
      // expected-error @+1 {{pipeline: the stage programs deadlock: stage 0 waits here for a message from stage 1 (tag 1), which is itself waiting}}
      %g = dist.recv on @mesh axis "pp" from 1 tag 1 : tensor<4xf32>
      dist.send %x on @mesh axis "pp" to 1 tag 0 : tensor<4xf32>
      return %g : tensor<4xf32>
    }
  }
  module @stage1 attributes {dist.pipeline_axis = "pp", dist.stage = 1 : i64} {
    dist.mesh @mesh [pp = 2]
    func.func @main() -> (tensor<4xf32> {nn.updates = "v"}) {
      // expected-note @+1 {{stage 1 waits here for tag 0 from stage 0}}
      %a = dist.recv on @mesh axis "pp" from 0 tag 0 : tensor<4xf32>
      dist.send %a on @mesh axis "pp" to 0 tag 1 : tensor<4xf32>
      return %a : tensor<4xf32>
    }
  }
}

// -----

// expected-error @+1 {{dist-order-pipeline-stages: the module has no pipeline stages (dist-cut-pipeline-stages makes them)}}
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
