// With links alike, a collective's latency decides whether the planner
// trades one plain all-reduce for more collectives that send fewer bytes.
// A 2 MiB partial sum over tp=4, replicated over dp=2 (times by hand):
//   all-reduce over tp:                   alpha + 2 * 3/4 * 2 MiB / beta
//   slice over dp, all-reduce the 1 MiB
//   half over tp, all-gather over dp:     2 alpha + (2 * 3/4 * 1 MiB + 1/2 * 2 MiB) / beta
// The second sends 0.5 MiB less for one more latency. So does its twin
// that reduce-scatters the half over tp and all-gathers over the group of
// both axes (3/4 * 1 MiB + 7/8 * 2 MiB): the same bytes and latencies; the
// planner takes that one.
// cpu (default; 10 us, 5 GB/s): 639.1 us against 544.3 us, so it splits.
// h100 (NVLink in the node: 5 us, 450 GB/s): 12.0 us against 15.8 us, so
// one all-reduce.
// RUN: dist-opt %s -dist-partition -dist-reshard-to-collectives | FileCheck %s --check-prefix=CPU
// RUN: dist-opt %s -dist-partition -dist-reshard-to-collectives=machine=cpu | FileCheck %s --check-prefix=CPU
// RUN: dist-opt %s -dist-partition -dist-reshard-to-collectives=machine=h100 | FileCheck %s --check-prefix=H100

dist.mesh @mesh [dp = 2, tp = 4]

// CPU-LABEL: func.func @sum_over_tp
// CPU: dist.local_slice %{{.*}} on @mesh axes ["dp"] dim 0 {{.*}}: tensor<1024x512xf32> -> tensor<512x512xf32>
// CPU-NEXT: dist.reduce_scatter %{{.*}} on @mesh axes ["tp"] dim 0 sum {{.*}}: tensor<512x512xf32> -> tensor<128x512xf32>
// CPU-NEXT: dist.all_gather %{{.*}} on @mesh axes ["dp", "tp"] dim 0 {{.*}}: tensor<128x512xf32> -> tensor<1024x512xf32>
// CPU-NEXT: return

// H100-LABEL: func.func @sum_over_tp
// H100: dist.all_reduce %{{.*}} on @mesh axes ["tp"] sum {{.*}}: tensor<1024x512xf32>
// H100-NEXT: return
func.func @sum_over_tp(%x: tensor<1024x512xf32> {dist.sharding = #dist.sharding<@mesh, [R, P(sum)]>}) -> tensor<1024x512xf32> {
  %0 = dist.reshard %x from <@mesh, [R, P(sum)]> to <@mesh, [R, R]> : tensor<1024x512xf32> -> tensor<1024x512xf32>
  return %0 : tensor<1024x512xf32>
}
