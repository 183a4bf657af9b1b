// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-plan{mesh=dp=2 plan=dp})' | FileCheck %s --check-prefix=DP
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-plan{mesh=dp=2,tp=2 plan=fsdp,tp})' | FileCheck %s --check-prefix=FSDP-TP
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-plan{mesh=tp=2 plan=%S/Inputs/mlp-megatron.yaml})' | FileCheck %s --check-prefix=FILE
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-plan{mesh=tp=2 plan=%S/Inputs/unmatched.yaml})' 2>&1 | FileCheck %s --check-prefix=WARN
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-apply-plan{mesh=tp=2 plan=%S/Inputs/unmatched.yaml strict=true})' 2>&1 | FileCheck %s --check-prefix=STRICT

// Mistakes in the options are diagnostics.
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-apply-plan{mesh=dp=2x plan=dp})' 2>&1 | FileCheck %s --check-prefix=BAD-MESH
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-apply-plan{mesh=dp=2,dp=2})' 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-apply-plan{mesh=dp=2 plan=nosuch})' 2>&1 | FileCheck %s --check-prefix=NO-PLAN
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-apply-plan{plan=dp})' 2>&1 | FileCheck %s --check-prefix=NO-MESH
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-apply-plan{mesh=dp=2}, dist-apply-plan{mesh=dp=4})' 2>&1 | FileCheck %s --check-prefix=OTHER-MESH

// dist-apply-plan declares the mesh and turns the plan into dist.annotate
// constraints with priorities and sources; propagation does the rest.

// DP: dist.mesh @mesh [dp = 2]
// DP-LABEL: func.func @main
// DP-SAME: (%[[X:.*]]: tensor<8x16xf32> {nn.name = "x"})
// DP-NEXT: %[[XS:.*]] = dist.annotate %[[X]] to <@mesh, [S(0)]> priority 1 source "data_parallel: batch"
// DP-NOT: dist.annotate
// DP: nn.matmul %[[XS]],

// fsdp splits the parameters too (the weakest priority); tp splits the first
// projection's columns.
// FSDP-TP: dist.mesh @mesh [dp = 2, tp = 2]
// FSDP-TP: dist.annotate %{{.*}} to <@mesh, [S(0), ?]> priority 1 source "data_parallel: batch"
// FSDP-TP: %[[W1:.*]] = nn.weight "fc1.weight"
// FSDP-TP: %[[W1S:.*]] = dist.annotate %[[W1]] to <@mesh, [S(0), ?]> priority 4 source "data_parallel level 3: sharded parameter"
// FSDP-TP: %[[W2:.*]] = nn.weight "fc2.weight"
// FSDP-TP: dist.annotate %[[W2]] to <@mesh, [S(1), ?]> priority 4 source "data_parallel level 3: sharded parameter"
// FSDP-TP: dist.annotate %[[W1S]] to <@mesh, [?, S(1)]> priority 2 source "preset tp: column-parallel"

// A plan file: its styles, with the file's patterns as sources.
// FILE: dist.mesh @mesh [tp = 2]
// FILE: dist.annotate %{{.*}} to <@mesh, [S(1)]> priority 1 source "fc1: colwise"
// FILE: dist.annotate %{{.*}} to <@mesh, [S(0)]> priority 1 source "fc2: rowwise"

// WARN: unmatched.yaml:4:5: warning: pattern 'fc3' matches nothing; closest names: fc1, fc2
// WARN: dist.mesh @mesh [tp = 2]
// STRICT: unmatched.yaml:4:5: error: pattern 'fc3' matches nothing

// BAD-MESH: error: bad mesh axis 'dp=2x' in the mesh option: expected name=size, e.g. mesh=dp=2,tp=4
// TWICE: error: mesh axis 'dp' appears twice in the mesh option
// NO-PLAN: error: --plan: unknown plan 'nosuch': not a file, and not a preset (replicate, dp, zero1, zero2, fsdp, tp, sp, cp, ep)
// NO-MESH: error: data parallelism needs a mesh
// OTHER-MESH: error: the model declares mesh @mesh which differs from mesh=dp=4

func.func @main(%x: tensor<8x16xf32> {nn.name = "x"}) -> (tensor<8x16xf32> {nn.name = "y"}) {
  %w1 = nn.weight "fc1.weight" : tensor<16x32xf32>
  %w2 = nn.weight "fc2.weight" : tensor<32x16xf32>
  %h = nn.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %g = nn.gelu %h : tensor<8x32xf32>
  %y = nn.matmul %g, %w2 : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
  return %y : tensor<8x16xf32>
}
