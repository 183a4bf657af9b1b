// RUN: dist-opt %s -split-input-file -verify-diagnostics

func.func @no_broadcast(%a: tensor<4x8xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes 4x8 and 3 do not broadcast}}
  %0 = nn.add %a, %b : tensor<4x8xf32>, tensor<3xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @element_types(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operands have different element types 'f32' and 'i64'}}
  %0 = nn.mul %a, %b : tensor<4xf32>, tensor<4xi64> -> tensor<4xf32>
  return
}

// -----

func.func @where_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{condition must be a tensor of i1}}
  %0 = nn.where %c, %a, %a : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return
}

// -----

func.func @wrong_result_type(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<8x4xf32>'}}
  %0 = nn.add %a, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x4xf32>
  return
}

// -----

func.func @reduce_axis_range(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = nn.reduce_sum %a axes [2] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @reduce_axes_order(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{axes must be sorted and unique}}
  %0 = nn.reduce_sum %a axes [1, 0] : tensor<4x8xf32> -> tensor<f32>
  return
}

// -----

func.func @softmax_axis(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = nn.softmax %a axis 2 : tensor<4x8xf32>
  return
}

// -----

func.func @transpose_perm(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{perm must be a permutation of 0..1}}
  %0 = nn.transpose %a perm [1, 1] : tensor<4x8xf32> -> tensor<8x8xf32>
  return
}

// -----

func.func @reshape_count(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{cannot reshape 32 elements into 'tensor<5x6xf32>'}}
  %0 = nn.reshape %a : tensor<4x8xf32> -> tensor<5x6xf32>
  return
}

// -----

func.func @expand(%a: tensor<3x8xf32>) {
  // expected-error @+1 {{cannot broadcast 'tensor<3x8xf32>' to 'tensor<4x8xf32>'}}
  %0 = nn.expand %a : tensor<3x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @concat_extent(%a: tensor<4x8xf32>, %b: tensor<4x7xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{input 1 has extent 7 in dimension 1, expected 8}}
  %0 = nn.concat %a, %b axis 0 : (tensor<4x8xf32>, tensor<4x7xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @slice_step(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{step of dimension 1 is zero}}
  %0 = nn.slice %a starts [0, 0] ends [4, 8] steps [1, 0] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @slice_end(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{end 9 of dimension 1 is past extent 8}}
  %0 = nn.slice %a starts [0, 0] ends [4, 9] steps [1, 1] : tensor<4x8xf32> -> tensor<4x9xf32>
  return
}

// -----

func.func @slice_arity(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{starts, ends and steps need one entry per dimension (2)}}
  %0 = nn.slice %a starts [0] ends [4] steps [1] : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @gather_axis(%a: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = nn.gather %a, %i axis 2 : tensor<4x8xf32>, tensor<2xi64> -> tensor<4x8xf32>
  return
}

// -----

func.func @gather_indices(%a: tensor<4x8xf32>, %i: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{indices must be i32 or i64, got 'f32'}}
  %0 = nn.gather %a, %i axis 0 : tensor<4x8xf32>, tensor<2xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @pad_mode(%a: tensor<4xf32>) {
  // expected-error @+1 {{mode must be constant, reflect or edge, got wrap}}
  %0 = nn.pad %a pads [1, 1] {mode = "wrap"} : tensor<4xf32> -> tensor<6xf32>
  return
}

// -----

func.func @pad_count(%a: tensor<4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{pads needs two entries per dimension}}
  %0 = nn.pad %a pads [1] : tensor<4xf32> -> tensor<5xf32>
  return
}

// -----

func.func @layer_norm_scale(%a: tensor<2x8xf32>, %g: tensor<7xf32>) {
  // expected-error @+1 {{scale of type 'tensor<7xf32>' does not broadcast to the normalised dimensions}}
  %0 = nn.layer_norm %a, %g axis 1 epsilon 1.0e-05 : (tensor<2x8xf32>, tensor<7xf32>) -> tensor<2x8xf32>
  return
}

// -----

