// RUN: dist-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{duplicate axis name: tp}}
dist.mesh @mesh [tp = 2, tp = 4]

// -----

// expected-error @+1 {{axis 'tp' has size 0; sizes must be positive}}
dist.mesh @mesh [dp = 2, tp = 0]

// -----

// expected-error @+1 {{needs at least one axis}}
dist.mesh @mesh []

// -----

dist.mesh @mesh [dp = 2, tp = 4]
func.func @placements_count(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{has 1 placements but mesh @mesh has 2 axes (dp, tp)}}
  %0 = dist.annotate %x to <@mesh, [S(0)]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh [dp = 2, tp = 4]
func.func @shard_dim_out_of_range(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{shards dimension 2 on mesh axis 'tp', but the tensor has rank 2}}
  %0 = dist.annotate %x to <@mesh, [R, S(2)]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @unknown_placement(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown placement 'X'; expected S(dim), R, P(reduction) or ?}}
  %0 = dist.annotate %x to <@mesh, [X]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @unknown_reduction(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{unknown reduction 'mul'; expected sum, max, min or avg}}
  %0 = dist.annotate %x to <@mesh, [P(mul)]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @negative_dim(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{shard dimension must be non-negative, got -1}}
  %0 = dist.annotate %x to <@mesh, [S(-1)]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @unknown_mesh(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{refers to unknown mesh @nowhere}}
  %0 = dist.annotate %x to <@nowhere, [R]> : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @negative_priority(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{priority must be non-negative, got -3}}
  %0 = dist.annotate %x to <@mesh, [R]> priority -3 : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @reshard_element_type(%x: tensor<8xf32>) -> tensor<8xf16> {
  // expected-error @+1 {{changes the element type from 'f32' to 'f16'}}
  %0 = dist.reshard %x from <@mesh, [R]> to <@mesh, [S(0)]> : tensor<8xf32> -> tensor<8xf16>
  return %0 : tensor<8xf16>
}

// -----

