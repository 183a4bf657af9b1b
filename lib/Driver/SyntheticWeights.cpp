//===- SyntheticWeights.cpp - values for weights that have none -*- C++ -*-===//
#include "distopt/Driver/SyntheticWeights.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

using namespace mlir;

/// A uniform value in [-1, 1) from a name and an index (splitmix64).
static double unitValue(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / static_cast<double>(1ULL << 52) - 1.0;
}

LogicalResult distopt::materializeSyntheticWeights(ModuleOp module,
                                                   StringRef dir) {
  SmallVector<nn::WeightOp> pending;
  module.walk([&](nn::WeightOp w) {
    if (w.getFile().empty())
      pending.push_back(w);
  });
  if (pending.empty())
    return success();
  SmallString<256> path(dir);
  llvm::sys::fs::make_absolute(path);
  llvm::sys::path::append(path, "synthetic-weights.bin");
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return module.emitError("cannot write synthetic weights to ")
           << path << ": " << ec.message();
  uint64_t offset = 0;
  Builder b(module.getContext());
  for (nn::WeightOp w : pending) {
    auto type = w.getResult().getType();
    Type et = type.getElementType();
    uint64_t seed = llvm::hash_value(w.getName());
    int64_t n = type.getNumElements();
    // Scaled like a default initialiser so activations stay moderate.
    double scale = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(
                             1, type.getRank() ? type.getDimSize(0) : 1)));
    for (int64_t i = 0; i < n; ++i) {
      double v = unitValue(seed, i);
      if (et.isF32()) {
        float f = static_cast<float>(v * scale);
        os.write(reinterpret_cast<const char *>(&f), sizeof(f));
      } else if (et.isF64()) {
        double d = v * scale;
        os.write(reinterpret_cast<const char *>(&d), sizeof(d));
      } else if (et.isInteger(64)) {
        int64_t x = static_cast<int64_t>((v + 1) * 2);
        os.write(reinterpret_cast<const char *>(&x), sizeof(x));
      } else if (et.isInteger(32)) {
        int32_t x = static_cast<int32_t>((v + 1) * 2);
        os.write(reinterpret_cast<const char *>(&x), sizeof(x));
      } else if (et.isInteger(1)) {
        char x = v > 0 ? 1 : 0;
        os.write(&x, 1);
      } else {
        return w.emitError("cannot make synthetic values of type ") << et;
      }
    }
    w.setFileAttr(b.getStringAttr(path));
    w.setOffsetAttr(b.getI64IntegerAttr(offset));
    offset += n * (et.isInteger(1) ? 1 : et.getIntOrFloatBitWidth() / 8);
  }
  return success();
}
