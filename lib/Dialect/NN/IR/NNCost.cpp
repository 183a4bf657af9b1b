//===- NNCost.cpp - how much work an nn op does -----------------*- C++ -*-===//
#include "distopt/Dialect/NN/IR/NNCost.h"
#include "distopt/Dialect/NN/IR/NNFusedOps.h"
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
  if (auto mm = dyn_cast<FusedMatMulOp>(op)) {
    // K: the lhs's columns, or its rows where it is read transposed; the
    // bias and GELU a FLOP per element each, as the ops they stand for.
    auto a = mm.getLhs().getType();
    auto c = mm.getResult().getType();
    if (!a.hasStaticShape() || !c.hasStaticShape() || a.getRank() < 2)
      return 0;
    int64_t k = mm.getTransposeLhs() ? a.getDimSize(a.getRank() - 2)
                                     : a.getShape().back();
    double elements = static_cast<double>(c.getNumElements());
    return (2.0 * k + (mm.getBias() ? 1 : 0) + (mm.getGelu() ? 1 : 0)) *
           elements;
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
  // Asked for every value by every liveness walk and cost estimate: the
  // common element types by their type ids, not the float semantics
  // (getIntOrFloatBitWidth looks those up through an interface).
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return 0;
  int64_t n = 1;
  for (int64_t d : t.getShape()) {
    if (ShapedType::isDynamic(d))
      return 0;
    n *= d;
  }
  Type et = t.getElementType();
  int64_t width;
  if (isa<Float32Type>(et))
    width = 4;
  else if (isa<BFloat16Type, Float16Type>(et))
    width = 2;
  else if (auto i = dyn_cast<IntegerType>(et))
    width = std::max<int64_t>(1, i.getWidth() / 8);
  else if (et.isIntOrFloat())
    width = std::max<int64_t>(1, et.getIntOrFloatBitWidth() / 8);
  else
    width = 4;
  return n * width;
}
