//===- TrainedModelWriter.h - write a trained model as ONNX -----*- C++ -*-===//
//
// dist-train --save: the model file again, its initializers replaced by the
// trained parameters, optionally with LoRA adapters folded into their base
// weights (LoraMerge.h); a single-device model any ONNX runtime loads.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_ONNXWRITER_TRAINEDMODELWRITER_H
#define DISTOPT_ONNXWRITER_TRAINEDMODELWRITER_H

#include "distrt/launcher.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <vector>

namespace distopt {

/// Whether saveTrainedModel may write `out`: not a directory, in an
/// existing writable directory. Checked before training.
llvm::Error checkTrainedModelTarget(llvm::StringRef out);

/// Writes the ONNX model with its initializers replaced by `trained`
/// (matched by name; optimizer states ignored). A trained float tensor is
/// written in its initializer's element type (an f32 master of a bf16
/// weight rounded to nearest even); any other must have that type. With
/// `saveDtype`, the whole float graph is written in that dtype
/// (FloatDtype.h). Tensors go to an external-data file next to `out` when
/// they exceed 1 GiB in all. With `mergeLora`, LoRA adapters are folded
/// into their base weights and `*mergedLayers` says how many.
llvm::Error saveTrainedModel(llvm::StringRef modelPath,
                             const std::vector<distrt::NamedTensor> &trained,
                             llvm::StringRef out, bool mergeLora = false,
                             int *mergedLayers = nullptr,
                             std::optional<distrt::DType> saveDtype = {});

} // namespace distopt

#endif // DISTOPT_ONNXWRITER_TRAINEDMODELWRITER_H
