// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-precision{config=%S/Inputs/mse-bf16.yaml})' | FileCheck %s --check-prefix=BF16
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-precision{config=%S/Inputs/mse-bf16-keep.yaml})' | FileCheck %s --check-prefix=KEEP
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-precision{config=%S/Inputs/mse-bf16.yaml},dist-build-training-step{config=%S/Inputs/mse-bf16.yaml})' | FileCheck %s --check-prefix=STEP
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-precision{config=%S/Inputs/mse-bf16-keep.yaml},dist-build-training-step{config=%S/Inputs/mse-bf16-keep.yaml})' | FileCheck %s --check-prefix=ACCUM
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-precision{config=%S/Inputs/mse-f16-scale.yaml},dist-build-training-step{config=%S/Inputs/mse-f16-scale.yaml})' | FileCheck %s --check-prefix=F16
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-precision{config=%S/Inputs/mse-bf16.yaml inference=1})' | FileCheck %s --check-prefix=INFER
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-precision{config=%S/Inputs/mse-bf16.yaml inference=1})' | FileCheck %s --check-prefix=NO-WEIGHT-CAST
// An f32 policy changes nothing.
// RUN: dist-opt %s --pass-pipeline='builtin.module(dist-apply-precision{config=%S/Inputs/mse-sgd.json})' | FileCheck %s --check-prefix=F32
// RUN: not dist-opt %s --pass-pipeline='builtin.module(dist-apply-precision)' 2>&1 | FileCheck %s --check-prefix=NO-CONFIG

// NO-CONFIG: error: dist-apply-precision needs config=<file>

// F32: %[[H:.*]] = nn.matmul %arg0, %{{.*}} : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
// F32-NOT: nn.cast

// precision: bf16. The parameters stay f32; forward reads one bf16 cast of
// each (fc.bias's serves both its readers); the layer norm computes in f32
// on its f32 parameter; the output is f32 again.
// BF16-LABEL: func.func @main
// BF16: %[[X:.*]] = nn.cast %arg0 : tensor<4x8xf32> -> tensor<4x8xbf16>
// BF16: %[[W:.*]] = nn.weight "fc.weight" : tensor<8x2xf32>
// BF16: %[[WB:.*]] = nn.cast %[[W]] : tensor<8x2xf32> -> tensor<8x2xbf16>
// BF16: %[[B:.*]] = nn.weight "fc.bias" : tensor<2xf32>
// BF16: %[[BB:.*]] = nn.cast %[[B]] : tensor<2xf32> -> tensor<2xbf16>
// BF16: %[[G:.*]] = nn.weight "ln.weight" : tensor<2xf32>
// BF16-NOT: nn.cast %[[G]]
// BF16: %[[H:.*]] = nn.matmul %[[X]], %[[WB]] : tensor<4x8xbf16>, tensor<8x2xbf16> -> tensor<4x2xbf16>
// BF16: %[[A:.*]] = nn.add %[[H]], %[[BB]] : tensor<4x2xbf16>, tensor<2xbf16> -> tensor<4x2xbf16>
// BF16: %[[AF:.*]] = nn.cast %[[A]] : tensor<4x2xbf16> -> tensor<4x2xf32>
// BF16: %[[N:.*]] = nn.layer_norm %[[AF]], %[[G]] {{.*}} : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
// BF16: %[[NB:.*]] = nn.cast %[[N]] : tensor<4x2xf32> -> tensor<4x2xbf16>
// BF16: %[[T:.*]] = nn.tanh %[[NB]] : tensor<4x2xbf16>
// BF16: %[[Y:.*]] = nn.mul %[[T]], %[[BB]] : tensor<4x2xbf16>, tensor<2xbf16> -> tensor<4x2xbf16>
// BF16: %[[YF:.*]] = nn.cast %[[Y]] : tensor<4x2xbf16> -> tensor<4x2xf32>
// BF16: return %[[YF]] : tensor<4x2xf32>

// For inference (dist-run --precision bf16) the weights read only in bf16
// are bf16 weights, rounded from their f32 bytes when loaded: no cast runs
// for them. The layer norm's parameter, read in f32, stays f32.
// INFER-LABEL: func.func @main
// INFER: %[[X:.*]] = nn.cast %arg0 : tensor<4x8xf32> -> tensor<4x8xbf16>
// INFER: %[[W:.*]] = nn.weight "fc.weight" {stored_type = f32} : tensor<8x2xbf16>
// INFER: %[[B:.*]] = nn.weight "fc.bias" {stored_type = f32} : tensor<2xbf16>
// INFER: %[[G:.*]] = nn.weight "ln.weight" : tensor<2xf32>
// INFER: %[[H:.*]] = nn.matmul %[[X]], %[[W]] : tensor<4x8xbf16>, tensor<8x2xbf16> -> tensor<4x2xbf16>
// INFER: %[[A:.*]] = nn.add %[[H]], %[[B]] : tensor<4x2xbf16>, tensor<2xbf16> -> tensor<4x2xbf16>
// INFER: nn.layer_norm %{{.*}}, %[[G]]
// INFER: nn.mul %{{.*}}, %[[B]] : tensor<4x2xbf16>, tensor<2xbf16> -> tensor<4x2xbf16>
// NO-WEIGHT-CAST-NOT: tensor<8x2xf32> -> tensor<8x2xbf16>
// NO-WEIGHT-CAST-NOT: tensor<2xf32> -> tensor<2xbf16>

// keep_f32: [head] computes the layer 'head' (its Tanh and Mul) in f32,
// reading fc.bias in f32.
// KEEP: %[[B:.*]] = nn.weight "fc.bias" : tensor<2xf32>
// KEEP: %[[N:.*]] = nn.layer_norm
// KEEP: %[[T:.*]] = nn.tanh %[[N]] : tensor<4x2xf32>
// KEEP: %[[Y:.*]] = nn.mul %[[T]], %[[B]] : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>
// KEEP: return %[[Y]] : tensor<4x2xf32>