func.func @batch_norm_params(%x: tensor<1x4x2x2xf32>, %p: tensor<3xf32>) {
  // expected-error @+1 {{per-channel parameters must have shape [4], got 'tensor<3xf32>'}}
  %0 = nn.batch_norm %x, %p, %p, %p, %p epsilon 1.0e-05 : (tensor<1x4x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x4x2x2xf32>
  return
}

// -----

func.func @matmul_inner(%a: tensor<4x8xf32>, %b: tensor<7x2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{cannot multiply 'tensor<4x8xf32>' by 'tensor<7x2xf32>': inner or batch dimensions do not match}}
  %0 = nn.matmul %a, %b : tensor<4x8xf32>, tensor<7x2xf32> -> tensor<4x2xf32>
  return
}

// -----

func.func @conv_channels(%x: tensor<1x4x8x8xf32>, %w: tensor<8x3x3x3xf32>) {
  // expected-error @+1 {{input has 4 channels but weight expects 3 x group 1}}
  %0 = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x6x6xf32>
  return
}

// -----

func.func @cast_shape(%a: tensor<4xf32>) {
  // expected-error @+1 {{changes the shape from 'tensor<4xf32>' to 'tensor<5xi64>'}}
  %0 = nn.cast %a : tensor<4xf32> -> tensor<5xi64>
  return
}

// -----

func.func @gelu_mode(%a: tensor<4xf32>) {
  // expected-error @+1 {{approximate must be "none" or "tanh", got "fast"}}
  %0 = nn.gelu %a {approximate = "fast"} : tensor<4xf32>
  return
}

// -----

func.func @weight_shape() {
  // expected-error @+1 {{weight 'w' needs a static shape}}
  %0 = nn.weight "w" : tensor<?x4xf32>
  return
}

// -----

func.func @weight_offset() {
  // expected-error @+1 {{weight 'w' has a negative offset -8}}
  %0 = nn.weight "w" file "m.onnx" offset -8 : tensor<4xf32>
  return
}

// -----

func.func @range_scalars(%a: tensor<2xi64>) {
  // expected-error @+1 {{start, limit and delta must be scalars}}
  %0 = nn.range %a, %a, %a : (tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  return
}

// -----

func.func @scatter_add_updates_shape(%z: tensor<10x16xf32>, %ids: tensor<2x3xi64>, %rows: tensor<2x16xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{updates must be 'tensor<2x3x16xf32>' (what gather would produce)}}
  %1 = nn.scatter_add %z, %ids, %rows axis 0 : (tensor<10x16xf32>, tensor<2x3xi64>, tensor<2x16xf32>) -> tensor<10x16xf32>
  return
}

// -----

func.func @conv_grad_channels(%dy: tensor<1x8x5x5xf32>, %w: tensor<8x2x3x3xf32>) {
  // expected-error @+1 {{do not belong to one convolution with group 1}}
  %2 = nn.conv_grad_input %dy, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x8x5x5xf32>, tensor<8x2x3x3xf32>) -> tensor<1x4x9x9xf32>
  return
}

// -----

func.func @adam_update_state_shape(%p: tensor<4x3xf32>, %m: tensor<3x4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{operand 2 is 'tensor<3x4xf32>'; the parameter, its gradient and its states must all be 'tensor<4x3xf32>'}}
  %p1, %m1, %v1 = nn.adam_update %p, %p, %m, %p, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>)
  return
}

// -----

func.func @adam_update_copy_type(%p: tensor<4x3xf32>, %s: tensor<f32>) {
  // The fourth result, a compute copy, is the parameter's shape in bf16 or f16.
  // expected-error @+1 {{the compute copy result is 'tensor<3x4xbf16>'; it must be the f32 parameter's shape in bf16 or f16}}
  %p1, %m1, %v1, %c = nn.adam_update %p, %p, %p, %p, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xbf16>)
  return
}

// -----

func.func @adam_update_narrow_state(%p: tensor<4x3xf32>, %b: tensor<4x3xbf16>, %s: tensor<f32>) {
  // A bf16 gradient of an f32 parameter is allowed; a bf16 state is not.
  // expected-error @+1 {{operand 2 is 'tensor<4x3xbf16>'; the parameter, its gradient and its states must all be 'tensor<4x3xf32>' (the gradient may also be bf16 or f16)}}
  %p1, %m1, %v1 = nn.adam_update %p, %b, %b, %p, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<4x3xf32>, tensor<4x3xbf16>, tensor<4x3xbf16>, tensor<4x3xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>)
  return
}

