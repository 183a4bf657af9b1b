//===- Experts.cpp - a mixture of experts' einsums, found -------*- C++ -*-===//
#include "distopt/Plan/Experts.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::plan;

Value distopt::plan::weightOperand(Value v) {
  while (auto annotate = v.getDefiningOp<dist::AnnotateOp>())
    v = annotate.getInput();
  return isa_and_nonnull<nn::WeightOp>(v.getDefiningOp()) ? v : Value();
}

std::optional<ExpertEinsum> distopt::plan::expertEinsum(nn::EinsumOp einsum) {
  std::string error;
  auto eq = nn::EinsumEquation::parse(einsum.getEquation(), error);
  if (!eq)
    return std::nullopt;
  for (auto [i, v] : llvm::enumerate(einsum.getInputs())) {
    const std::string &term = eq->inputs[i];
    if (!weightOperand(v) || term.size() < 2 ||
        eq->output.find(term[0]) == std::string::npos)
      continue;
    for (auto [j, other] : llvm::enumerate(eq->inputs))
      if (j != i && other.find(term[0]) != std::string::npos)
        return ExpertEinsum{einsum, *eq, static_cast<unsigned>(i), term[0]};
  }
  return std::nullopt;
}

SmallVector<ExpertEinsum> distopt::plan::findExpertEinsums(func::FuncOp func) {
  SmallVector<ExpertEinsum> found;
  func.walk([&](nn::EinsumOp op) {
    if (auto x = expertEinsum(op))
      found.push_back(*x);
  });
  return found;
}

bool distopt::plan::feedsCombine(const ExpertEinsum &x) {
  int64_t dim = x.eq.output.find(x.expert);
  for (OpOperand &use : x.op.getResult().getUses()) {
    auto einsum = dyn_cast<nn::EinsumOp>(use.getOwner());
    if (!einsum)
      continue;
    std::string error;
    auto eq = nn::EinsumEquation::parse(einsum.getEquation(), error);
    if (eq && eq->output.find(eq->inputs[use.getOperandNumber()][dim]) ==
                  std::string::npos)
      return true;
  }
  return false;
}

bool distopt::plan::fromExperts(
    Value v, const llvm::DenseMap<Operation *, ExpertEinsum> &experts) {
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Operation *, 16> seen;
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def).second || seen.size() > 64)
      continue;
    if (experts.count(def))
      return true;
    if (isa<nn::EinsumOp>(def))
      continue;
    for (Value operand : def->getOperands())
      if (operand.getType() == v.getType())
        work.push_back(operand);
  }
  return false;
}
