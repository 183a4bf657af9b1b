//===- Microbatches.h - split a batch into microbatches and back -*- C++
//-*-===//
#ifndef DISTOPT_DATA_MICROBATCHES_H
#define DISTOPT_DATA_MICROBATCHES_H

#include "distrt/launcher.h"

#include "llvm/Support/Error.h"

#include <vector>

namespace distopt {

/// Splits every tensor along dimension 0 into `parts` equal pieces; an
/// error names a tensor whose rows do not divide.
llvm::Expected<std::vector<std::vector<distrt::NamedTensor>>>
splitBatch(const std::vector<distrt::NamedTensor> &tensors, int64_t parts);

/// Joins microbatches' tensors along dimension 0.
llvm::Expected<std::vector<distrt::NamedTensor>>
concatBatch(const std::vector<std::vector<distrt::NamedTensor>> &parts);

} // namespace distopt

#endif // DISTOPT_DATA_MICROBATCHES_H
