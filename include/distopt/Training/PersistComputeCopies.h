//===- PersistComputeCopies.h - compute copies kept as state ----*- C++ -*-===//
//
// A mixed-precision training step reads each f32 master through a cast to
// the compute dtype, made anew every step. dist-persist-compute-copies
// keeps that cast as state instead (Megatron's bf16 weights beside its f32
// main params): forward reads a variable the step writes from the updated
// master. See docs/training.md, "Mixed precision".
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINING_PERSISTCOMPUTECOPIES_H
#define DISTOPT_TRAINING_PERSISTCOMPUTECOPIES_H

#include "mlir/IR/BuiltinOps.h"

namespace distopt {

/// After propagation and dist-tie-updates-to-state, in every function that
/// updates state: each narrowing nn.cast of a trained parameter (an
/// nn.weight whose key a result `nn.updates`) at the top of the function
/// becomes an nn.variable "<key>/compute_copy" marked `nn.copy_of` = key,
/// laid out as the cast was; the function gains a result updating it, the
/// master's next value cast to the copy's dtype. The runtime starts the
/// copy as the master's stored value converted (and a checkpoint restores
/// it from the master's). Returns how many copies were made.
int64_t persistComputeCopies(mlir::ModuleOp module);

} // namespace distopt

#endif // DISTOPT_TRAINING_PERSISTCOMPUTECOPIES_H