dist.mesh @a [tp = 4]
dist.mesh @b [tp = 4]
func.func @reshard_meshes(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{moves between meshes @a and @b; resharding works within one mesh}}
  %0 = dist.reshard %x from <@a, [R]> to <@b, [S(0)]> : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @unknown_axis(%x: tensor<8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{mesh @mesh has no axis 'dp'}}
  %0 = dist.all_gather %x on @mesh axes ["dp"] dim 0 : tensor<8xf32> -> tensor<32xf32>
  return %0 : tensor<32xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @axis_twice(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{axis 'tp' is listed twice}}
  %0 = dist.all_reduce %x on @mesh axes ["tp", "tp"] sum : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @gather_extent(%x: tensor<8xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{gathers 4 pieces of extent 8 along dimension 0 but the result has extent 16}}
  %0 = dist.all_gather %x on @mesh axes ["tp"] dim 0 : tensor<8xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @gather_other_dim(%x: tensor<8x2xf32>) -> tensor<32x4xf32> {
  // expected-error @+1 {{changes dimension 1 from 2 to 4; only dimension 0 may change}}
  %0 = dist.all_gather %x on @mesh axes ["tp"] dim 0 : tensor<8x2xf32> -> tensor<32x4xf32>
  return %0 : tensor<32x4xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @gather_dim_range(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{gather dimension 1 is out of range for a tensor of rank 1}}
  %0 = dist.all_gather %x on @mesh axes ["tp"] dim 1 : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @gather_sizes_count(%x: tensor<3xf32>) -> tensor<10xf32> {
  // expected-error @+1 {{sizes lists 3 extents but the group has 4 members}}
  %0 = dist.all_gather %x on @mesh axes ["tp"] dim 0 sizes [3, 3, 4] : tensor<3xf32> -> tensor<10xf32>
  return %0 : tensor<10xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @gather_sizes_sum(%x: tensor<3xf32>) -> tensor<11xf32> {
  // expected-error @+1 {{gathers pieces of total extent 10 into a result of extent 11 along dimension 0}}
  %0 = dist.all_gather %x on @mesh axes ["tp"] dim 0 sizes [3, 3, 2, 2] : tensor<3xf32> -> tensor<11xf32>
  return %0 : tensor<11xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @scatter_extent(%x: tensor<16xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{scatters extent 16 along dimension 0 over 4 members but the result has extent 8}}
  %0 = dist.reduce_scatter %x on @mesh axes ["tp"] dim 0 sum : tensor<16xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @all_to_all_same_dim(%x: tensor<16x4xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{splits and concatenates the same dimension 0; that is a no-op}}
  %0 = dist.all_to_all %x on @mesh axes ["tp"] split 0 concat 0 : tensor<16x4xf32> -> tensor<16x4xf32>
  return %0 : tensor<16x4xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @all_to_all_shape(%x: tensor<16x4xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{with 4 members must divide dimension 0 by 4 and multiply dimension 1 by 4}}
  %0 = dist.all_to_all %x on @mesh axes ["tp"] split 0 concat 1 : tensor<16x4xf32> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @local_slice_extent(%x: tensor<16xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{keeps a piece of extent 8 of 16, which is not 1/4}}
  %0 = dist.local_slice %x on @mesh axes ["tp"] dim 0 : tensor<16xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @permute_odd(%x: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{pairs must list (source, target) positions, got an odd count 3}}
  %0 = dist.collective_permute %x on @mesh axes ["tp"] pairs [0, 1, 2] : tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @permute_range(%x: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{pair (0, 4) is outside a group of 4 members}}
  %0 = dist.collective_permute %x on @mesh axes ["tp"] pairs [0, 4] : tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

dist.mesh @mesh [tp = 4]
func.func @permute_twice(%x: tensor<16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{position 1 receives twice}}
  %0 = dist.collective_permute %x on @mesh axes ["tp"] pairs [0, 1, 2, 1] : tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

dist.mesh @mesh [pp = 2]
func.func @send_peer(%x: tensor<16xf32>) {
  // expected-error @+1 {{peer 2 is outside axis 'pp' of size 2}}
  dist.send %x on @mesh axis "pp" to 2 tag 0 : tensor<16xf32>
  return
}

// -----

dist.mesh @mesh [pp = 2]
func.func @recv_dynamic() -> tensor<?xf32> {
  // expected-error @+1 {{needs a static shape to receive into}}
  %0 = dist.recv on @mesh axis "pp" from 0 tag 0 : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

dist.mesh @mesh [tp = 2]
func.func @sharding_attr_count(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'dist.sharding' has 2 entries but the op has 1 results}}
  %0 = nn.relu %x {dist.sharding = [#dist.sharding<@mesh, [R]>, #dist.sharding<@mesh, [R]>]} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh [tp = 2]
func.func @sharding_attr_rank(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{shards dimension 1 on mesh axis 'tp', but the tensor has rank 1}}
  %0 = nn.relu %x {dist.sharding = [#dist.sharding<@mesh, [S(1)]>]} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

dist.mesh @mesh [dp = 2, tp = 4]
func.func @piece_sizes_count(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{S(1, sizes=[8, 8]) gives 2 piece sizes but mesh axis 'tp' has 4 devices}}
  %0 = dist.annotate %x to <@mesh, [R, S(1, sizes=[8, 8])]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh [dp = 2, tp = 4]
func.func @piece_sizes_sum(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{S(1, sizes=[6, 2, 4, 2]): the piece sizes add up to 14 but dimension 1 has 16}}
  %0 = dist.annotate %x to <@mesh, [R, S(1, sizes=[6, 2, 4, 2])]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh [dp = 2, tp = 4]
func.func @piece_sizes_negative(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{piece sizes of S(1, sizes=[-2, 2]) must be non-negative, one per device}}
  %0 = dist.annotate %x to <@mesh, [S(1, sizes=[-2, 2]), R]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}

// -----

dist.mesh @mesh [dp = 2, tp = 4]
func.func @piece_sizes_with_another_axis(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{dimension 1 has explicit piece sizes on one mesh axis and is split by another too}}
  %0 = dist.annotate %x to <@mesh, [S(1), S(1, sizes=[2, 2, 2, 2])]> : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
