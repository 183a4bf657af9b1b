//===- Labels.h - check a cross-entropy step's labels -----------*- C++ -*-===//
#ifndef DISTOPT_TRAINER_LABELS_H
#define DISTOPT_TRAINER_LABELS_H

#include "distrt/tensor.h"

#include "llvm/Support/Error.h"

namespace distopt {

/// Checks labels of a cross-entropy step: every one in [0, classes) or the
/// ignore index; the error names the first bad one and its position.
llvm::Error checkLabels(const distrt::Tensor &labels, int64_t classes,
                        int64_t ignoreIndex);

} // namespace distopt

#endif // DISTOPT_TRAINER_LABELS_H
