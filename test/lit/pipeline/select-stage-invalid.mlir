// RUN: dist-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(dist-select-stage{rank=3})'

// Rank 3 of [pp = 2, tp = 2] runs stage 1, which this module does not hold.
// expected-error @+1 {{dist-select-stage: rank 3 runs stage 1, which the module lacks}}
module {
  module @stage0 attributes {dist.pipeline_axis = "pp", dist.stage = 0 : i64} {
    dist.mesh @mesh [pp = 2, tp = 2]
    func.func @main(%x: tensor<4xf32>) {
      return
    }
  }
}

// -----

// A stage module must say which mesh axis the stages run along.
module {
  // expected-error @+1 {{dist-select-stage: a pipeline stage without its mesh or dist.pipeline_axis}}
  module @stage0 attributes {dist.stage = 0 : i64} {
    dist.mesh @mesh [pp = 2, tp = 2]
    func.func @main(%x: tensor<4xf32>) {
      return
    }
  }
}
