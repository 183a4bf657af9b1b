//===- DistAttrs.h - placements and the sharding attribute ------*- C++ -*-===//
#ifndef DISTOPT_DIALECT_DIST_IR_DISTATTRS_H
#define DISTOPT_DIALECT_DIST_IR_DISTATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/Hashing.h"

#include "distopt/Dialect/Dist/IR/DistDialect.h"
#include "distopt/Dialect/Dist/IR/DistEnums.h.inc"

namespace distopt::dist {

class MeshOp;

/// The placement of a tensor on one mesh axis.
struct Placement {
  enum class Kind : uint8_t { Open, Replicate, Shard, Partial };
  Kind kind = Kind::Open;
  int64_t dim = 0;                              // for Shard
  ReductionKind reduction = ReductionKind::Sum; // for Partial
  /// For Shard: the size of each device's piece, in the axis's order, when
  /// the user gives them (heterogeneous devices); null: as even as possible.
  mlir::DenseI64ArrayAttr sizes;

  static Placement open() { return {}; }
  static Placement replicate() {
    return {Kind::Replicate, 0, ReductionKind::Sum, {}};
  }
  static Placement shard(int64_t d, mlir::DenseI64ArrayAttr sizes = {}) {
    return {Kind::Shard, d, ReductionKind::Sum, sizes};
  }
  static Placement partial(ReductionKind r) {
    return {Kind::Partial, 0, r, {}};
  }

  bool isOpen() const { return kind == Kind::Open; }
  bool isReplicate() const { return kind == Kind::Replicate; }
  bool isShard() const { return kind == Kind::Shard; }
  bool isPartial() const { return kind == Kind::Partial; }
  /// Replicate, or still open (which partitions as replicate).
  bool isReplicateOrOpen() const { return isOpen() || isReplicate(); }
  bool isShardOf(int64_t d) const { return isShard() && dim == d; }

  /// A shard with explicit piece sizes.
  bool hasSizes() const { return isShard() && sizes; }

  bool operator==(const Placement &o) const {
    if (kind != o.kind)
      return false;
    if (kind == Kind::Shard)
      return dim == o.dim && sizes == o.sizes;
    if (kind == Kind::Partial)
      return reduction == o.reduction;
    return true;
  }
  bool operator!=(const Placement &o) const { return !(*this == o); }

  /// Short printed form: `S(1)`, `S(1, sizes=[96, 32])`, `R`, `P(sum)`, `?`.
  std::string str() const;
};

inline llvm::hash_code hash_value(const Placement &p) {
  return llvm::hash_combine(static_cast<int>(p.kind), p.isShard() ? p.dim : 0,
                            p.isPartial() ? static_cast<int>(p.reduction) : 0,
                            p.hasSizes() ? p.sizes.getAsOpaquePointer()
                                         : nullptr);
}

} // namespace distopt::dist

#define GET_ATTRDEF_CLASSES
#include "distopt/Dialect/Dist/IR/DistAttrs.h.inc"

#endif // DISTOPT_DIALECT_DIST_IR_DISTATTRS_H
