//===- ValueSharding.cpp - read and write the sharding of a value -*- C++
//-*-===//
#include "distopt/Dialect/Dist/Transforms/ValueSharding.h"
#include "distopt/Dialect/Dist/IR/DistAttrNames.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace distopt::dist;

ShardingAttr distopt::dist::getValueSharding(Value v, ShardingAttr fallback) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    if (func && arg.getOwner()->isEntryBlock())
      if (auto s = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                                       kShardingAttr))
        return s;
    return fallback;
  }
  Operation *def = v.getDefiningOp();
  auto array = def->getAttrOfType<ArrayAttr>(kShardingAttr);
  unsigned idx = cast<OpResult>(v).getResultNumber();
  if (!array || idx >= array.size())
    return fallback;
  if (auto s = dyn_cast<ShardingAttr>(array[idx]))
    return s;
  return fallback;
}

void distopt::dist::setValueSharding(Value v, ShardingAttr sharding) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto func =
            dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp()))
      func.setArgAttr(arg.getArgNumber(), kShardingAttr, sharding);
    return;
  }
  Operation *def = v.getDefiningOp();
  SmallVector<Attribute> entries;
  if (auto array = def->getAttrOfType<ArrayAttr>(kShardingAttr))
    entries.assign(array.begin(), array.end());
  ShardingAttr replicated =
      ShardingAttr::getReplicated(sharding.getContext(), sharding.getMesh(),
                                  sharding.getPlacements().size());
  entries.resize(def->getNumResults(), replicated);
  entries[cast<OpResult>(v).getResultNumber()] = sharding;
  def->setAttr(kShardingAttr, ArrayAttr::get(sharding.getContext(), entries));
}

StringRef distopt::dist::getValueCause(Value v) {
  Operation *def = v.getDefiningOp();
  if (!def)
    return "";
  auto array = def->getAttrOfType<ArrayAttr>(kCauseAttr);
  unsigned idx = cast<OpResult>(v).getResultNumber();
  if (!array || idx >= array.size())
    return "";
  if (auto s = dyn_cast<StringAttr>(array[idx]))
    return s.getValue();
  return "";
}

std::string distopt::dist::placementsStr(ShardingAttr sharding) {
  std::string s = "[";
  bool first = true;
  for (const Placement &p : sharding.getPlacements()) {
    s += (first ? "" : ", ") + p.str();
    first = false;
  }
  return s + "]";
}

/// A location as a reader wants it: an ONNX node name, or file:line:col with
/// the file's directory dropped.
static void printShortLoc(Location loc, raw_ostream &os) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    os << "'" << name.getName().getValue() << "'";
    return;
  }
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    StringRef path = file.getFilename().getValue();
    os << path.substr(path.find_last_of('/') + 1) << ":" << file.getLine()
       << ":" << file.getColumn();
    return;
  }
  if (auto fused = dyn_cast<FusedLoc>(loc);
      fused && !fused.getLocations().empty()) {
    for (Location l : fused.getLocations())
      if (isa<NameLoc>(l))
        return printShortLoc(l, os);
    return printShortLoc(fused.getLocations().front(), os);
  }
  loc.print(os);
}

std::string distopt::dist::describeOp(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << op->getName() << " at ";
  printShortLoc(op->getLoc(), os);
  return s;
}

void distopt::dist::setResultAttrs(FunctionOpInterface func, StringRef name,
                                   ArrayRef<Attribute> values) {
  MLIRContext *ctx = func->getContext();
  SmallVector<DictionaryAttr> dicts;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    NamedAttrList attrs(func.getResultAttrDict(i));
    if (i < values.size() && values[i])
      attrs.set(name, values[i]);
    dicts.push_back(attrs.getDictionary(ctx));
  }
  func.setAllResultAttrs(dicts);
}

static bool isSummingLoop(mlir::Operation *op) {
  if (!op || op->getNumOperands() != 0 || op->getNumRegions() != 1 ||
      !op->getRegion(0).hasOneBlock())
    return false;
  mlir::Block &body = op->getRegion(0).front();
  return !body.empty() && body.back().hasTrait<mlir::OpTrait::IsTerminator>() &&
         body.back().getNumOperands() == op->getNumResults() &&
         body.back().getOperandTypes() == op->getResultTypes();
}

mlir::Value distopt::dist::yieldedFor(mlir::Value v) {
  auto res = mlir::dyn_cast<mlir::OpResult>(v);
  if (!res || !isSummingLoop(res.getOwner()))
    return {};
  return res.getOwner()->getRegion(0).front().back().getOperand(
      res.getResultNumber());
}

mlir::Value distopt::dist::loopResultOf(mlir::OpOperand &use) {
  mlir::Operation *term = use.getOwner();
  mlir::Operation *loop = term->getParentOp();
  if (!term->hasTrait<mlir::OpTrait::IsTerminator>() || !isSummingLoop(loop) ||
      &loop->getRegion(0).front().back() != term)
    return {};
  return loop->getResult(use.getOperandNumber());
}
