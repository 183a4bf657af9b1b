//===- LoraMerge.h - fold LoRA adapters into their base weights -*- C++ -*-===//
//
// A model fine-tuned with LoRA computes, for a linear layer,
//   y = x @ W^T + s * ((x @ A^T) @ B^T)
// (PEFT's export: a `base_layer` MatMul, `lora_A` and `lora_B` MatMuls on
// transposed weights, a Mul by the constant scaling s and an Add). For
// inference the adapter folds into the base weight: W' = W + s * B @ A,
// and the graph keeps only x @ W'^T. See docs/training.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_ONNXWRITER_LORAMERGE_H
#define DISTOPT_ONNXWRITER_LORAMERGE_H

#include "distrt/tensor.h"

#include "llvm/Support/Error.h"

#include <deque>
#include <map>
#include <string>

namespace onnx {
class ModelProto;
}

namespace distopt {

/// Folds every LoRA pattern of `model`'s graph into its base weight. Weight
/// values come from `values` (the trained tensors, by initializer name) or
/// else from the initializer; a merged base weight is put into `values`
/// (backed by `storage`), and the adapters' nodes and initializers leave the
/// graph. Returns how many layers were merged; an error names the layer
/// whose weights cannot be read (external data) or do not fit.
llvm::Expected<int>
mergeLoraAdapters(onnx::ModelProto &model,
                  std::map<std::string, const distrt::Tensor *> &values,
                  std::deque<distrt::Tensor> &storage);

} // namespace distopt

#endif // DISTOPT_ONNXWRITER_LORAMERGE_H
