//===- NNBase.td - the nn dialect ----------------------------*- tablegen -*-===//
#ifndef NN_BASE_TD
#define NN_BASE_TD

include "mlir/IR/OpBase.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::distopt::nn";
  let summary = "Tensor operations of neural-network models, as imported from ONNX";
  let description = [{
    The `nn` dialect is what the ONNX importer produces: value-semantics tensor
    operations with static shapes, close to ONNX's own operators but
    normalised (axes non-negative, attributes explicit, shape arithmetic folded
    away). Weights are `nn.weight` references to bytes in the model file and
    are never copied into the IR.

    Every op infers its result type, verifies its attributes against its
    operands, and describes itself to the sharding passes through
    `ShardingRuleOpInterface`.
  }];
  let dependentDialects = ["::distopt::dist::DistDialect"];
  let hasConstantMaterializer = 1;
}

#endif // NN_BASE_TD
