//===- Roll.h - a gather that rolls a dimension ----------------*- C++ -*-===//
//
// A roll by s along a dimension of extent n is an nn.gather along it with
// the constant indices (i - s) mod n: result[i] = input[(i - s) mod n]. Its
// gradient is the opposite roll, and where the dimension is split into
// pieces over one mesh axis and s is a whole number of pieces, its local form
// is one dist.collective_permute (ring attention passes K/V blocks so).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DIALECT_NN_IR_ROLL_H
#define DISTOPT_DIALECT_NN_IR_ROLL_H

#include "distopt/Dialect/NN/IR/NNOps.h"

#include <optional>

namespace distopt::nn {

/// The shift s when `op` is a roll (constant 1-D indices (i - s) mod n over
/// the whole extent n of its axis), in [0, n); nullopt otherwise.
std::optional<int64_t> rollShift(GatherOp op);

/// `input` rolled by `shift` along `axis` (a gather with constant indices).
mlir::Value createRoll(mlir::OpBuilder &b, mlir::Location loc,
                       mlir::Value input, int64_t axis, int64_t shift);

} // namespace distopt::nn

#endif // DISTOPT_DIALECT_NN_IR_ROLL_H
