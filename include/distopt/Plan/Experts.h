//===- Experts.h - a mixture of experts' einsums, found ---------*- C++ -*-===//
//
// GShard writes a mixture of experts as einsums over one tensor of all the
// experts' weights with a leading expert dimension: dispatch
// `gsec,gsd->gecd`, the experts' FFN `gecd,edf->gecf` and `gecf,efd->gecd`,
// combine `gsec,gecd->gsd`. Expert parallelism (the `ep` preset), tensor
// parallelism inside the experts (the `tp` preset) and the report read that
// structure from here.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_PLAN_EXPERTS_H
#define DISTOPT_PLAN_EXPERTS_H

#include "distopt/Dialect/NN/IR/EinsumEquation.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>

namespace distopt::plan {

/// Where an nn.einsum of a mixture of experts reads an experts' weight: a
/// weight whose first dimension's letter (the expert) also names a
/// dimension of another operand (the tokens dispatched to each expert) and
/// of the result, as in GShard's `gecd,edf->gecf`.
struct ExpertEinsum {
  mutable nn::EinsumOp op; // an op handle; its accessors are not const
  nn::EinsumEquation eq;
  unsigned weight;
  char expert;
};

/// The nn.weight result `v` reads, looking through the annotations plans
/// put on it; null if `v` is not a weight.
mlir::Value weightOperand(mlir::Value v);

/// `einsum` as an experts' einsum, or nothing.
std::optional<ExpertEinsum> expertEinsum(nn::EinsumOp einsum);

/// Every experts' einsum of `func`, in program order.
llvm::SmallVector<ExpertEinsum> findExpertEinsums(mlir::func::FuncOp func);

/// Whether an einsum that reads `x`'s result directly sums over the expert
/// letter: it combines the experts' outputs back into tokens (in a training
/// step backward reads the result too).
bool feedsCombine(const ExpertEinsum &x);

/// Whether `v` is computed element-wise from an experts' einsum's result
/// (a GELU between the experts' two einsums, however it was written).
bool fromExperts(mlir::Value v,
                 const llvm::DenseMap<mlir::Operation *, ExpertEinsum> &experts);

} // namespace distopt::plan

#endif // DISTOPT_PLAN_EXPERTS_H
