//===- RunFolder.h - a run's inputs and outputs as ONNX test files -*- C++ -*-===//
//
// dist-run --save-outputs DIR writes what a run read and produced in the
// layout of an ONNX test data set (input_<i>.pb, output_<i>.pb), so its
// results can be compared with another runtime's (onnx.numpy_helper reads
// them) and the same inputs fed again (dist-run --inputs DIR).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DATA_RUNFOLDER_H
#define DISTOPT_DATA_RUNFOLDER_H

#include "distrt/launcher.h"
#include "distrt/tensor.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <vector>

namespace distopt {

/// Whether a run may write its files into `dir`: absent (its parent a
/// writable directory) or an empty directory. Checked before compiling.
llvm::Error checkRunFolderTarget(llvm::StringRef dir);

/// Writes microbatch j's inputs and outputs into `dir` (created), or into
/// `dir`/micro_<j>/ when there are several, as input_<i>.pb and
/// output_<i>.pb named after the tensors.
llvm::Error
writeRunFolder(llvm::StringRef dir,
               llvm::ArrayRef<std::vector<distrt::NamedTensor>> inputs,
               llvm::ArrayRef<std::vector<distrt::NamedTensor>> outputs);

} // namespace distopt

#endif // DISTOPT_DATA_RUNFOLDER_H
