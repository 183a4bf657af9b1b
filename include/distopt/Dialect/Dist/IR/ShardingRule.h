//===- ShardingRule.h - einsum-like factor rules of ops ---------*- C++ -*-===//
//
// An OpShardingRule describes an op to the sharding passes. The op's iteration
// space is a set of factors (think einsum letters); every dimension of every
// operand and result is made of zero or more factors, major first. Sharding a
// factor over a mesh axis shards every dimension it appears in (as that
// dimension's major factor). A reduction factor appears in operands only:
// sharding it leaves the result partial. A "whole" factor must not be
// sharded (a softmax axis, a convolution window).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_DIST_IR_SHARDINGRULE_H
#define DISTOPT_DIALECT_DIST_IR_SHARDINGRULE_H

#include "distopt/Dialect/Dist/IR/DistAttrs.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

namespace distopt::dist {

enum class FactorKind : uint8_t { Parallel, Reduction, Whole };

struct Factor {
  int64_t size = 1;
  FactorKind kind = FactorKind::Parallel;
  ReductionKind reduction = ReductionKind::Sum; // for Reduction factors
};

/// For one tensor: per dimension, its factors (major first).
using TensorFactors = llvm::SmallVector<llvm::SmallVector<int64_t, 2>>;

/// How partial values may flow through the op without being reduced first.
enum class PartialFlow : uint8_t {
  None,      // every operand must be reduced first
  AllLinear, // linear in its linear operands jointly (add): all of them partial
  OneLinear, // multilinear (mul, matmul): exactly one linear operand partial
};

class OpShardingRule {
public:
  llvm::SmallVector<Factor> factors;
  llvm::SmallVector<TensorFactors> operands;
  llvm::SmallVector<TensorFactors> results;
  PartialFlow partialFlow = PartialFlow::None;
  /// Per operand: may a partial value flow through it (see PartialFlow)?
  llvm::SmallVector<bool> linearOperands;
  /// Operands added to the op's reduced value after the reduction (a
  /// convolution's bias). An operand that lacks a sharded sum-reduction
  /// factor is otherwise taken as replicated (a scale, a zero point, gather
  /// indices); an addend must then hold a partial sum as well, or every
  /// device adds it once. Empty means none.
  llvm::SmallVector<bool> addends;

  int64_t addFactor(int64_t size, FactorKind kind = FactorKind::Parallel,
                    ReductionKind reduction = ReductionKind::Sum);

  /// Element-wise over broadcast operands: one factor per result dimension;
  /// operand dimensions of extent 1 that broadcast take no factor.
  static OpShardingRule elementwise(mlir::Operation *op);
  /// Every dimension of every operand and result whole: nothing may be
  /// sharded (the op runs on replicated data).
  static OpShardingRule allWhole(mlir::Operation *op);

  /// Marks `op` as linear in `operand`s (partial sums may flow through).
  void setPartialFlow(PartialFlow flow, llvm::ArrayRef<unsigned> linear);
  /// Marks operand `operand` as added after the reduction (see `addends`).
  void setAddend(unsigned operand);
  bool isAddend(unsigned operand) const {
    return operand < addends.size() && addends[operand];
  }

  /// The dimension of tensor `t` whose major factor is `factor`, or -1.
  static int64_t dimWithMajorFactor(const TensorFactors &t, int64_t factor);
  /// The dimension of tensor `t` that contains `factor` at any position, or -1.
  static int64_t dimContaining(const TensorFactors &t, int64_t factor);

  /// Consistency check: factor sizes multiply to each dimension's extent
  /// (ignoring dynamic dims). Returns a message on failure.
  std::optional<std::string> check(mlir::Operation *op) const;

  /// Printed form, e.g. `([i, k], [k, j]) -> ([i, j]) {i=4, j=8, k=16}
  /// reduction={k}`.
  void print(llvm::raw_ostream &os) const;
};

} // namespace distopt::dist

#endif // DISTOPT_DIALECT_DIST_IR_SHARDINGRULE_H
