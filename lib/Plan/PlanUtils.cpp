//===- PlanUtils.cpp - what plans and presets share -------------*- C++ -*-===//
#include "PlanUtils.h"

#include "distopt/Dialect/Dist/Transforms/Propagation.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include <set>

using namespace mlir;
using namespace distopt;
using namespace distopt::plan;

/// Ops a weight passes through unchanged in content before it is consumed.
static bool isLayoutOp(Operation *op) {
  return isa<nn::TransposeOp, nn::ReshapeOp, nn::CastOp, nn::IdentityOp,
             dist::AnnotateOp>(op);
}

std::vector<WeightUse> distopt::plan::findWeightUses(func::FuncOp func) {
  std::vector<WeightUse> uses;
  func.walk([&](nn::WeightOp weight) {
    SmallVector<Value> work{weight.getResult()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (isLayoutOp(user)) {
          work.push_back(user->getResult(0));
          continue;
        }
        // A convolution's bias follows its weight: split with the output
        // channels (colwise), a partial sum with the input channels
        // (rowwise); styles name the weight, propagation places the bias.
        if (isa<nn::ConvOp>(user) && use.getOperandNumber() == 2)
          continue;
        if (isa<nn::MatMulOp, nn::GatherOp, nn::ConvOp>(user))
          uses.push_back({weight, user, use.getOperandNumber()});
      }
    }
  });
  // In program order (a loop's body in its place).
  DenseMap<Operation *, unsigned> order;
  func.walk<WalkOrder::PreOrder>(
      [&](Operation *op) { order.try_emplace(op, order.size()); });
  std::stable_sort(uses.begin(), uses.end(),
                   [&](const WeightUse &a, const WeightUse &b) {
                     return order.lookup(a.op) < order.lookup(b.op);
                   });
  return uses;
}

std::vector<std::string> distopt::plan::namesOf(const WeightUse &use) {
  std::vector<std::string> names;
  StringRef w = cast<nn::WeightOp>(use.weight).getName();
  names.push_back(w.str());
  if (w.contains('.'))
    names.push_back(w.rsplit('.').first.str());
  std::string path = nn::getNodeModulePath(use.op);
  if (!path.empty())
    names.push_back(path);
  std::string node = nn::getNodeName(use.op);
  if (!node.empty())
    names.push_back(node);
  return names;
}

FailureOr<int64_t> distopt::plan::styleDim(const WeightUse &use,
                                           StringRef style, std::string &why) {
  auto type = cast<RankedTensorType>(use.op->getOperand(use.operand).getType());
  int64_t rank = type.getRank();
  if (auto mm = dyn_cast<nn::MatMulOp>(use.op)) {
    // colwise: the product's output features; rowwise: the contraction.
    if (use.operand == 1) {
      if (style == "colwise" && rank >= 2)
        return rank - 1;
      if (style == "rowwise")
        return rank >= 2 ? rank - 2 : 0;
    } else {
      if (style == "colwise" && rank >= 2)
        return rank - 2;
      if (style == "rowwise")
        return rank - 1;
    }
    why = style == "colwise"
              ? "a colwise matmul weight needs rank 2 or more, this one has "
                "rank " +
                    std::to_string(rank)
              : "style '" + style.str() +
                    "' is for embedding tables (a gather's table); a matmul "
                    "weight takes colwise, rowwise or replicate";
    return failure();
  }
  if (auto gather = dyn_cast<nn::GatherOp>(use.op)) {
    if (use.operand != 0) {
      why = "the weight is the indices of the gather, not its table";
      return failure();
    }
    if (style == "vocab" || style == "rowwise")
      return gather.getAxis();
    if (style == "colwise")
      return rank - 1;
  }
  if (isa<nn::ConvOp>(use.op) && use.operand == 1) {
    if (style == "colwise")
      return 0;
    if (style == "rowwise")
      return 1;
  }
  why = "style '" + style.str() + "' does not fit " +
        use.op->getName().getStringRef().str();
  return failure();
}

dist::ShardingAttr distopt::plan::oneAxisSharding(dist::MeshOp mesh,
                                                  int64_t axis,
                                                  dist::Placement placement) {
  SmallVector<dist::Placement> ps(mesh.getNumAxes(), dist::Placement::open());
  ps[axis] = placement;
  return dist::ShardingAttr::get(
      mesh.getContext(), FlatSymbolRefAttr::get(mesh.getSymNameAttr()), ps);
}

