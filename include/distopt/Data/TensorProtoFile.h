//===- TensorProtoFile.h - ONNX TensorProto files ----------------*- C++ -*-===//
//
// ONNX test data and training cases store tensors as serialized
// TensorProto messages (input_<i>.pb, output_<i>.pb, labels.pb).
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_DATA_TENSORPROTOFILE_H
#define DISTOPT_DATA_TENSORPROTOFILE_H

#include "distrt/tensor.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace distopt {

/// Reads an ONNX TensorProto file; `name` (if given) receives the tensor's
/// name field. Errors name the file: not a TensorProto, an element type
/// without a dtype, data that does not fit the dims (a sequence or optional
/// value), external data.
llvm::Expected<distrt::Tensor> readTensorProto(llvm::StringRef path,
                                               std::string *name = nullptr);

/// Writes `tensor` as a TensorProto named `name` (raw_data, the layout of
/// the ONNX test cases' output_<i>.pb) into `path`.
llvm::Error writeTensorProto(llvm::StringRef path, llvm::StringRef name,
                             const distrt::Tensor &tensor);

} // namespace distopt

#endif // DISTOPT_DATA_TENSORPROTOFILE_H
