//===- DistDialect.cpp - the dist dialect -----------------------*- C++ -*-===//
#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/IR/ShardingRuleInterface.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace distopt::dist;

#include "distopt/Dialect/Dist/IR/DistDialect.cpp.inc"

void DistDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "distopt/Dialect/Dist/IR/DistOps.cpp.inc"
      >();
}

/// Checks `dist.sharding` discardable attributes: on an op, an array with one
/// sharding per result; on a function, per-argument and per-result shardings
/// are checked by the passes that read them.
LogicalResult DistDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() != kShardingAttr)
    return success();
  auto array = dyn_cast<ArrayAttr>(attr.getValue());
  if (!array)
    return op->emitError("'dist.sharding' must be an array with one "
                         "#dist.sharding per result");
  if (array.size() != op->getNumResults())
    return op->emitError("'dist.sharding' has ")
           << array.size() << " entries but the op has " << op->getNumResults()
           << " results";
  for (auto [i, a] : llvm::enumerate(array)) {
    auto sharding = dyn_cast<ShardingAttr>(a);
    if (!sharding)
      return op->emitError("'dist.sharding' entry ")
             << i << " is not a #dist.sharding";
    auto type = dyn_cast<RankedTensorType>(op->getResult(i).getType());
    if (!type)
      return op->emitError("'dist.sharding' on result ")
             << i << " which is not a ranked tensor";
    auto mesh =
        SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, sharding.getMesh());
    if (!mesh)
      return op->emitError("'dist.sharding' refers to unknown mesh ")
             << sharding.getMesh();
    // After partitioning a result's type is the local piece; the global
    // shape is in dist.global_type.
    ArrayRef<int64_t> shape = type.getShape();
    if (auto global = op->getAttrOfType<TypeAttr>(kGlobalTypeAttr))
      if (auto g = dyn_cast<RankedTensorType>(global.getValue()))
        shape = g.getShape();
    if (failed(sharding.verifyFor([&] { return op->emitError(); },
                                  type.getRank(), mesh, shape)))
      return failure();
  }
  return success();
}