void distopt::plan::annotateOperand(Operation *user, unsigned operand,
                                    dist::ShardingAttr sharding,
                                    int64_t priority, StringRef source) {
  OpBuilder b(user);
  Value v = user->getOperand(operand);
  auto annotate = dist::AnnotateOp::create(b, user->getLoc(), v, sharding,
                                           b.getI64IntegerAttr(priority),
                                           b.getStringAttr(source));
  user->setOperand(operand, annotate.getResult());
}

void distopt::plan::annotateValue(Value v, dist::ShardingAttr sharding,
                                  int64_t priority, StringRef source) {
  OpBuilder b(v.getContext());
  if (auto arg = dyn_cast<BlockArgument>(v))
    b.setInsertionPointToStart(arg.getOwner());
  else
    b.setInsertionPointAfter(v.getDefiningOp());
  auto annotate = dist::AnnotateOp::create(b, v.getLoc(), v, sharding,
                                           b.getI64IntegerAttr(priority),
                                           b.getStringAttr(source));
  v.replaceAllUsesExcept(annotate.getResult(), annotate);
}

FailureOr<llvm::GlobPattern> distopt::plan::compileGlob(StringRef pattern,
                                                        Location loc) {
  // Brace expansions ({q,k,v}_proj) are on; the limit only stops a pattern
  // from expanding into millions of alternatives.
  auto glob = llvm::GlobPattern::create(pattern, /*MaxSubPatterns=*/1024);
  if (!glob)
    return mlir::emitError(loc) << "bad pattern '" << pattern
                                << "': " << llvm::toString(glob.takeError());
  return std::move(*glob);
}

func::FuncOp distopt::plan::mainFunction(ModuleOp module) {
  if (auto f = module.lookupSymbol<func::FuncOp>("main"))
    return f;
  auto funcs = module.getOps<func::FuncOp>();
  if (std::distance(funcs.begin(), funcs.end()) == 1)
    return *funcs.begin();
  module.emitError("plans apply to the function @main (or the only function)");
  return nullptr;
}

dist::MeshOp distopt::plan::requireMesh(ModuleOp module, Location loc,
                                        StringRef what, StringRef axis) {
  auto meshes = module.getOps<dist::MeshOp>();
  if (meshes.empty()) {
    // The example names the axis the caller splits along, when it has one.
    if (axis.empty())
      mlir::emitError(loc) << what
                           << " needs a mesh: pass --mesh (e.g. --mesh tp=2)";
    else
      mlir::emitError(loc) << what << " needs a mesh with axis '" << axis
                           << "': pass --mesh (e.g. --mesh " << axis << "=2)";
    return nullptr;
  }
  return *meshes.begin();
}

int64_t distopt::plan::requireAxis(dist::MeshOp mesh, Location loc,
                                   StringRef name, StringRef what) {
  int64_t idx = mesh.getAxisIndex(name);
  if (idx < 0) {
    InFlightDiagnostic d = mlir::emitError(loc);
    d << what << " uses mesh axis '" << name << "' but the mesh has axes ";
    llvm::interleaveComma(mesh.getAxisNames(), d, [&](Attribute a) {
      d << "'" << cast<StringAttr>(a).getValue() << "'";
    });
  }
  return idx;
}

std::vector<std::string>
distopt::plan::closestNames(StringRef name,
                            const std::vector<std::string> &candidates) {
  std::vector<std::pair<unsigned, std::string>> scored;
  std::set<std::string> seen;
  for (const std::string &c : candidates) {
    if (!seen.insert(c).second)
      continue;
    scored.push_back({name.edit_distance(c, true, 64), c});
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < 3; ++i)
    out.push_back(scored[i].second);
  return out;
}

std::vector<SmallVector<dist::Placement>>
distopt::plan::propagatedPlacementsQuietly(
    ModuleOp module, ArrayRef<Value> values,
    std::shared_ptr<const cost::MachineProfile> machine) {
  ScopedDiagnosticHandler quiet(module.getContext(),
                                [](Diagnostic &) { return success(); });
  auto placements =
      dist::propagatedPlacements(module, values, std::move(machine));
  if (failed(placements))
    return {};
  return std::move(*placements);
}
