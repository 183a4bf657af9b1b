// RUN: dist-opt %s | FileCheck %s
// RUN: dist-opt %s | dist-opt | FileCheck %s
// Every nn op parses, verifies, infers its type and prints back.

// CHECK-LABEL: func.func @sources
func.func @sources() -> (tensor<4x8xf32>, tensor<2xi64>) {
  // CHECK: nn.weight "blocks.0.w" file "model.onnx" offset 128 : tensor<4x8xf32>
  %w = nn.weight "blocks.0.w" file "model.onnx" offset 128 : tensor<4x8xf32>
  // CHECK: nn.constant dense<[1, 2]> : tensor<2xi64>
  %c = nn.constant dense<[1, 2]> : tensor<2xi64>
  return %w, %c : tensor<4x8xf32>, tensor<2xi64>
}

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>) {
  // CHECK: nn.add %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %0 = nn.add %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: nn.sub {{.*}} -> tensor<4x8xf32>
  %1 = nn.sub %a, %c : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
  // CHECK: nn.mul
  %2 = nn.mul %c, %b : tensor<4x1xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: nn.div
  %3 = nn.div %a, %a : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  // CHECK: nn.pow
  %4 = nn.pow %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: nn.max
  %5 = nn.max %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: nn.min
  %6 = nn.min %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: nn.mod {{.*}}fmod = true
  %7 = nn.mod %a, %b {fmod = true} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: nn.equal {{.*}} -> tensor<4x8xi1>
  %8 = nn.equal %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: nn.less
  %9 = nn.less %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: nn.less_equal
  %10 = nn.less_equal %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: nn.greater
  %11 = nn.greater %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: nn.greater_equal
  %12 = nn.greater_equal %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: nn.and
  %13 = nn.and %8, %9 : tensor<4x8xi1>, tensor<4x8xi1> -> tensor<4x8xi1>
  // CHECK: nn.or
  %14 = nn.or %8, %9 : tensor<4x8xi1>, tensor<4x8xi1> -> tensor<4x8xi1>
  // CHECK: nn.xor
  %15 = nn.xor %8, %9 : tensor<4x8xi1>, tensor<4x8xi1> -> tensor<4x8xi1>
  // CHECK: nn.where {{.*}} : tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %16 = nn.where %8, %a, %b : tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: nn.neg
  %17 = nn.neg %a : tensor<4x8xf32>
  // CHECK: nn.abs
  %18 = nn.abs %a : tensor<4x8xf32>
  // CHECK: nn.exp
  %19 = nn.exp %a : tensor<4x8xf32>
  // CHECK: nn.log
  %20 = nn.log %a : tensor<4x8xf32>
  // CHECK: nn.sqrt
  %21 = nn.sqrt %a : tensor<4x8xf32>
  // CHECK: nn.reciprocal
  %22 = nn.reciprocal %a : tensor<4x8xf32>
  // CHECK: nn.tanh
  %23 = nn.tanh %a : tensor<4x8xf32>
  // CHECK: nn.sigmoid
  %24 = nn.sigmoid %a : tensor<4x8xf32>
  // CHECK: nn.erf
  %25 = nn.erf %a : tensor<4x8xf32>
  // CHECK: nn.relu
  %26 = nn.relu %a : tensor<4x8xf32>
  // CHECK: nn.not
  %27 = nn.not %8 : tensor<4x8xi1>
  // CHECK: nn.sin
  %28 = nn.sin %a : tensor<4x8xf32>
  // CHECK: nn.cos
  %29 = nn.cos %a : tensor<4x8xf32>
  // CHECK: nn.floor
  %30 = nn.floor %a : tensor<4x8xf32>
  // CHECK: nn.ceil
  %31 = nn.ceil %a : tensor<4x8xf32>
  // CHECK: nn.round
  %32 = nn.round %a : tensor<4x8xf32>
  // CHECK: nn.sign
  %33 = nn.sign %a : tensor<4x8xf32>
  // CHECK: nn.identity
  %34 = nn.identity %a : tensor<4x8xf32>
  // CHECK: nn.gelu %{{.*}} {approximate = "tanh"}
  %35 = nn.gelu %a {approximate = "tanh"} : tensor<4x8xf32>
  // CHECK: nn.leaky_relu %{{.*}} {alpha = 2.000000e-01 : f64}
  %36 = nn.leaky_relu %a {alpha = 0.2 : f64} : tensor<4x8xf32>
  // CHECK: nn.clip %{{.*}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64}
  %37 = nn.clip %a {min = 0.0 : f64, max = 6.0 : f64} : tensor<4x8xf32>
  // CHECK: nn.cast %{{.*}} : tensor<4x8xf32> -> tensor<4x8xi64>
  %38 = nn.cast %a : tensor<4x8xf32> -> tensor<4x8xi64>
  return
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%a: tensor<2x4x8xf32>, %g: tensor<8xf32>) {
  // CHECK: nn.reduce_sum %{{.*}} axes [1, 2] : tensor<2x4x8xf32> -> tensor<2xf32>
  %0 = nn.reduce_sum %a axes [1, 2] : tensor<2x4x8xf32> -> tensor<2xf32>
  // CHECK: nn.reduce_mean %{{.*}} axes [2] keepdims : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %1 = nn.reduce_mean %a axes [2] keepdims : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  // CHECK: nn.reduce_max
  %2 = nn.reduce_max %a axes [0] : tensor<2x4x8xf32> -> tensor<4x8xf32>
  // CHECK: nn.reduce_min
  %3 = nn.reduce_min %a axes [0] : tensor<2x4x8xf32> -> tensor<4x8xf32>
  // CHECK: nn.reduce_prod
  %4 = nn.reduce_prod %a axes [0] : tensor<2x4x8xf32> -> tensor<4x8xf32>
  // CHECK: nn.argmax %{{.*}} axis 2 : tensor<2x4x8xf32> -> tensor<2x4xi64>
  %5 = nn.argmax %a axis 2 : tensor<2x4x8xf32> -> tensor<2x4xi64>
  // CHECK: nn.argmin %{{.*}} axis 2 keepdims : tensor<2x4x8xf32> -> tensor<2x4x1xi64>
  %6 = nn.argmin %a axis 2 keepdims : tensor<2x4x8xf32> -> tensor<2x4x1xi64>
  // CHECK: nn.softmax %{{.*}} axis 2 : tensor<2x4x8xf32>
  %7 = nn.softmax %a axis 2 : tensor<2x4x8xf32>
  // CHECK: nn.log_softmax
  %8 = nn.log_softmax %a axis 1 : tensor<2x4x8xf32>
  // CHECK: nn.layer_norm %{{.*}}, %{{.*}}, %{{.*}} axis 2 epsilon 1.000000e-05
  %9 = nn.layer_norm %a, %g, %g axis 2 epsilon 1.0e-05 : (tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  // CHECK: nn.layer_norm %{{.*}}, %{{.*}} axis 2 epsilon
  %10 = nn.layer_norm %a, %g axis 2 epsilon 1.0e-05 : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  return
}

// CHECK-LABEL: func.func @movement
func.func @movement(%a: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %ids: tensor<3xi64>) {
  // CHECK: nn.matmul {{.*}} : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  %0 = nn.matmul %a, %w : tensor<2x4x8xf32>, tensor<8x16xf32> -> tensor<2x4x16xf32>
  // CHECK: nn.transpose %{{.*}} perm [0, 2, 1] : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
  %1 = nn.transpose %a perm [0, 2, 1] : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
  // CHECK: nn.reshape %{{.*}} : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %2 = nn.reshape %a : tensor<2x4x8xf32> -> tensor<8x8xf32>
  // CHECK: nn.expand %{{.*}} : tensor<1x8xf32> -> tensor<4x8xf32>
  %e = nn.slice %2 starts [0, 0] ends [1, 8] steps [1, 1] : tensor<8x8xf32> -> tensor<1x8xf32>
  %3 = nn.expand %e : tensor<1x8xf32> -> tensor<4x8xf32>
  // CHECK: nn.concat %{{.*}}, %{{.*}} axis 0 : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<5x8xf32>
  %4 = nn.concat %e, %3 axis 0 : (tensor<1x8xf32>, tensor<4x8xf32>) -> tensor<5x8xf32>
  // A reversing slice.
  // CHECK: nn.slice %{{.*}} starts [7, 0] ends [-1, 8] steps [-2, 1] : tensor<8x8xf32> -> tensor<4x8xf32>
  %5 = nn.slice %2 starts [7, 0] ends [-1, 8] steps [-2, 1] : tensor<8x8xf32> -> tensor<4x8xf32>
  // CHECK: nn.gather %{{.*}}, %{{.*}} axis 0 : tensor<8x16xf32>, tensor<3xi64> -> tensor<3x16xf32>
  %6 = nn.gather %w, %ids axis 0 : tensor<8x16xf32>, tensor<3xi64> -> tensor<3x16xf32>
  // CHECK: nn.pad %{{.*}} pads [1, 0, 2, -1] {mode = "edge"} : tensor<8x16xf32> -> tensor<11x15xf32>
  %7 = nn.pad %w pads [1, 0, 2, -1] {mode = "edge"} : tensor<8x16xf32> -> tensor<11x15xf32>
  %s = nn.constant dense<0> : tensor<i64>
  %l = nn.constant dense<5> : tensor<i64>
  %d = nn.constant dense<1> : tensor<i64>
  // CHECK: nn.range {{.*}} -> tensor<5xi64>
  %8 = nn.range %s, %l, %d : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<5xi64>
  return
}

// CHECK-LABEL: func.func @vision
func.func @vision(%x: tensor<1x4x9x9xf32>, %w: tensor<8x2x3x3xf32>, %b: tensor<8xf32>, %p: tensor<4xf32>) {
  // CHECK: nn.conv {{.*}} -> tensor<1x8x5x5xf32>
  %0 = nn.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<1x8x5x5xf32>
  // CHECK: nn.batch_norm {{.*}} -> tensor<1x4x9x9xf32>
  %1 = nn.batch_norm %x, %p, %p, %p, %p epsilon 1.0e-05 : (tensor<1x4x9x9xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x9x9xf32>
  // CHECK: nn.max_pool {{.*}} : tensor<1x4x9x9xf32> -> tensor<1x4x5x5xf32>
  %2 = nn.max_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode} : tensor<1x4x9x9xf32> -> tensor<1x4x5x5xf32>
  // CHECK: nn.avg_pool {{.*}} : tensor<1x4x9x9xf32> -> tensor<1x4x4x4xf32>
  %3 = nn.avg_pool %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x4x9x9xf32> -> tensor<1x4x4x4xf32>
  // CHECK: nn.global_avg_pool {{.*}} -> tensor<1x4x1x1xf32>
  %4 = nn.global_avg_pool %x : tensor<1x4x9x9xf32> -> tensor<1x4x1x1xf32>
  // CHECK: nn.global_max_pool {{.*}} -> tensor<1x4x1x1xf32>
  %5 = nn.global_max_pool %x : tensor<1x4x9x9xf32> -> tensor<1x4x1x1xf32>
  // CHECK: nn.max_pool_indices {{.*}}storage_order{{.*}} : tensor<1x4x9x9xf32> -> tensor<1x4x4x4xi64>
  %6 = nn.max_pool_indices %x {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, storage_order} : tensor<1x4x9x9xf32> -> tensor<1x4x4x4xi64>
  return
}

// Resizing: a dimension of scale 1 keeps its extent whatever `sizes` says.
// CHECK-LABEL: func.func @resize_and_grid_sample
func.func @resize_and_grid_sample(%x: tensor<2x4x9x9xf32>, %g: tensor<2x3x5x2xf32>) {
  // CHECK: nn.resize %arg0 {{.*}} : tensor<2x4x9x9xf32> -> tensor<2x4x18x4xf32>
  %0 = nn.resize %x {mode = "linear", scales = array<f64: 1.0, 1.0, 2.0, 0.5>, sizes = array<i64: 0, 0, 18, 4>} : tensor<2x4x9x9xf32> -> tensor<2x4x18x4xf32>
  // CHECK: nn.resize {{.*}}roi = array<f64: 0.000000e+00, 0.000000e+00, 1.000000e-01, 0.000000e+00, 1.000000e+00, 1.000000e+00, 9.000000e-01, 1.000000e+00>{{.*}} -> tensor<2x4x3x9xf32>
  %1 = nn.resize %x {coordinate_transformation_mode = "tf_crop_and_resize", extrapolation_value = 1.0, scales = array<f64: 1.0, 1.0, 0.4, 1.0>, sizes = array<i64: 2, 4, 3, 9>, roi = array<f64: 0.0, 0.0, 0.1, 0.0, 1.0, 1.0, 0.9, 1.0>} : tensor<2x4x9x9xf32> -> tensor<2x4x3x9xf32>
  // CHECK: nn.grid_sample %arg0, %arg1 {align_corners, mode = "bicubic", padding_mode = "reflection"} : (tensor<2x4x9x9xf32>, tensor<2x3x5x2xf32>) -> tensor<2x4x3x5xf32>
  %2 = nn.grid_sample %x, %g {mode = "bicubic", padding_mode = "reflection", align_corners} : (tensor<2x4x9x9xf32>, tensor<2x3x5x2xf32>) -> tensor<2x4x3x5xf32>
  return
}

// The ops training steps are built from.
// CHECK-LABEL: func.func @training
func.func @training(%x: tensor<1x4x9x9xf32>, %w: tensor<8x2x3x3xf32>, %dy: tensor<1x8x5x5xf32>, %ids: tensor<2x3xi64>, %rows: tensor<2x3x16xf32>, %px: tensor<1x4x9x9xf32>, %pdy: tensor<1x4x4x4xf32>) {
  // CHECK: nn.variable "fc1.weight/exp_avg" : tensor<16x32xf32>
  %0 = nn.variable "fc1.weight/exp_avg" : tensor<16x32xf32>
  // CHECK: nn.scatter_add {{.*}} axis 0 : (tensor<10x16xf32>, tensor<2x3xi64>, tensor<2x3x16xf32>) -> tensor<10x16xf32>
  %z = nn.constant dense<0.0> : tensor<10x16xf32>
  %1 = nn.scatter_add %z, %ids, %rows axis 0 : (tensor<10x16xf32>, tensor<2x3xi64>, tensor<2x3x16xf32>) -> tensor<10x16xf32>
  // CHECK: nn.conv_grad_input {{.*}} -> tensor<1x4x9x9xf32>
  %2 = nn.conv_grad_input %dy, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x8x5x5xf32>, tensor<8x2x3x3xf32>) -> tensor<1x4x9x9xf32>
  // CHECK: nn.conv_grad_weight {{.*}} -> tensor<8x2x3x3xf32>
  %3 = nn.conv_grad_weight %x, %dy {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x9x9xf32>, tensor<1x8x5x5xf32>) -> tensor<8x2x3x3xf32>
  // CHECK: nn.max_pool_grad {{.*}} -> tensor<1x4x9x9xf32>
  %4 = nn.max_pool_grad %px, %pdy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x9x9xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x9x9xf32>
  // CHECK: nn.avg_pool_grad {{.*}} -> tensor<1x4x9x9xf32>
  %5 = nn.avg_pool_grad %px, %pdy {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x4x9x9xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x9x9xf32>
  return
}

// CHECK-LABEL: func @optimizer_updates
func.func @optimizer_updates(%p: tensor<4x3xf32>, %g: tensor<4x3xf32>, %m: tensor<4x3xf32>, %v: tensor<4x3xf32>, %s: tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  // CHECK: nn.adam_update {{.*}} {beta1 = 9.000000e-01 : f64, beta2 = 5.000000e-01 : f64, eps = 1.000000e-08 : f64, weight_decay = 0.000000e+00 : f64} : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>)
  %p1, %m1, %v1 = nn.adam_update %p, %g, %m, %v, %s, %s, %s, %s {beta1 = 0.9 : f64, beta2 = 0.5 : f64, eps = 1.0e-8 : f64, weight_decay = 0.0 : f64} : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>)
  // CHECK: nn.sgd_update {{.*}} {momentum = 9.000000e-01 : f64, nesterov = true, weight_decay = 1.000000e-02 : f64}
  %p2, %b2 = nn.sgd_update %p1, %g, %m1, %s, %s {momentum = 0.9 : f64, nesterov = true, weight_decay = 0.01 : f64} : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>, tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xf32>)
  return %p2, %b2 : tensor<4x3xf32>, tensor<4x3xf32>
}

