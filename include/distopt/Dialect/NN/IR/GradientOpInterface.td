//===- GradientOpInterface.td - how an op differentiates ----*- tablegen -*-===//
#ifndef NN_GRADIENT_OP_INTERFACE_TD
#define NN_GRADIENT_OP_INTERFACE_TD

include "mlir/IR/OpBase.td"

def NN_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::distopt::nn";
  let description = [{
    Declares an op's gradient (its vector-Jacobian product), the way
    `ShardingRuleOpInterface` declares how it distributes: given the
    gradient of the loss with respect to each result, the op emits, as nn
    ops, the gradient with respect to each operand. Reverse-mode
    differentiation of a whole function (dist-build-training-step) is one
    walk over these rules; supporting a new op in training means
    implementing this interface. The emitted ops may read the op's operands
    and results (forward values kept for the backward pass).
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the gradients of the operands. `resultGrads[i]` is the gradient
        of result i (never null: zero-filled if the loss does not depend on
        it). Sets `operandGrads[i]` for every operand the op is
        differentiable in; leaves it null for operands that carry no gradient
        (integer indices, a condition). Fails with a diagnostic when the op's
        attributes make it non-differentiable here (a strided slice, a
        reflect pad).
      }],
      "::llvm::LogicalResult", "buildGradient",
      (ins "::distopt::nn::GradientBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

#endif // NN_GRADIENT_OP_INTERFACE_TD
