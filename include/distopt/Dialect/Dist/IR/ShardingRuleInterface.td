//===- ShardingRuleInterface.td - how an op distributes -----*- tablegen -*-===//
#ifndef DIST_SHARDING_RULE_INTERFACE_TD
#define DIST_SHARDING_RULE_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Dist_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::distopt::dist";
  let description = [{
    Describes an op to the sharding passes as an einsum-like factor mapping
    (see `OpShardingRule`): which operand and result dimensions share a factor,
    which factors are reductions (sharding them leaves a partial result), which
    must stay whole, and through which operands a partial value may flow. One
    generic propagation and partitioning algorithm works from these rules;
    supporting a new op means implementing this interface.

    Ops whose local computation is not simply "the same op on local pieces"
    (an embedding lookup into a vocabulary-sharded table, a slice of a sharded
    dimension) override `partitionOp`.
  }];
  let methods = [
    InterfaceMethod<
      "Returns the factor rule of this op.",
      "::distopt::dist::OpShardingRule", "getShardingRule", (ins)>,
    InterfaceMethod<[{
        Emits the local computation of this op, given the local operands and
        the shardings chosen for operands and results. Returns failure with a
        diagnostic if the combination cannot be partitioned. The default clones
        the op with local result types.
      }],
      "::llvm::LogicalResult", "partitionOp",
      (ins "::distopt::dist::PartitionContext &":$ctx,
           "::mlir::ValueRange":$localOperands,
           "::llvm::ArrayRef<::distopt::dist::ShardingAttr>":$operandShardings,
           "::llvm::ArrayRef<::distopt::dist::ShardingAttr>":$resultShardings,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$localResults),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        return ::distopt::dist::partitionByCloning($_op, ctx, localOperands,
            resultShardings, localResults);
      }]>
  ];
}

#endif // DIST_SHARDING_RULE_INTERFACE_TD