// Gradient accumulation's loop: the body runs once per microbatch, picks the
// microbatch's input by the index and yields what the loop sums.
// CHECK-LABEL: func.func @microbatch_loop
func.func @microbatch_loop(%w: tensor<8x2xf32>, %x0: tensor<2x8xf32>, %x1: tensor<2x8xf32>) -> (tensor<2x2xf32>, tensor<f32>) {
  // CHECK: %{{.*}}:2 = nn.microbatch_loop (%mb) count 2 : tensor<2x2xf32>, tensor<f32> {
  // CHECK-NEXT: nn.microbatch_select %mb, %{{.*}}, %{{.*}} : tensor<2x8xf32>
  // CHECK: nn.microbatch_yield %{{.*}}, %{{.*}} : tensor<2x2xf32>, tensor<f32>
  %y, %s = nn.microbatch_loop (%mb) count 2 : tensor<2x2xf32>, tensor<f32> {
    %x = nn.microbatch_select %mb, %x0, %x1 : tensor<2x8xf32>
    %p = nn.matmul %x, %w : tensor<2x8xf32>, tensor<8x2xf32> -> tensor<2x2xf32>
    %t = nn.reduce_sum %p axes [0, 1] : tensor<2x2xf32> -> tensor<f32>
    nn.microbatch_yield %p, %t : tensor<2x2xf32>, tensor<f32>
  }
  return %y, %s : tensor<2x2xf32>, tensor<f32>
}