// The step: the loss is f32; its gradient enters the bf16 backward through a
// cast; each parameter's gradient is the cast of its bf16 gradient back to
// f32, and the norm and AdamW run on f32 gradients, parameters and states.
// STEP: %[[W:.*]] = nn.weight "fc.weight" : tensor<8x2xf32>
// STEP: %[[YF:.*]] = nn.cast %[[Y:.*]] : tensor<4x2xbf16> -> tensor<4x2xf32>
// STEP-NOT: nn.phase
// STEP: nn.sub %{{.*}}, %arg1 {nn.phase = "loss"} : tensor<4x2xf32>, tensor<4x2xf32>
// STEP: nn.cast %{{.*}} {nn.phase = "backward"} : tensor<4x2xf32> -> tensor<4x2xbf16>
// STEP: %[[DW:.*]] = nn.matmul %{{.*}} {nn.phase = "backward"} : tensor<8x4xbf16>, tensor<4x2xbf16> -> tensor<8x2xbf16>
// STEP: %[[DWF:.*]] = nn.cast %[[DW]] {nn.phase = "backward"} : tensor<8x2xbf16> -> tensor<8x2xf32>
// STEP: %[[GW:.*]] = nn.identity %[[DWF]] {nn.gradient_of = "fc.weight", nn.phase = "backward"} : tensor<8x2xf32>
// STEP: nn.mul %[[GW]], %[[GW]] {nn.phase = "optimizer"} : tensor<8x2xf32>
// STEP: nn.adam_update %[[W]], %[[GW]], {{.*}} : (tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<8x2xf32>,

// Gradient accumulation: the casts of the parameters are made once, before
// the loop; the body yields f32 gradients, which the loop sums in f32.
// ACCUM: nn.cast %{{.*}} : tensor<8x2xf32> -> tensor<8x2xbf16>
// ACCUM: nn.microbatch_loop (%mb) count 2 {{.*}} : tensor<8x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32> {
// ACCUM: %[[DWF:.*]] = nn.cast %{{.*}} {nn.phase = "backward"} : tensor<8x2xbf16> -> tensor<8x2xf32>
// ACCUM: nn.microbatch_yield {nn.phase = "backward"} %[[DWF]],

// f16 with a loss scale (1024, which the trainer feeds as hyper.loss_scale):
// the loss's gradient (2/8) is multiplied by the scale and each f32 gradient
// by its reciprocal before it is marked. A gradient norm that is not below
// +inf (an overflow: inf or NaN) leaves every parameter as it was, and the
// step says whether it did.
// F16: func.func @main(%{{.*}}, %[[SCALE:.*]]: tensor<f32> {nn.name = "hyper.loss_scale"}) -> ({{.*}}, tensor<f32> {nn.name = "grads_finite"}, {{.*}}
// F16: nn.cast %arg0 : tensor<4x8xf32> -> tensor<4x8xf16>
// F16: %[[Q:.*]] = nn.constant dense<2.500000e-01> : tensor<f32> {nn.phase = "loss"}
// F16: %[[SEED:.*]] = nn.mul %[[Q]], %[[SCALE]] {nn.phase = "loss"}
// F16: nn.mul %{{.*}}, %[[SEED]] {nn.phase = "loss"}
// F16: %[[DWF:.*]] = nn.cast %{{.*}} {nn.phase = "backward"} : tensor<8x2xf16> -> tensor<8x2xf32>
// F16: %[[ONE:.*]] = nn.constant dense<1.000000e+00> : tensor<f32> {nn.phase = "backward"}
// F16: %[[INV:.*]] = nn.div %[[ONE]], %[[SCALE]] {nn.phase = "backward"}
// F16: %[[G:.*]] = nn.mul %[[DWF]], %[[INV]] {nn.phase = "backward"}
// F16: nn.identity %[[G]] {nn.gradient_of = "fc.weight"
// F16: %[[NORM:.*]] = nn.sqrt
// F16: %[[INF:.*]] = nn.constant dense<0x7F800000> : tensor<f32>
// F16: %[[FINITE:.*]] = nn.less %[[NORM]], %[[INF]]
// F16: %[[W:.*]] = nn.add %[[W0:.*]], %{{.*}} {nn.phase = "optimizer"} : tensor<8x2xf32>
// F16: %[[KEPT:.*]] = nn.where %[[FINITE]], %[[W]], %[[W0]] {nn.phase = "optimizer"}
// F16: %[[OK:.*]] = nn.cast %[[FINITE]] {{.*}} : tensor<i1> -> tensor<f32>
// F16: return %{{.*}}, %[[NORM]], %[[OK]], %[[KEPT]],

func.func @main(%x: tensor<4x8xf32> {nn.name = "x"}) -> (tensor<4x2xf32> {nn.name = "y"}) {
  %w = nn.weight "fc.weight" : tensor<8x2xf32>
  %b = nn.weight "fc.bias" : tensor<2xf32>
  %g = nn.weight "ln.weight" : tensor<2xf32>
  %h = nn.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32> loc("/fc/MatMul")
  %a = nn.add %h, %b : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32> loc("/fc/Add")
  %n = nn.layer_norm %a, %g axis 1 epsilon 1.0e-05 : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32> loc("/ln/LayerNormalization")
  %t = nn.tanh %n : tensor<4x2xf32> loc("/head/Tanh")
  %y = nn.mul %t, %b : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32> loc("/head/Mul")
  return %y : tensor<4x2xf32>
}