// -----

func.func @sgd_update_narrow_gradient_of_f64(%p: tensor<4x3xf64>, %b: tensor<4x3xbf16>, %s: tensor<f64>) {
  // expected-error @+1 {{operand 1 is 'tensor<4x3xbf16>'; the parameter, its gradient and its states must all be 'tensor<4x3xf64>'}}
  %p1, %b1 = nn.sgd_update %p, %b, %p, %s, %s {momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<4x3xf64>, tensor<4x3xbf16>, tensor<4x3xf64>, tensor<f64>, tensor<f64>) -> (tensor<4x3xf64>, tensor<4x3xf64>)
  return
}

// -----

func.func @sum_squares_narrowed(%g: tensor<4x3xf32>) {
  // expected-error @+1 {{sums a float x into a result of its type, or a bf16 or f16 x into an f32 result, got 'f32' -> 'bf16'}}
  %s = nn.fused_sum_squares %g : tensor<4x3xf32> -> tensor<bf16>
  return
}

// -----

func.func @sgd_update_scalar(%p: tensor<4x3xf32>, %lr: tensor<1xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{operand 4 is 'tensor<1xf32>', expected 'tensor<f32>'}}
  %p1, %b1 = nn.sgd_update %p, %p, %p, %s, %lr {momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>, tensor<1xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>)
  return
}

// -----

func.func @sgd_update_int(%p: tensor<4xi32>, %s: tensor<i32>) {
  // expected-error @+1 {{updates float parameters, not 'tensor<4xi32>'}}
  %p1, %b1 = nn.sgd_update %p, %p, %p, %s, %s {momentum = 0.9 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<i32>, tensor<i32>) -> (tensor<4xi32>, tensor<4xi32>)
  return
}

// -----

func.func @loop_count(%x: tensor<2xf32>) {
  // expected-error @+1 {{needs 1 or more microbatches, got 0}}
  %s = nn.microbatch_loop (%mb) count 0 : tensor<2xf32> {
    nn.microbatch_yield %x : tensor<2xf32>
  }
  return
}

// -----

func.func @loop_yield_types(%x: tensor<2xf32>) {
  // expected-error @+1 {{yields 1 value(s) of types 'tensor<2xf32>' for results of types 'tensor<3xf32>'}}
  %s = nn.microbatch_loop (%mb) count 2 : tensor<3xf32> {
    nn.microbatch_yield %x : tensor<2xf32>
  }
  return
}

// -----

func.func @select_count(%x0: tensor<2xf32>, %x1: tensor<2xf32>) {
  %s = nn.microbatch_loop (%mb) count 3 : tensor<2xf32> {
    // expected-error @+1 {{has 2 candidate(s) for 3 microbatches}}
    %x = nn.microbatch_select %mb, %x0, %x1 : tensor<2xf32>
    nn.microbatch_yield %x : tensor<2xf32>
  }
  return
}

// -----

func.func @select_outside(%i: tensor<i64>, %x0: tensor<2xf32>) {
  // expected-error @+1 {{must read the index of the nn.microbatch_loop it is in}}
  %x = nn.microbatch_select %i, %x0 : tensor<2xf32>
  return
}

// -----

func.func @gather_elements_rank(%a: tensor<4x8xf32>, %i: tensor<2xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{indices have rank 1, expected the rank of data (2)}}
  %0 = nn.gather_elements %a, %i axis 0 : tensor<4x8xf32>, tensor<2xi64> -> tensor<2xf32>
  return
}

// -----

