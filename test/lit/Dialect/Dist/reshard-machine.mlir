// The planner weighs each mesh axis by its link in the machine profile. In
// one node (h100: NVLink on both axes) a 1 MiB partial sum over both axes
// is one all-reduce over the group of both axes; with the outer axis
// across InfiniBand the plan sends half as many bytes over it:
// reduce-scatter in the node, all-reduce the half across nodes, all-gather
// in the node (hand-computed times in
// test/unit/Dialect/ReshardPlannerTest.cpp, SlowAxisMovesFewerBytesOverIt).
// RUN: dist-opt %s -dist-partition -dist-reshard-to-collectives=machine=h100 | FileCheck %s --check-prefix=ONE-NODE
// RUN: dist-opt %s -dist-partition -dist-reshard-to-collectives=machine=%S/Inputs/two-nodes.json | FileCheck %s --check-prefix=TWO-NODES
// RUN: not dist-opt %s -dist-partition -dist-reshard-to-collectives=machine=%S/Inputs/no-such.json 2>&1 | FileCheck %s --check-prefix=MISSING

dist.mesh @mesh [node = 2, gpu = 2]

// ONE-NODE-LABEL: func.func @sum_everywhere
// ONE-NODE: dist.all_reduce %{{.*}} on @mesh axes ["node", "gpu"] sum {{.*}}: tensor<512x512xf32>
// ONE-NODE-NEXT: return

// TWO-NODES-LABEL: func.func @sum_everywhere
// TWO-NODES: dist.reduce_scatter %{{.*}} on @mesh axes ["gpu"] dim 0 sum {{.*}}: tensor<512x512xf32> -> tensor<256x512xf32>
// TWO-NODES-NEXT: dist.all_reduce %{{.*}} on @mesh axes ["node"] sum {{.*}}: tensor<256x512xf32>
// TWO-NODES-NEXT: dist.all_gather %{{.*}} on @mesh axes ["gpu"] dim 0 {{.*}}: tensor<256x512xf32> -> tensor<512x512xf32>
// TWO-NODES-NEXT: return

// MISSING: error: machine={{.*}}no-such.json: cannot read machine profile '{{.*}}no-such.json': No such file or directory (built-in profiles: cpu, h100, h200)
func.func @sum_everywhere(%x: tensor<512x512xf32> {dist.sharding = #dist.sharding<@mesh, [P(sum), P(sum)]>}) -> tensor<512x512xf32> {
  %0 = dist.reshard %x from <@mesh, [P(sum), P(sum)]> to <@mesh, [R, R]> : tensor<512x512xf32> -> tensor<512x512xf32>
  return %0 : tensor<512x512xf32>
}
