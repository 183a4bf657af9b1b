//===- ShapeUtils.h - shape arithmetic shared by nn ops ---------*- C++ -*-===//
#ifndef DISTOPT_DIALECT_NN_IR_SHAPEUTILS_H
#define DISTOPT_DIALECT_NN_IR_SHAPEUTILS_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

namespace distopt::nn {

/// Numpy broadcast of two shapes; failure if they do not broadcast.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Shape after reducing `axes`.
llvm::SmallVector<int64_t> reducedShape(llvm::ArrayRef<int64_t> shape,
                                        llvm::ArrayRef<int64_t> axes,
                                        bool keepdims);

/// Result shape of numpy matmul; failure if the operands do not multiply.
mlir::FailureOr<llvm::SmallVector<int64_t>>
matmulShape(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Number of indices start, start+step, ... before end.
int64_t sliceExtent(int64_t start, int64_t end, int64_t step);

/// Whether `small` is `big`'s trailing dims after leading 1s: broadcast
/// over `big`'s leading dims only, so that element i of `big` reads element
/// i mod size(small) (attention's mask over its scores).
bool isTrailingBroadcast(llvm::ArrayRef<int64_t> small,
                         llvm::ArrayRef<int64_t> big);

/// Output extent of a sliding window (convolution or pooling).
int64_t windowExtent(int64_t in, int64_t kernel, int64_t stride,
                     int64_t padBegin, int64_t padEnd, int64_t dilation,
                     bool ceilMode);

} // namespace distopt::nn

#endif // DISTOPT_DIALECT_NN_IR_SHAPEUTILS_H
