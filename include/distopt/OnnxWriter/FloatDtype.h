//===- FloatDtype.h - a saved model's float dtype ----------------*- C++ -*-===//
//
// dist-train --save-dtype: the trained model written in f32, bf16 or f16,
// whatever dtype it was exported or trained in. Values are rounded to
// nearest even; the graph's float tensors (inputs, outputs, value infos,
// constants, Cast targets) change with them, so the file is a model in that
// dtype, as torch's `model.to(dtype)` would export it.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_ONNXWRITER_FLOATDTYPE_H
#define DISTOPT_ONNXWRITER_FLOATDTYPE_H

#include "distrt/dtype.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <optional>
#include <string>

namespace onnx {
class ModelProto;
class TensorProto;
} // namespace onnx

namespace distopt {

/// The dtype --save-dtype names: f32, bf16 or f16; std::nullopt otherwise.
std::optional<distrt::DType> parseSaveDtype(llvm::StringRef name);

/// Whether `dtype` is one of the floats a model converts between (f32,
/// bf16, f16; f64 stays as it is).
bool isConvertibleFloat(distrt::DType dtype);

/// `n` values of float dtype `from` at `src`, as `to`'s bytes (round to
/// nearest even).
std::string convertFloats(const void *src, distrt::DType from,
                          distrt::DType to, int64_t n);

/// Converts every f32/bf16/f16 tensor type and value of `model`'s graph to
/// `to`: initializers (those with data in the proto, or in external files
/// relative to `modelDir`; each becomes inline raw data), graph inputs,
/// outputs and value infos, Constant and ConstantOfShape values, Cast's
/// `to` and the `dtype` of the ops that make tensors. Initializers named in
/// `skip` are left alone (the caller writes them).
llvm::Error
convertFloatGraph(onnx::ModelProto &model, distrt::DType to,
                  llvm::StringRef modelDir,
                  const std::function<bool(const std::string &)> &skip);

} // namespace distopt

#endif // DISTOPT_ONNXWRITER_FLOATDTYPE_H
