//===- TargetDescription.cpp - which fused forms a target runs --*- C++ -*-===//
#include "distopt/Fusion/TargetDescription.h"

#include "llvm/ADT/STLExtras.h"

using namespace distopt;

// Both matmul kernels read operands through the transpose flags and apply a
// bias and the exact GELU on f32 and f64 products (runtime/src/matmul_shape.h,
// CheckEpilogue): the host's through BLAS/oneDNN, CUDA's through cuBLASLt.
// Both have a softmax_grad kernel for every float type (kernels_norm.cpp,
// cuda/kernels_norm.cpp), softmax and softmax_grad kernels that apply
// attention's scale and mask, a gelu_grad kernel (kernels_unary.cpp,
// cuda/kernels_elementwise.cpp), and cross-entropy's two kernels. The CUDA
// softmax, softmax_grad and cross-entropy kernels read and write 16-bit
// floats as stored; the host's go through f32 copies (via_f32.h), so on
// the host a folded cast would only move. The host has a sum_squares kernel
// (kernels_reduce.cpp); CUDA has none yet (its reduce_sum runs the norm).
// The host's optimizer updates and sum_squares widen a 16-bit gradient as
// they read it (kernels_optimizer.cpp, kernels_reduce.cpp), and its Adam
// writes a rounded copy of the new parameter; CUDA's read and write one
// type.
static const TargetDescription kTargets[] = {
    {"cpu", "the host kernels (runtime/src/kernels_*.cpp)",
     /*matmulTransposedOperands=*/true, /*matmulBias=*/true,
     /*matmulGelu=*/true, /*epilogueF32=*/true, /*epilogueF64=*/true,
     /*softmaxGrad=*/true, /*softmaxScaleMask=*/true, /*geluGrad=*/true,
     /*crossEntropy=*/true, /*foldHalfCasts=*/false, /*sumSquares=*/true,
     /*optimizerWidensGradients=*/true, /*optimizerRoundsCopies=*/true},
    {"cuda", "the CUDA kernels (runtime/src/cuda/)",
     /*matmulTransposedOperands=*/true, /*matmulBias=*/true,
     /*matmulGelu=*/true, /*epilogueF32=*/true, /*epilogueF64=*/true,
     /*softmaxGrad=*/true, /*softmaxScaleMask=*/true, /*geluGrad=*/true,
     /*crossEntropy=*/true, /*foldHalfCasts=*/true, /*sumSquares=*/false,
     /*optimizerWidensGradients=*/false, /*optimizerRoundsCopies=*/false},
    // No fused form: every op stays as the model wrote it (runs anywhere).
    {"none", "any kernels: nothing fused"},
};

llvm::ArrayRef<TargetDescription> distopt::targetDescriptions() {
  return kTargets;
}

const TargetDescription *distopt::lookupTargetDescription(llvm::StringRef name) {
  for (const TargetDescription &t : kTargets)
    if (t.name == name)
      return &t;
  return nullptr;
}

const TargetDescription *distopt::targetForDevice(llvm::StringRef device) {
  if (device == "cuda" || device.starts_with("cuda:"))
    return lookupTargetDescription("cuda");
  return lookupTargetDescription(device);
}

std::string distopt::targetNames() {
  std::string out;
  for (const TargetDescription &t : kTargets)
    out += (out.empty() ? "" : ", ") + t.name.str();
  return out;
}