func.func @gather_elements_extent(%a: tensor<4x8xf32>, %i: tensor<2x9xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{indices extent 9 in dimension 1 exceeds data's (8)}}
  %0 = nn.gather_elements %a, %i axis 0 : tensor<4x8xf32>, tensor<2x9xi64> -> tensor<2x9xf32>
  return
}

// -----

func.func @scatter_elements_updates(%a: tensor<4x8xf32>, %i: tensor<2x8xi64>, %u: tensor<2x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{updates must be 'tensor<2x8xf32>' (the indices' shape, data's element type), got 'tensor<2x4xf32>'}}
  %0 = nn.scatter_elements %a, %i, %u axis 0 : (tensor<4x8xf32>, tensor<2x8xi64>, tensor<2x4xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @scatter_elements_reduction(%a: tensor<4x8xf32>, %i: tensor<2x8xi64>, %u: tensor<2x8xf32>) {
  // expected-error @+1 {{reduction must be none, add, mul, max or min, got 'sub'}}
  %0 = nn.scatter_elements %a, %i, %u axis 0 reduction "sub" : (tensor<4x8xf32>, tensor<2x8xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @cumsum_axis(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = nn.cumsum %a axis 2 : tensor<4x8xf32>
  return
}

// -----

func.func @one_hot_values(%i: tensor<4xi64>, %v: tensor<3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{values must be [off, on] (2 elements), got 'tensor<3xf32>'}}
  %0 = nn.one_hot %i, %v depth 10 axis 1 : tensor<4xi64>, tensor<3xf32> -> tensor<4x10xf32>
  return
}

// -----

func.func @one_hot_depth(%i: tensor<4xi64>, %v: tensor<2xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{depth must be positive, got 0}}
  %0 = nn.one_hot %i, %v depth 0 axis 1 : tensor<4xi64>, tensor<2xf32> -> tensor<4x0xf32>
  return
}

// -----

func.func @einsum_no_arrow(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{equation 'ij' has no '->'}}
  %0 = nn.einsum "ij" %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @einsum_terms(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{equation 'ij,jk->ik' has 2 terms for 1 operands}}
  %0 = nn.einsum "ij,jk->ik" %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @einsum_rank(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{term 'ijk' of equation 'ijk->i' has 3 letters for operand 0 of rank 2}}
  %0 = nn.einsum "ijk->i" %a : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @einsum_extents(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{letter 'j' of equation 'ij,jk->ik' names extents 8 and 4}}
  %0 = nn.einsum "ij,jk->ik" %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @einsum_result_letter(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{equation 'ij->iz': result letter 'z' names no operand dimension}}
  %0 = nn.einsum "ij->iz" %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

func.func @einsum_repeated_result(%a: tensor<4x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{equation 'ij->ii': result letter 'i' is not a letter or repeats}}
  %0 = nn.einsum "ij->ii" %a : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @top_k_k(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{k 9 is not in [0, 8] (the extent of axis 1)}}
  %0 = nn.top_k %a k 9 axis 1 : tensor<4x8xf32> -> tensor<4x9xi64>
  return
}

// -----

func.func @resize_mode(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{mode must be nearest, linear or cubic, got area}}
  %0 = nn.resize %x {mode = "area", scales = array<f64: 1.0, 1.0, 2.0, 2.0>, sizes = array<i64: 1, 1, 8, 8>} : tensor<1x1x4x4xf32> -> tensor<1x1x8x8xf32>
  return
}

// -----

func.func @resize_scales(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{scales and sizes need one entry per dimension (4)}}
  %0 = nn.resize %x {scales = array<f64: 2.0, 2.0>, sizes = array<i64: 8, 8>} : tensor<1x1x4x4xf32> -> tensor<1x1x8x8xf32>
  return
}

// -----

func.func @resize_nonpositive(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{dimension 2: scale -2.000000e+00 and size 8 must be positive}}
  %0 = nn.resize %x {scales = array<f64: 1.0, 1.0, -2.0, 2.0>, sizes = array<i64: 1, 1, 8, 8>} : tensor<1x1x4x4xf32> -> tensor<1x1x8x8xf32>
  return
}

// -----

func.func @resize_crop_without_roi(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{tf_crop_and_resize needs roi with 8 entries}}
  %0 = nn.resize %x {coordinate_transformation_mode = "tf_crop_and_resize", scales = array<f64: 1.0, 1.0, 2.0, 2.0>, sizes = array<i64: 1, 1, 8, 8>} : tensor<1x1x4x4xf32> -> tensor<1x1x8x8xf32>
  return
}

// -----

