// RUN: mlir-opt %s --load-dialect-plugin=%plugin_dir/libDistoptPlugin.so --load-pass-plugin=%plugin_dir/libDistoptPlugin.so \
// RUN:   --pass-pipeline='builtin.module(dist-propagate-sharding,dist-insert-reshards,dist-partition,dist-reshard-to-collectives)' \
// RUN:   | FileCheck %s --check-prefix=SPMD
// RUN: mlir-opt %s --load-dialect-plugin=%plugin_dir/libDistoptPlugin.so --load-pass-plugin=%plugin_dir/libDistoptPlugin.so \
// RUN:   --pass-pipeline='builtin.module(dist-pipeline{rank=3})' | FileCheck %s --check-prefix=RANK3
// RUN: not mlir-opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// RUN: mlir-opt %S/Inputs/mlp-nn.mlir --load-dialect-plugin=%plugin_dir/libDistoptPlugin.so --load-pass-plugin=%plugin_dir/libDistoptPlugin.so \
// RUN:   --pass-pipeline='builtin.module(dist-pipeline{train=%S/../train/Inputs/mse-adamw.yaml mesh=dp=2 plan=zero1})' > %t.plugin.mlir
// RUN: dist-opt %S/Inputs/mlp-nn.mlir --pass-pipeline='builtin.module(dist-pipeline{train=%S/../train/Inputs/mse-adamw.yaml mesh=dp=2 plan=zero1})' > %t.dist-opt.mlir
// RUN: diff %t.plugin.mlir %t.dist-opt.mlir
// RUN: FileCheck %s --check-prefix=TRAIN < %t.plugin.mlir
// Upstream mlir-opt with distopt loaded as a plugin: the dist dialect, the
// external rules for linalg/tensor/arith ops and the sharding passes.

// The whole compile of a training step (the pipeline every distopt tool
// runs): the same IR from mlir-opt with the plugin as from dist-opt. AdamW
// with ZeRO-1 reduce-scatters the gradients and gathers the updated weights.
// TRAIN: func.func @main
// TRAIN-SAME: nn.name = "labels"
// TRAIN: dist.reduce_scatter {{.*}} on @mesh axes ["dp"]
// TRAIN: dist.all_gather %new_param on @mesh axes ["dp"]

// Without the plugin mlir-opt does not know the dist dialect.
// NOPLUGIN: error: Dialect `dist' not found for custom op 'dist.mesh'

// A Megatron MLP on linalg: column-split then row-split weights, one
// all-reduce. The hidden activations are 6 of 24 columns per device.
dist.mesh @mesh [tp = 4]
// SPMD-LABEL: func.func @mlp
// SPMD-SAME: tensor<16x6xf32> {dist.global_type = tensor<16x24xf32>, dist.sharding = #dist.sharding<@mesh, [S(1)]>}
// SPMD-SAME: tensor<6x16xf32> {dist.global_type = tensor<24x16xf32>, dist.sharding = #dist.sharding<@mesh, [S(0)]>}
// SPMD-NOT: dist.all_gather
// SPMD: %[[H:.*]] = linalg.matmul {{.*}}: tensor<4x16xf32>, tensor<16x6xf32>) outs(%{{.*}} : tensor<4x6xf32>) -> tensor<4x6xf32>
// SPMD: %[[R:.*]] = linalg.generic {{.*}}ins(%[[H]] : tensor<4x6xf32>) outs(%{{.*}} : tensor<4x6xf32>)
// SPMD: %[[Y:.*]] = linalg.matmul {{.*}}ins(%[[R]], %{{.*}} : tensor<4x6xf32>, tensor<6x16xf32>) outs(%{{.*}} : tensor<4x16xf32>) -> tensor<4x16xf32>
// SPMD: %[[S:.*]] = dist.all_reduce %[[Y]] on @mesh axes ["tp"] sum
// SPMD-NOT: dist.all_reduce
// SPMD: return %[[S]] : tensor<4x16xf32>

// The whole pipeline for rank 3 (with mlir-opt's cleanups).
// RANK3: module attributes {dist.rank = 3 : i64}
// RANK3-LABEL: func.func @mlp
// RANK3: linalg.matmul {{.*}}-> tensor<4x6xf32>
// RANK3: linalg.matmul {{.*}}-> tensor<4x16xf32>
// RANK3: dist.all_reduce %{{.*}} on @mesh axes ["tp"] sum
// RANK3-NOT: dist.all_reduce
func.func @mlp(%x: tensor<4x16xf32>, %w1: tensor<16x24xf32>, %w2: tensor<24x16xf32>) -> tensor<4x16xf32> {
  %w1a = dist.annotate %w1 to <@mesh, [S(1)]> : tensor<16x24xf32>
  %w2a = dist.annotate %w2 to <@mesh, [S(0)]> : tensor<24x16xf32>
  %z1 = arith.constant dense<0.0> : tensor<4x24xf32>
  %h = linalg.matmul ins(%x, %w1a : tensor<4x16xf32>, tensor<16x24xf32>) outs(%z1 : tensor<4x24xf32>) -> tensor<4x24xf32>
  %e = tensor.empty() : tensor<4x24xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<4x24xf32>) outs(%e : tensor<4x24xf32>) {
  ^bb0(%in: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x24xf32>
  %z2 = arith.constant dense<0.0> : tensor<4x16xf32>
  %y = linalg.matmul ins(%r, %w2a : tensor<4x24xf32>, tensor<24x16xf32>) outs(%z2 : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}
