//===- RegatherParameters.h - parameters gathered again for backward -*- C++
//-*-===//
//
// A parameter stored split (ZeRO level 3, fsdp) is gathered where forward
// reads it. Kept until backward reads it too, every gathered parameter would
// be live at once, as if it were not split at all. As FSDP and ZeRO-3 do,
// the training step instead gathers it again for backward: the forward copy
// dies after its last forward use. This costs one more all-gather per split
// parameter per step (ZeRO-3's 1.5x the communication of data parallelism).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_TRAINING_REGATHERPARAMETERS_H
#define DISTOPT_TRAINING_REGATHERPARAMETERS_H

#include "mlir/IR/BuiltinOps.h"

namespace distopt {

/// After reshard insertion: every dist.reshard of a parameter (an nn.weight)
/// read both by forward ops and by backward or optimizer ops (`nn.phase`)
/// is copied before its first backward reader, which with the later ones
/// reads the copy; not a compute copy marked dist.gathered_once (ZeRO-1/2
/// keep it whole for the step, as their bf16 weights). Returns how many reshards were copied. The pass
/// dist-regather-parameters runs it.
int64_t regatherParametersForBackward(mlir::ModuleOp module);

} // namespace distopt

#endif // DISTOPT_TRAINING_REGATHERPARAMETERS_H
