//===- ProgramInputs.h - what the rank programs take ------------*- C++ -*-===//
#ifndef DISTOPT_SESSION_PROGRAMINPUTS_H
#define DISTOPT_SESSION_PROGRAMINPUTS_H

#include "distopt/Data/DataSource.h"
#include "distopt/Session/RankPrograms.h"

#include "distrt/launcher.h"

namespace distopt {

/// Every input any rank's program takes (pipeline stages take different
/// ones), in order of first appearance, with its global shape and, for an
/// integer input that indexes a table (through casts and reshapes to a
/// gather), the table's size as its value bound.
std::vector<InputSpec> programInputs(const Programs &programs);

/// The programs' inputs for one run: read from `input_<i>.pb` files (ONNX
/// TensorProto) in `dir` (inputFolder), or, with an empty `dir`, drawn from
/// `seed` (syntheticInputs).
llvm::Expected<std::vector<distrt::NamedTensor>>
makeInputs(const Programs &programs, llvm::StringRef dir, uint64_t seed);

} // namespace distopt

#endif // DISTOPT_SESSION_PROGRAMINPUTS_H