func.func @resize_nearest_mode(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{unknown nearest_mode nearest}}
  %0 = nn.resize %x {nearest_mode = "nearest", scales = array<f64: 1.0, 1.0, 2.0, 2.0>, sizes = array<i64: 1, 1, 8, 8>} : tensor<1x1x4x4xf32> -> tensor<1x1x8x8xf32>
  return
}

// -----

func.func @grid_sample_mode(%x: tensor<1x1x4x4xf32>, %g: tensor<1x2x2x2xf32>) {
  // expected-error @+1 {{mode must be bilinear, nearest or bicubic, got area}}
  %0 = nn.grid_sample %x, %g {mode = "area"} : (tensor<1x1x4x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  return
}

// -----

func.func @grid_sample_grid(%x: tensor<1x1x4x4xf32>, %g: tensor<1x2x2x3xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{expects a floating-point input [N, C, H, W] and a grid [N, Ho, Wo, 2] of its type}}
  %0 = nn.grid_sample %x, %g : (tensor<1x1x4x4xf32>, tensor<1x2x2x3xf32>) -> tensor<1x1x2x2xf32>
  return
}

// -----

func.func @fused_matmul_transposed_lhs(%a: tensor<32x8xf32>, %b: tensor<2x32x4xf32>) {
  // expected-error @+1 {{reads its lhs transposed: both operands must be matrices, got 'tensor<32x8xf32>' and 'tensor<2x32x4xf32>'}}
  %0 = nn.fused_matmul %a transposed, %b : tensor<32x8xf32>, tensor<2x32x4xf32> -> tensor<2x8x4xf32>
  return
}

// -----

func.func @fused_matmul_transposed_rhs(%a: tensor<8x32xf32>, %b: tensor<2x4x32xf32>) {
  // expected-error @+1 {{reads its rhs transposed: it must be a matrix, got 'tensor<2x4x32xf32>'}}
  %0 = nn.fused_matmul %a, %b transposed : tensor<8x32xf32>, tensor<2x4x32xf32> -> tensor<2x8x4xf32>
  return
}

// -----

