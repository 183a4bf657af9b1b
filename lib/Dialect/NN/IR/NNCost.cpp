//===- NNCost.cpp - how much work an nn op does -----------------*- C++ -*-===//
#include "distopt/Dialect/NN/IR/NNCost.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include <algorithm>
#include <map>

using namespace mlir;

double distopt::nn::estimateFlops(Operation *op) {
  if (auto mm = dyn_cast<MatMulOp>(op)) {
    auto a = mm.getLhs().getType();
    auto c = mm.getResult().getType();
    if (!a.hasStaticShape() || !c.hasStaticShape())
      return 0;
    return 2.0 * c.getNumElements() * a.getShape().back();
  }
  if (auto conv = dyn_cast<ConvOp>(op)) {
    auto w = conv.getWeight().getType();
    auto y = conv.getResult().getType();
    if (!w.hasStaticShape() || !y.hasStaticShape() || w.getDimSize(0) == 0)
      return 0;
    return 2.0 * y.getNumElements() * (w.getNumElements() / w.getDimSize(0));
  }
  if (auto es = dyn_cast<EinsumOp>(op)) {
    // A multiply-add per point of the space all letters span.
    std::map<char, int64_t> extent;
    SmallVector<StringRef> terms;
    es.getEquation().split("->").first.split(terms, ',');
    for (auto [term, v] : llvm::zip(terms, es.getInputs())) {
      auto t = cast<RankedTensorType>(v.getType());
      if (!t.hasStaticShape() || term.size() != size_t(t.getRank()))
        return 0;
      for (auto [c, s] : llvm::zip(term, t.getShape()))
        extent[c] = s;
    }
    double points = 1;
    for (auto &[c, s] : extent)
      points *= s;
    return 2.0 * points;
  }
  double n = 0;
  for (Value r : op->getResults())
    if (auto t = dyn_cast<RankedTensorType>(r.getType());
        t && t.hasStaticShape())
      n += t.getNumElements();
  return n;
}

int64_t distopt::nn::tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  Type et = t.getElementType();
  int64_t width = et.isIntOrFloat()
                      ? std::max<int64_t>(1, et.getIntOrFloatBitWidth() / 8)
                      : 4;
  return t.getNumElements() * width;
}
