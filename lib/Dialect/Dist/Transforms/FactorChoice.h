//===- FactorChoice.h - what one mesh axis does inside one op ---*- C++ -*-===//
//
// Propagation and reshard insertion both reason per op and per mesh axis: the
// axis shards one factor of the op's rule, or nothing, or lets a partial
// value flow through. From that choice follows the placement every operand
// and result has on the axis (its projection); from a tensor's placement
// follows the choice it votes for.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_DIST_TRANSFORMS_FACTORCHOICE_H
#define DISTOPT_DIALECT_DIST_TRANSFORMS_FACTORCHOICE_H

#include "distopt/CostModel/CostModel.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/IR/ShardingRule.h"
#include "mlir/IR/BuiltinOps.h"
#include <optional>

namespace distopt::dist {

struct AxisChoice {
  enum class Kind : uint8_t { None, Factor, PartialFlow };
  Kind kind = Kind::None;
  int64_t factor = -1;         // for Factor
  int64_t partialOperand = -1; // for PartialFlow with a multilinear op
  /// For Factor: explicit piece sizes of the factor, one per device along
  /// the axis, in units of the factor (empty: as even as possible).
  llvm::SmallVector<int64_t, 4> sizes;

  static AxisChoice none() { return {}; }
  static AxisChoice ofFactor(int64_t f, llvm::ArrayRef<int64_t> sizes = {}) {
    AxisChoice c;
    c.kind = Kind::Factor;
    c.factor = f;
    c.sizes.assign(sizes.begin(), sizes.end());
    return c;
  }
  static AxisChoice partial(int64_t operand) {
    AxisChoice c;
    c.kind = Kind::PartialFlow;
    c.partialOperand = operand;
    return c;
  }
  bool operator==(const AxisChoice &o) const {
    return kind == o.kind && factor == o.factor &&
           partialOperand == o.partialOperand && sizes == o.sizes;
  }
  bool operator<(const AxisChoice &o) const {
    return std::tie(kind, factor, partialOperand, sizes) <
           std::tie(o.kind, o.factor, o.partialOperand, o.sizes);
  }
};

/// A tensor of an op: operand `index` or result `index`.
struct TensorRef {
  bool isResult = false;
  unsigned index = 0;
};

/// The rule of `op`: its ShardingRuleOpInterface rule, or the identity rule
/// of `dist.annotate`. std::nullopt for ops the sharding passes do not know.
std::optional<OpShardingRule> getRule(mlir::Operation *op);

/// Checks that `choice` can be made on an axis of size `axisSize`: the factor
/// is not whole, is at least as large as the axis, and every tensor can
/// represent the result (the factor is the major one of its dimension).
bool isValidChoice(const OpShardingRule &rule, const AxisChoice &choice,
                   int64_t axisSize);

/// The placement tensor `t` has on an axis when the op makes `choice`;
/// std::nullopt if `t` cannot represent it. `ctx` makes explicit piece
/// sizes (for choices that have them).
std::optional<Placement> project(const OpShardingRule &rule,
                                 const AxisChoice &choice, TensorRef t,
                                 mlir::MLIRContext *ctx = nullptr);

/// The choice a tensor with placement `p` on an axis votes for, if any.
std::optional<AxisChoice> voteOf(const OpShardingRule &rule, TensorRef t,
                                 Placement p);

/// Bytes of one element of `type` (bit widths rounded up to bytes).
int64_t elementBytes(mlir::Type elementType);

/// The links of `mesh`'s axes under `machine`, or, when it is null, under
/// the profile a pass's `machine` option names (a built-in name or a JSON
/// file; empty: the default). A profile that cannot be read is an error on
/// `module`.
mlir::FailureOr<cost::MeshCost>
meshCostFor(mlir::ModuleOp module, MeshOp mesh,
            std::shared_ptr<const cost::MachineProfile> machine,
            llvm::StringRef option);

/// The mesh the sharding passes use for `module`: its only dist.mesh.
/// Fails with a diagnostic when there is none or several.
mlir::FailureOr<MeshOp> getModuleMesh(mlir::ModuleOp module);

} // namespace distopt::dist

#endif // DISTOPT_DIALECT_DIST_TRANSFORMS_FACTORCHOICE_H
