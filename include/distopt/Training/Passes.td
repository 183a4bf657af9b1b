//===- Passes.td - the training step as passes -------------*- tablegen -*-===//
#ifndef DISTOPT_TRAINING_PASSES_TD
#define DISTOPT_TRAINING_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistBuildTrainingStep : Pass<"dist-build-training-step", "mlir::ModuleOp"> {
  let summary = "Rewrite a forward model into one training step: loss, backward, optimizer update";
  let description = [{
    Rewrites the module's `@main` (or its only function) into one training
    step, all in nn IR that every later pass treats like any other:

    forward -> loss (and its gradient with respect to the model output) ->
    backward (each op's GradientOpInterface) -> global-norm clipping ->
    optimizer update

    `config` names the training config (JSON or YAML, the tools' `--train`;
    see docs/training.md): the model output the loss reads, the loss, the
    optimizer and its hyper-parameters, frozen and no-decay parameters,
    gradient accumulation, recomputed layers. Trainable parameters stay
    `nn.weight` ops; optimizer states become `nn.variable` ops; the step
    takes `labels` and the per-step scalars (`hyper.lr`, ...) as inputs and
    returns `loss`, `grad_norm` and the next value of every parameter and
    state (results marked `nn.updates "<key>"`), which the runtime writes
    back in place. Ops carry `nn.phase` ("loss", "backward", "optimizer").
    Gradient accumulation and a pipeline's microbatches (`batch-split`) are
    one `nn.microbatch_loop` whose body is one microbatch's forward, loss
    and backward, run once per microbatch. With an f16 loss
    scale the step also takes `hyper.loss_scale` (the loss's gradient is
    multiplied by it, each gradient by its reciprocal), returns
    `grads_finite`, and writes back the old value of every parameter and
    state when the gradient norm is not finite. Under a mixed-precision
    policy a frozen parameter read only through casts to the compute dtype
    becomes a weight of that dtype (`stored_type` f32): it has no master
    to keep.

    Before differentiating, projections whose result is only ever sliced (a
    fused QKV) become one projection per slice, so each window of the stored
    weight is a parameter of its own. With `batch-split=N` (a pipeline's
    microbatches) the model first takes one of N equal slices of its batch
    (dimension 0 of every input); the step runs every slice, and its loss and
    update equal those of the whole batch.

    Errors are diagnostics: an output the model lacks, a glob that matches
    nothing, an op without a gradient rule on the path to a parameter (named
    by its ONNX node), a batch that does not divide.

    Example: `dist-build-training-step{config=train.json}` with
    `{"output": "y", "loss": {"kind": "mse"}, "optimizer": {"kind": "sgd", "lr": 0.1}}`
    on

    ```mlir
    func.func @main(%x: tensor<4x8xf32> {nn.name = "x"}) -> (tensor<4x2xf32> {nn.name = "y"}) {
      %w = nn.weight "fc.weight" : tensor<8x2xf32>
      %y = nn.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
      return %y : tensor<4x2xf32>
    }
    ```

    gives (abridged)

    ```mlir
    func.func @main(%x: tensor<4x8xf32> {nn.name = "x"}, %labels: tensor<4x2xf32> {nn.name = "labels"},
                    %lr: tensor<f32> {nn.name = "hyper.lr"})
        -> (tensor<f32> {nn.name = "loss"}, tensor<f32> {nn.name = "grad_norm"},
            tensor<8x2xf32> {nn.name = "update:fc.weight", nn.updates = "fc.weight"}) {
      %w = nn.weight "fc.weight" : tensor<8x2xf32>
      %y = nn.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
      %d = nn.sub %y, %labels {nn.phase = "loss"} : ...
      ...
      %loss = nn.reduce_mean %sq axes [0, 1] {nn.phase = "loss"} : tensor<4x2xf32> -> tensor<f32>
      ...
      %dw = nn.matmul %xt, %dy {nn.phase = "backward"} : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
      %g = nn.identity %dw {nn.gradient_of = "fc.weight", nn.phase = "backward"} : tensor<8x2xf32>
      ...
      %norm = nn.sqrt %sum {nn.phase = "optimizer"} : tensor<f32>
      %neg = nn.neg %lr {nn.phase = "optimizer"} : tensor<f32>
      %step = nn.mul %neg, %g {nn.phase = "optimizer"} : tensor<f32>, tensor<8x2xf32> -> tensor<8x2xf32>
      %next = nn.add %w, %step {nn.phase = "optimizer"} : tensor<8x2xf32>, tensor<8x2xf32> -> tensor<8x2xf32>
      return %loss, %norm, %next : tensor<f32>, tensor<f32>, tensor<8x2xf32>
    }
    ```
  }];
  let options = [
    Option<"config", "config", "std::string", /*default=*/"\"\"",
           "the training config (JSON or YAML; docs/training.md)">,
    Option<"batchSplit", "batch-split", "int64_t", /*default=*/"1",
           "run the batch as this many equal slices (a pipeline's "
           "microbatches); the loss and update stay the whole batch's">
  ];
  let dependentDialects = ["::distopt::nn::NNDialect"];
}

