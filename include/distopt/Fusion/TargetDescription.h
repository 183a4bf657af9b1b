//===- TargetDescription.h - which fused forms a target runs ----*- C++ -*-===//
//
// What the kernels of a target accept besides the ops as the model and the
// gradient rules write them (a matmul's operand flags and epilogues, a
// softmax gradient in one kernel), so that dist-fuse-for-target writes only
// forms the target runs (and the
// exporter translates what the IR says). test/unit/e2e/
// FuseForTargetExportTest.cpp runs every form each description claims on
// the host kernels (cpu); test/runtime/cuda_test.cpp runs the same forms on
// the CUDA kernels where a GPU is present.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_FUSION_TARGETDESCRIPTION_H
#define DISTOPT_FUSION_TARGETDESCRIPTION_H

#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace distopt {

struct TargetDescription {
  /// The name `dist-fuse-for-target{target=...}` and the tools use.
  llvm::StringRef name;
  /// Where the target's kernels are, for the pass's description.
  llvm::StringRef kernels;
  /// A 2-D operand read as stored, transposed by a flag (`transpose_lhs`
  /// needs both operands 2-D): the matmul reads a transpose's input.
  bool matmulTransposedOperands = false;
  /// A rank-1 bias (one value per column) added to every row of the product.
  bool matmulBias = false;
  /// The exact GELU applied to the product (after the bias, if any).
  bool matmulGelu = false;
  /// The element types a bias or GELU epilogue takes (the product's).
  bool epilogueF32 = false, epilogueF64 = false;
  /// Softmax's gradient y * (dy - sum(dy * y)) in one kernel
  /// (`softmax_grad`), on every float type.
  bool softmaxGrad = false;
  /// Attention's scale and mask in the softmax and its gradient:
  /// `softmax(where(mask, fill, x * scale))` in one kernel, and the
  /// gradient's `where(mask, 0, g) * scale` in softmax_grad's (a mask of
  /// the scores' trailing dims; a scalar scale, multiplied or divided).
  bool softmaxScaleMask = false;
  /// The exact GELU's gradient as its rule writes it in one kernel
  /// (`gelu_grad`), on every float type.
  bool geluGrad = false;
  /// Cross-entropy over the last dim as the training step builds it, in two
  /// kernels (`cross_entropy_sums`, `cross_entropy_grad`), f32 and f64.
  bool crossEntropy = false;
  /// The softmax, softmax-gradient and cross-entropy kernels read and write
  /// bf16/f16 as stored while computing in f32: a bf16 policy's casts into
  /// and out of its f32 softmax and loss fold into them.
  bool foldHalfCasts = false;
  /// `reduce_sum(x * x)` over every axis (a gradient norm's term) in one
  /// kernel (`sum_squares`), f32 and f64.
  bool sumSquares = false;
  /// `adam_update`, `sgd_update` and `sum_squares` read a bf16/f16 gradient
  /// of an f32 parameter as stored, widening it as they go: a bf16
  /// policy's cast of each gradient to f32 folds into them when they are
  /// all that read it.
  bool optimizerWidensGradients = false;
  /// `adam_update` also writes its new f32 parameter rounded to bf16/f16
  /// (`adam_update_with_copy`): the cast that makes a compute copy kept as
  /// state (dist-persist-compute-copies) folds into the update.
  bool optimizerRoundsCopies = false;

  /// Whether a bias or GELU epilogue may be applied to a product of
  /// element type `t`.
  bool epilogueTakes(mlir::Type t) const {
    return (t.isF32() && epilogueF32) || (t.isF64() && epilogueF64);
  }
};

/// Every target, in a fixed order: cpu, cuda, none.
llvm::ArrayRef<TargetDescription> targetDescriptions();

/// The target named `name`, or null.
const TargetDescription *lookupTargetDescription(llvm::StringRef name);

/// The target a run on `device` (the tools' --device: cpu, cuda, cuda:N)
/// compiles for, or null for a device no target describes.
const TargetDescription *targetForDevice(llvm::StringRef device);

/// "cpu, cuda, none": the names, for diagnostics.
std::string targetNames();

} // namespace distopt

#endif // DISTOPT_FUSION_TARGETDESCRIPTION_H
