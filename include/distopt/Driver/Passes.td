//===- Passes.td - the whole compile as one pass -----------*- tablegen -*-===//
#ifndef DISTOPT_DRIVER_PASSES_TD
#define DISTOPT_DRIVER_PASSES_TD

include "mlir/Pass/PassBase.td"

def DistPipeline : Pass<"dist-pipeline", "mlir::ModuleOp"> {
  let summary = "The whole compile, from an imported model to partitioned programs";
  let description = [{
    Runs the passes `distopt::buildCompilePipeline` puts in order, the same
    the tools run, with the tools' compile flags as options:

    1. `dist-build-training-step{config=<train>}` (with `train`; its
       `batch-split` is the microbatches of the plan's pipeline section) and
       `dist-apply-plan{mesh=<mesh> plan=<plan> strict=<strict-plan>
       machine=<machine>}`
       (with `mesh` or `plan`);
    2. `dist-propagate-sharding{machine=<machine>}`, `dist-tie-updates-to-state`,
       `dist-insert-reshards`, `cse`, `dist-regather-parameters`;
    3. with a plan's `pipeline:` section, `dist-cut-pipeline-stages` (its
       options from the section) and `dist-order-pipeline-stages`;
    4. `dist-partition{rank=<rank>}`,
       `dist-reshard-to-collectives{rank=<rank> machine=<machine>}`,
       `canonicalize`, `cse`, `dist-fuse-for-target{target=<target>}`: in
       every stage module for the SPMD programs, or after
       `dist-select-stage{rank=<rank>}` for one rank's.

    Without options it is the sharding flow on annotated IR (2 and 4). On
    an imported model its output equals that of `dist-opt model.onnx --mesh
    ... --plan ... --train ...` (with `--dist-emit-rank=<rank>`), and that of
    the passes above named one by one in `--pass-pipeline`. (The tools'
    single-device compile, the reference of `dist-run --check`, runs
    `dist-strip-distribution` in step 1 instead of the plan.)

    Example:

    ```
    dist-opt model.onnx --pass-pipeline='builtin.module(dist-pipeline{mesh=dp=2,tp=2 plan=zero1,tp train=train.json})'
    mlir-opt --load-pass-plugin=libDistoptPlugin.so --load-dialect-plugin=libDistoptPlugin.so \
      --pass-pipeline='builtin.module(dist-pipeline{rank=3})' annotated.mlir
    ```
  }];
  let options = [
    Option<"mesh", "mesh", "std::string", /*default=*/"\"\"",
           "device mesh, outer to inner axes: name=size,... (e.g. dp=2,tp=4)">,
    ListOption<"plans", "plan", "std::string",
               "plan files (YAML/JSON) and presets, applied in order">,
    Option<"strictPlan", "strict-plan", "bool", /*default=*/"false",
           "a plan pattern that matches nothing is an error, not a warning">,
    Option<"train", "train", "std::string", /*default=*/"\"\"",
           "compile a training step for this config (JSON or YAML)">,
    Option<"machine", "machine", "std::string", /*default=*/"\"\"",
           "machine profile the costs are for: cpu, h100, h200 or a JSON "
           "file (default: cpu; docs/cost-model.md)">,
    Option<"rank", "rank", "int64_t", /*default=*/"-1",
           "partition for this rank (default: the SPMD program of every "
           "stage)">,
    Option<"target", "target", "std::string", /*default=*/"\"cpu\"",
           "the kernels the programs run on, whose fused forms they take: "
           "cpu, cuda or none (the tools take it from --device)">
  ];
  let dependentDialects = ["::distopt::dist::DistDialect",
                           "::distopt::nn::NNDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // DISTOPT_DRIVER_PASSES_TD