def DistApplyPrecision : Pass<"dist-apply-precision", "mlir::ModuleOp"> {
  let summary = "Apply a mixed-precision policy to the forward model as casts";
  let description = [{
    Runs on the forward model, before `dist-build-training-step` (the tools
    add it when the training config has `precision`; see docs/training.md,
    "Mixed precision"). With `compute: bf16` (or f16):

    - parameters stay f32 `nn.weight`s (the masters the optimizer updates,
      ZeRO shards and checkpoints hold); a reader in the compute dtype reads
      one `nn.cast` of each, shared by all its readers (a tied embedding and
      head read one bf16 copy);
    - every nn op with a float operand computes in the compute dtype: its
      f32 operands are cast and its f32 results become the compute dtype, so
      activations flow in bf16;
    - `nn.layer_norm`, `nn.batch_norm`, `nn.softmax`, `nn.log_softmax`, the
      ops of layers named `*norm*`, `*Norm*` or `*rotary*`, and those a
      `keep_f32` glob names (node names or module paths, as `recompute`'s)
      compute in f32: casts in and out; they read f32 parameters directly;
    - the model's outputs are cast back to f32, so the loss is f32.

    Differentiating the result gives each cast's gradient as a cast back:
    the gradients reach the parameters in f32, the microbatch loop sums them
    in f32, and clipping and the update run in f32. A widening cast lets
    partial sums through (its sharding rule), so data-parallel gradient
    reductions run after the cast, in f32.

    A model whose parameters are bf16 or f16 (exported in that dtype) is
    first made an f32 model for training: each 16-bit `nn.weight` becomes an
    f32 master read from its 16-bit bytes (`stored_type`), 16-bit inputs are
    cast to f32 where they enter, and every other 16-bit value becomes f32.
    Without a `precision` key a bf16 model then computes in bf16 (a remark
    says so); an f16 model needs the config to choose a loss scale.

    Fused projections are split first (as `dist-build-training-step` does),
    since the cast would hide them. A `keep_f32` glob that matches nothing
    is a warning. `config` names a training config whose `precision` to
    apply (the tools pass the parsed policy instead).

    With `inference` (`dist-run --precision`) there are no masters to keep:
    a weight that is read only through casts to the compute dtype becomes a
    weight of that dtype (`stored_type` f32), rounded once when it is
    loaded instead of cast at every run; a weight also read in f32 (a layer
    norm's) stays f32.

    Example, `precision: bf16`:

    ```mlir
    %w = nn.weight "fc.weight" : tensor<8x2xf32>
    %y = nn.matmul %x, %w : tensor<4x8xf32>, tensor<8x2xf32> -> tensor<4x2xf32>
    %s = nn.softmax %y axis 1 : tensor<4x2xf32>
    return %s : tensor<4x2xf32>
    ```

    becomes

    ```mlir
    %w = nn.weight "fc.weight" : tensor<8x2xf32>
    %wb = nn.cast %w : tensor<8x2xf32> -> tensor<8x2xbf16>
    %xb = nn.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    %y = nn.matmul %xb, %wb : tensor<4x8xbf16>, tensor<8x2xbf16> -> tensor<4x2xbf16>
    %yf = nn.cast %y : tensor<4x2xbf16> -> tensor<4x2xf32>
    %s = nn.softmax %yf axis 1 : tensor<4x2xf32>
    return %s : tensor<4x2xf32>
    ```
  }];
  let options = [
    Option<"config", "config", "std::string", /*default=*/"\"\"",
           "a training config (JSON or YAML) whose precision policy to apply">,
    Option<"inference", "inference", "bool", /*default=*/"false",
           "apply the policy to inference: weights read only in the compute "
           "dtype are loaded in it">
  ];
  let dependentDialects = ["::distopt::nn::NNDialect"];
}

def DistTieUpdatesToState : Pass<"dist-tie-updates-to-state", "mlir::ModuleOp"> {
  let summary = "Give each update of a training step its parameter's or state's sharding";
  let description = [{
    Runs after `dist-propagate-sharding`. Every result of a training step
    marked `nn.updates "<key>"` is the next value of a parameter
    (`nn.weight`) or optimizer state (`nn.variable`) with that key; the
    runtime writes it back in place, so it must come out laid out as the
    stored tensor is. The pass sets the result's `dist.sharding` to the
    stored tensor's; `dist-insert-reshards` then reshards the update where
    it differs (a ZeRO optimizer's updated slice is gathered back into a
    replicated parameter, say). Modules that are not training steps are
    left as they are.

    Example: a ZeRO-1 step computes the new weight split over `dp` but
    stores the weight whole:

    ```mlir
    func.func @main(...) -> (tensor<8x2xf32> {nn.updates = "fc.weight"}) {
      %w = nn.weight "fc.weight" {dist.sharding = [#dist.sharding<@mesh, [R]>]} : tensor<8x2xf32>
      ...
      %next = nn.sub %w1, %s {dist.sharding = [#dist.sharding<@mesh, [S(0)]>]} : ...
      return %next : tensor<8x2xf32>
    }
    ```

    The result becomes `tensor<8x2xf32> {dist.sharding = #dist.sharding<@mesh, [R]>, nn.updates = "fc.weight"}`,
    and `dist-insert-reshards` gathers `%next` before the return.
  }];
}

def DistPersistComputeCopies : Pass<"dist-persist-compute-copies", "mlir::ModuleOp"> {
  let summary = "Keep a mixed-precision step's compute copies of its parameters as state";
  let description = [{
    Runs after `dist-tie-updates-to-state` and before `dist-insert-reshards`.
    A bf16 or f16 policy casts each f32 master to the compute dtype where
    forward reads it, anew every step: a pass over every parameter before
    forward starts. As Megatron keeps bf16 weights beside its f32 main
    params, this pass keeps the copy as state. Each narrowing `nn.cast` of
    a trained parameter at the top of a training step becomes an
    `nn.variable "<key>/compute_copy"` marked `nn.copy_of = "<key>"`, laid
    out as the cast was (so forward, and a ZeRO gather of the copy, are
    unchanged), and the step gains a result `nn.updates =
    "<key>/compute_copy"`: the master's next value cast to the copy's dtype,
    in the optimizer phase, laid out as that value (so
    `dist-insert-reshards` moves it, in the compute dtype, where the copy
    lives). The runtime starts the copy as the master's stored value
    converted to its dtype; checkpoints do not store it, and a resume
    rounds the restored master again. The cpu target rounds the copy in the
    update's own pass (`dist-fuse-for-target`). Other modules are left as
    they are.

    Example:

    ```mlir
    %w = nn.weight "fc.weight" ... : tensor<8x2xf32>
    %c = nn.cast %w : tensor<8x2xf32> -> tensor<8x2xbf16>
    ...
    return ..., %new_w : ..., tensor<8x2xf32>   // nn.updates = "fc.weight"
    ```

    becomes

    ```mlir
    %c = nn.variable "fc.weight/compute_copy" {nn.copy_of = "fc.weight"} : tensor<8x2xbf16>
    ...
    %r = nn.cast %new_w {nn.phase = "optimizer"} : tensor<8x2xf32> -> tensor<8x2xbf16>
    return ..., %new_w, %r : ..., tensor<8x2xf32>, tensor<8x2xbf16>   // nn.updates = "fc.weight/compute_copy"
    ```
  }];
}

def DistRegatherParameters : Pass<"dist-regather-parameters", "mlir::ModuleOp"> {
  let summary = "Gather split parameters again for backward instead of keeping the forward copy";
  let description = [{
    Runs after `dist-insert-reshards` (and after CSE, which would merge the
    copies back into one). A parameter stored split (ZeRO level 3, `fsdp`)
    is gathered where forward reads it; kept until backward reads it too,
    every gathered parameter would be live at once, as if it were not split
    at all. As FSDP and ZeRO-3 do, each `dist.reshard` of an `nn.weight` (or
    of its `nn.cast` to a mixed-precision compute dtype, gathered in bf16)
    read both by forward ops and by backward or optimizer ops (`nn.phase`)
    is copied before its first backward reader, which with the later ones
    reads the copy (inside a gradient accumulation loop, once per
    microbatch). The copy's reason says why it is there. This costs one more
    all-gather per split parameter per step (per microbatch in a loop).
    A compute copy marked `dist.gathered_once` (ZeRO levels 1 and 2 with
    split f32 masters) is left alone: it is gathered once per step and kept
    whole, as those levels keep their bf16 weights.

    Example:

    ```mlir
    %g = dist.reshard %w from <@mesh, [S(0), R]> to <@mesh, [R, R]> reason "operand layout: nn.matmul"
    %y = nn.matmul %x, %g : ...
    %dx = nn.matmul %dy, %g {nn.phase = "backward"} : ...
    ```

    becomes

    ```mlir
    %g = dist.reshard %w from <@mesh, [S(0), R]> to <@mesh, [R, R]> reason "operand layout: nn.matmul"
    %y = nn.matmul %x, %g : ...
    %g2 = dist.reshard %w from <@mesh, [S(0), R]> to <@mesh, [R, R]> reason "operand layout: nn.matmul; gathered again for backward (the forward copy is freed after forward)"
    %dx = nn.matmul %dy, %g2 {nn.phase = "backward"} : ...
    ```
  }];
  let dependentDialects = ["::distopt::dist::DistDialect"];
}

#endif // DISTOPT_TRAINING_PASSES_TD
