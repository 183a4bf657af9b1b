//===- ShardingRule.cpp - einsum-like factor rules of ops -------*- C++ -*-===//
#include "distopt/Dialect/Dist/IR/ShardingRule.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace distopt::dist;

int64_t OpShardingRule::addFactor(int64_t size, FactorKind kind,
                                  ReductionKind reduction) {
  factors.push_back({size, kind, reduction});
  return factors.size() - 1;
}

static ArrayRef<int64_t> shapeOf(Value v) {
  if (auto t = dyn_cast<RankedTensorType>(v.getType()))
    return t.getShape();
  return {};
}

OpShardingRule OpShardingRule::elementwise(Operation *op) {
  OpShardingRule rule;
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  int64_t rank = out.size();
  SmallVector<int64_t> resultFactors;
  for (int64_t d = 0; d < rank; ++d)
    resultFactors.push_back(rule.addFactor(out[d]));
  for (Value operand : op->getOperands()) {
    ArrayRef<int64_t> shape = shapeOf(operand);
    TensorFactors tf(shape.size());
    int64_t lead = rank - shape.size();
    for (int64_t d = 0, e = shape.size(); d < e; ++d) {
      bool broadcast = shape[d] == 1 && out[d + lead] != 1;
      if (!broadcast)
        tf[d].push_back(resultFactors[d + lead]);
    }
    rule.operands.push_back(std::move(tf));
  }
  for (Value result : op->getResults()) {
    TensorFactors tf(shapeOf(result).size());
    for (int64_t d = 0; d < rank; ++d)
      tf[d].push_back(resultFactors[d]);
    rule.results.push_back(std::move(tf));
  }
  rule.linearOperands.assign(op->getNumOperands(), false);
  return rule;
}

OpShardingRule OpShardingRule::allWhole(Operation *op) {
  OpShardingRule rule;
  auto addTensor = [&](Value v) {
    TensorFactors tf;
    for (int64_t s : shapeOf(v))
      tf.push_back({rule.addFactor(s, FactorKind::Whole)});
    return tf;
  };
  for (Value v : op->getOperands())
    rule.operands.push_back(addTensor(v));
  for (Value v : op->getResults())
    rule.results.push_back(addTensor(v));
  rule.linearOperands.assign(op->getNumOperands(), false);
  return rule;
}

void OpShardingRule::setPartialFlow(PartialFlow flow,
                                    ArrayRef<unsigned> linear) {
  partialFlow = flow;
  linearOperands.assign(operands.size(), false);
  for (unsigned i : linear)
    if (i < linearOperands.size())
      linearOperands[i] = true;
}

void OpShardingRule::setAddend(unsigned operand) {
  if (addends.size() < operands.size())
    addends.resize(operands.size(), false);
  if (operand < addends.size())
    addends[operand] = true;
}

int64_t OpShardingRule::dimWithMajorFactor(const TensorFactors &t,
                                           int64_t factor) {
  for (auto [d, fs] : llvm::enumerate(t))
    if (!fs.empty() && fs.front() == factor)
      return d;
  return -1;
}

int64_t OpShardingRule::dimContaining(const TensorFactors &t, int64_t factor) {
  for (auto [d, fs] : llvm::enumerate(t))
    if (llvm::is_contained(fs, factor))
      return d;
  return -1;
}

std::optional<std::string> OpShardingRule::check(Operation *op) const {
  auto checkTensors = [&](ValueRange values, ArrayRef<TensorFactors> tensors,
                          StringRef what) -> std::optional<std::string> {
    if (values.size() != tensors.size())
      return (Twine("rule lists ") + Twine(tensors.size()) + " " + what +
              "s but the op has " + Twine(values.size()))
          .str();
    for (auto [i, pair] : llvm::enumerate(llvm::zip(values, tensors))) {
      auto [v, tf] = pair;
      ArrayRef<int64_t> shape = shapeOf(v);
      if (shape.size() != tf.size())
        return (Twine(what) + " " + Twine(i) + " has rank " +
                Twine(shape.size()) + " but the rule maps " + Twine(tf.size()) +
                " dimensions")
            .str();
      for (auto [d, fs] : llvm::enumerate(tf)) {
        if (ShapedType::isDynamic(shape[d]) || fs.empty())
          continue;
        int64_t prod = 1;
        for (int64_t f : fs)
          prod *= factors[f].size;
        if (prod != shape[d])
          return (Twine(what) + " " + Twine(i) + " dimension " + Twine(d) +
                  " has extent " + Twine(shape[d]) +
                  " but its factors multiply to " + Twine(prod))
              .str();
      }
    }
    return std::nullopt;
  };
  if (auto err = checkTensors(op->getOperands(), operands, "operand"))
    return err;
  return checkTensors(op->getResults(), results, "result");
}

static std::string factorName(int64_t f) {
  static const char *letters = "ijklmnopqrstuvwxyzabcdefgh";
  if (f < 26)
    return std::string(1, letters[f]);
  return "f" + std::to_string(f);
}

void OpShardingRule::print(raw_ostream &os) const {
  auto printTensors = [&](ArrayRef<TensorFactors> tensors) {
    os << "(";
    llvm::interleaveComma(tensors, os, [&](const TensorFactors &tf) {
      os << "[";
      llvm::interleaveComma(tf, os, [&](const SmallVector<int64_t, 2> &fs) {
        if (fs.empty())
          os << "_";
        for (int64_t f : fs)
          os << factorName(f);
      });
      os << "]";
    });
    os << ")";
  };
  printTensors(operands);
  os << " -> ";
  printTensors(results);
  os << " {";
  llvm::interleaveComma(
      llvm::seq<int64_t>(0, factors.size()), os,
      [&](int64_t f) { os << factorName(f) << "=" << factors[f].size; });
  os << "}";
  auto printKind = [&](FactorKind kind, StringRef label) {
    SmallVector<int64_t> fs;
    for (auto [i, f] : llvm::enumerate(factors))
      if (f.kind == kind)
        fs.push_back(i);
    if (fs.empty())
      return;
    os << " " << label << "={";
    llvm::interleaveComma(fs, os, [&](int64_t f) { os << factorName(f); });
    os << "}";
  };
  printKind(FactorKind::Reduction, "reduction");
  printKind(FactorKind::Whole, "whole");
  if (partialFlow != PartialFlow::None) {
    os << (partialFlow == PartialFlow::AllLinear ? " partial=all("
                                                 : " partial=one(");
    bool first = true;
    for (auto [i, lin] : llvm::enumerate(linearOperands)) {
      if (!lin)
        continue;
      if (!first)
        os << ", ";
      os << i;
      first = false;
    }
    os << ")";
  }
  if (llvm::is_contained(addends, true)) {
    os << " addends={";
    bool first = true;
    for (auto [i, a] : llvm::enumerate(addends)) {
      if (!a)
        continue;
      os << (first ? "" : ", ") << i;
      first = false;
    }
    os << "}";
  }
}