// CHECK-LABEL: func.func @elements
func.func @elements(%logp: tensor<2x16x96xf32>, %ids: tensor<2x16x1xi64>, %x: tensor<3x3xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>, %t: tensor<4xi32>, %v: tensor<2xf32>) {
  // CHECK: nn.gather_elements %{{.*}}, %{{.*}} axis 2 : tensor<2x16x96xf32>, tensor<2x16x1xi64> -> tensor<2x16x1xf32>
  %0 = nn.gather_elements %logp, %ids axis 2 : tensor<2x16x96xf32>, tensor<2x16x1xi64> -> tensor<2x16x1xf32>
  // CHECK: nn.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} axis 1 : (tensor<3x3xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x3xf32>
  %1 = nn.scatter_elements %x, %i, %u axis 1 : (tensor<3x3xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x3xf32>
  // CHECK: nn.scatter_elements %{{.*}}, %{{.*}}, %{{.*}} axis 1 reduction "add" : (tensor<3x3xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x3xf32>
  %2 = nn.scatter_elements %x, %i, %u axis 1 reduction "add" : (tensor<3x3xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x3xf32>
  // CHECK: nn.cumsum %{{.*}} axis 1 : tensor<3x3xf32>
  %3 = nn.cumsum %x axis 1 : tensor<3x3xf32>
  // CHECK: nn.cumsum %{{.*}} axis 0 exclusive reverse : tensor<3x3xf32>
  %4 = nn.cumsum %x axis 0 exclusive reverse : tensor<3x3xf32>
  // CHECK: nn.one_hot %{{.*}}, %{{.*}} depth 10 axis 1 : tensor<4xi32>, tensor<2xf32> -> tensor<4x10xf32>
  %5 = nn.one_hot %t, %v depth 10 axis 1 : tensor<4xi32>, tensor<2xf32> -> tensor<4x10xf32>
  return
}

// CHECK-LABEL: func.func @einsum_top_k
func.func @einsum_top_k(%m: tensor<16x4x8xf32>, %x: tensor<16x32xf32>, %w: tensor<4x32x64xf32>, %g: tensor<16x4xf32>) {
  // CHECK: nn.einsum "tec,td->ecd" %{{.*}}, %{{.*}} : (tensor<16x4x8xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
  %0 = nn.einsum "tec,td->ecd" %m, %x : (tensor<16x4x8xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
  // CHECK: nn.einsum "ecd,edf->ecf" %{{.*}}, %{{.*}} : (tensor<4x8x32xf32>, tensor<4x32x64xf32>) -> tensor<4x8x64xf32>
  %1 = nn.einsum "ecd,edf->ecf" %0, %w : (tensor<4x8x32xf32>, tensor<4x32x64xf32>) -> tensor<4x8x64xf32>
  // CHECK: nn.einsum "ii->" %{{.*}} : (tensor<16x16xf32>) -> tensor<f32>
  %sq = nn.einsum "td,sd->ts" %x, %x : (tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<16x16xf32>
  %2 = nn.einsum "ii->" %sq : (tensor<16x16xf32>) -> tensor<f32>
  // CHECK: nn.top_k %{{.*}} k 2 axis 1 : tensor<16x4xf32> -> tensor<16x2xi64>
  %3 = nn.top_k %g k 2 axis 1 : tensor<16x4xf32> -> tensor<16x2xi64>
  // CHECK: nn.top_k %{{.*}} k 1 axis 0 smallest : tensor<16x4xf32> -> tensor<1x4xi64>
  %4 = nn.top_k %g k 1 axis 0 smallest : tensor<16x4xf32> -> tensor<1x4xi64>
  return
}

// A matmul in a target's fused form (dist-fuse-for-target writes it).
// CHECK-LABEL: func.func @fused_matmul
func.func @fused_matmul(%x: tensor<8x32xf32>, %w: tensor<64x32xf32>, %b: tensor<64xf32>, %a: tensor<32x8xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x8xf32>) {
  // CHECK: nn.fused_matmul %{{.*}}, %{{.*}} transposed bias %{{.*}} gelu : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %0 = nn.fused_matmul %x, %w transposed bias %b gelu : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
  // CHECK: nn.fused_matmul %{{.*}}, %{{.*}} transposed : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
  %1 = nn.fused_matmul %x, %w transposed : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
  // CHECK: nn.fused_matmul %{{.*}} transposed, %{{.*}} transposed : tensor<32x8xf32>, tensor<8x32xf32> -> tensor<8x8xf32>
  %2 = nn.fused_matmul %a transposed, %x transposed : tensor<32x8xf32>, tensor<8x32xf32> -> tensor<8x8xf32>
  return %0, %1, %2 : tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x8xf32>
}

// Softmax's gradient in one op (dist-fuse-for-target writes it).
// CHECK-LABEL: func.func @fused_softmax_grad
func.func @fused_softmax_grad(%y: tensor<2x4x8x8xf32>, %dy: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
  // CHECK: nn.fused_softmax_grad %{{.*}}, %{{.*}} axis 3 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %0 = nn.fused_softmax_grad %y, %dy axis 3 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  return %0 : tensor<2x4x8x8xf32>
}

// The f32 softmax of a bf16 policy with its casts folded in: dy read as
// stored, the gradient written as bf16; the softmax reading bf16.
// CHECK-LABEL: func.func @fused_softmax_half
func.func @fused_softmax_half(%x: tensor<2x8xbf16>, %y: tensor<2x8xf32>, %dy: tensor<2x8xbf16>) -> (tensor<2x8xf32>, tensor<2x8xbf16>) {
  // CHECK: nn.fused_softmax %{{.*}} axis 1 : tensor<2x8xbf16> -> tensor<2x8xf32>
  %0 = nn.fused_softmax %x axis 1 : tensor<2x8xbf16> -> tensor<2x8xf32>
  // CHECK: nn.fused_softmax_grad %{{.*}}, %{{.*}} axis 1 : tensor<2x8xf32>, tensor<2x8xbf16> -> tensor<2x8xbf16>
  %1 = nn.fused_softmax_grad %y, %dy axis 1 : tensor<2x8xf32>, tensor<2x8xbf16> -> tensor<2x8xbf16>
  return %0, %1 : tensor<2x8xf32>, tensor<2x8xbf16>
}

// Cross-entropy's fused forms over a rank's share of the classes.
// CHECK-LABEL: func.func @fused_cross_entropy
func.func @fused_cross_entropy(%l: tensor<4x6xbf16>, %m: tensor<4x1xf32>, %r: tensor<4x1xi64>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x6xbf16>) {
  // CHECK: nn.fused_cross_entropy_sums %{{.*}}, %{{.*}}, %{{.*}} first_class 6 : tensor<4x6xbf16>, tensor<4x1xf32>, tensor<4x1xi64>
  %s, %zl = nn.fused_cross_entropy_sums %l, %m, %r first_class 6 : tensor<4x6xbf16>, tensor<4x1xf32>, tensor<4x1xi64>
  // CHECK: nn.fused_cross_entropy_grad {{.*}} first_class 6 : tensor<4x6xbf16>, tensor<4x1xf32>, tensor<4x1xi64> -> tensor<4x6xbf16>
  %g = nn.fused_cross_entropy_grad %l, %m, %s, %zl, %r first_class 6 : tensor<4x6xbf16>, tensor<4x1xf32>, tensor<4x1xi64> -> tensor<4x6xbf16>
  return %s, %zl, %g : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x6xbf16>
}