func.func @fused_softmax_grad_axis(%y: tensor<4x8xf32>, %dy: tensor<4x8xf32>) {
  // expected-error @+1 {{axis 2 is not a dimension of 'tensor<4x8xf32>'}}
  %0 = nn.fused_softmax_grad %y, %dy axis 2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_softmax_grad_types(%y: tensor<4x8xbf16>, %dy: tensor<4x8xf32>) {
  // expected-error @+1 {{computes in y's 'bf16': dy of 'f32' and a result of 'f32' must be of it, or bf16/f16 when it is f32}}
  %0 = nn.fused_softmax_grad %y, %dy axis 1 : tensor<4x8xbf16>, tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_softmax_types(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{reads its input into a result of its type, or a bf16 or f16 input into an f32 result, got 'tensor<4x8xf32>' -> 'tensor<4x8xbf16>'}}
  %0 = nn.fused_softmax %x axis 1 : tensor<4x8xf32> -> tensor<4x8xbf16>
  return
}

// -----

func.func @fused_softmax_mask_broadcast_inside(%x: tensor<4x3x8xf32>, %m: tensor<4x1x8xi1>) {
  // expected-error @+1 {{mask 'tensor<4x1x8xi1>' must be 'tensor<4x3x8xf32>''s trailing dims after leading 1s (broadcast over the rest)}}
  %0 = nn.fused_softmax %x mask %m axis 2 {fill = -1.0e4 : f64} : tensor<4x3x8xf32>, tensor<4x1x8xi1> -> tensor<4x3x8xf32>
  return
}

// -----

func.func @fused_softmax_mask_type(%x: tensor<4x8xf32>, %m: tensor<4x8xf32>) {
  // expected-error @+1 {{mask must be i1, got 'tensor<4x8xf32>'}}
  %0 = nn.fused_softmax %x mask %m axis 1 {fill = -1.0e4 : f64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_softmax_mask_no_fill(%x: tensor<4x8xf32>, %m: tensor<8xi1>) {
  // expected-error @+1 {{masks with no fill value}}
  %0 = nn.fused_softmax %x mask %m axis 1 : tensor<4x8xf32>, tensor<8xi1> -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_softmax_fill_no_mask(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{fills with no mask}}
  %0 = nn.fused_softmax %x axis 1 {fill = 0.0 : f64} : tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_softmax_grad_divide_no_scale(%y: tensor<4x8xf32>, %dy: tensor<4x8xf32>) {
  // expected-error @+1 {{divides by no scale}}
  %0 = nn.fused_softmax_grad %y, %dy axis 1 {divide} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_softmax_grad_keeps_no_mask(%y: tensor<4x8xf32>, %dy: tensor<4x8xf32>) {
  // expected-error @+1 {{mask_keeps without a mask}}
  %0 = nn.fused_softmax_grad %y, %dy axis 1 {mask_keeps, scale = 2.0 : f64} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @fused_cross_entropy_rows(%l: tensor<4x6xf32>, %m: tensor<4x6xf32>, %r: tensor<4x1xi64>) {
  // expected-error @+1 {{per-row values must be the logits' shape with the class dim 1, got 'tensor<4x6xf32>' for logits 'tensor<4x6xf32>'}}
  %s, %zl = nn.fused_cross_entropy_sums %l, %m, %r first_class 0 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x1xi64>
  return
}

// -----

func.func @fused_cross_entropy_labels(%l: tensor<4x6xf32>, %m: tensor<4x1xf32>, %r: tensor<4x1xf32>) {
  // expected-error @+1 {{labels must be integers of the per-row values' shape, got 'tensor<4x1xf32>'}}
  %s, %zl = nn.fused_cross_entropy_sums %l, %m, %r first_class 0 : tensor<4x6xf32>, tensor<4x1xf32>, tensor<4x1xf32>
  return
}

// -----

func.func @fused_cross_entropy_grad_types(%l: tensor<4x6xf64>, %m: tensor<4x1xf32>, %r: tensor<4x1xi64>) {
  // expected-error @+1 {{logits of 'f64' and a result of 'bf16' cannot be computed in 'f32'}}
  %g = nn.fused_cross_entropy_grad %l, %m, %m, %m, %r first_class 0 : tensor<4x6xf64>, tensor<4x1xf32>, tensor<4x1xi64> -> tensor<4x6xbf16>
  return
}

// -----

func.func @fused_matmul_shapes(%a: tensor<8x32xf32>, %b: tensor<64x32xf32>) {
  // expected-error @+1 {{cannot multiply 'tensor<8x32xf32>' by 'tensor<64x32xf32>': inner or batch dimensions do not match}}
  %0 = nn.fused_matmul %a, %b : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @fused_matmul_result(%a: tensor<8x32xf32>, %b: tensor<64x32xf32>) {
  // expected-error @+1 {{result 'tensor<8x32xf32>' is not the product's shape}}
  %0 = nn.fused_matmul %a, %b transposed : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x32xf32>
  return
}

// -----

func.func @fused_matmul_bias(%a: tensor<8x32xf32>, %b: tensor<64x32xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{bias must hold one 'f32' per column of the product (64), got 'tensor<8xf32>'}}
  %0 = nn.fused_matmul %a, %b transposed bias %c : tensor<8x32xf32>, tensor<64x32xf32>, tensor<8xf32> -> tensor<8x64xf32>
  return
}

// -----

func.func @fused_matmul_bias_vector(%a: tensor<8x32xf32>, %b: tensor<32xf32>, %c: tensor<8xf32>) {
  // expected-error @+1 {{a bias needs a matrix rhs, got 'tensor<32xf32>'}}
  %0 = nn.fused_matmul %a, %b bias %c : tensor<8x32xf32>, tensor<32xf32>, tensor<8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @fused_matmul_types(%a: tensor<8x32xf32>, %b: tensor<64x32xbf16>) {
  // expected-error @+1 {{operands and result must have one element type, got 'tensor<8x32xf32>', 'tensor<64x32xbf16>' -> 'tensor<8x64xf32>'}}
  %0 = nn.fused_matmul %a, %b transposed : tensor<8x32xf32>, tensor<64x32xbf16> -> tensor<8x64xf32>
  return
}
