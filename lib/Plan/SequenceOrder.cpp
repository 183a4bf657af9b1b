//===- SequenceOrder.cpp - the sequence in mirrored chunks ------*- C++ -*-===//
//
// Causal load balancing for ring attention holds the sequence in another
// order: cut into 2n chunks for n ranks, block r (the piece rank r holds)
// is chunks r and 2n-1-r. The model's inputs are fed in that order (the
// runtime permutes them, dist.sequence_chunks on the arguments), so every
// value computed from them per position is in that order too, and so are
// per-position losses, whose mean is the same. What is not computed from
// the inputs but indexed by position (rotary tables, learned position
// embeddings, the causal mask) must be permuted to meet them: this file
// follows the sequence dimensions from the inputs through the forward and
// permutes each such table where an input-derived value meets it.
// Attention is a sum over keys: with the mask permuted along keys as the
// keys are, its result does not depend on their order.
//
//===----------------------------------------------------------------------===//
#include "PlanUtils.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

using namespace mlir;
using namespace distopt;

SmallVector<int64_t> distopt::plan::mirroredChunks(int64_t ranks) {
  SmallVector<int64_t> chunks;
  for (int64_t r = 0; r < ranks; ++r)
    chunks.append({r, 2 * ranks - 1 - r});
  return chunks;
}

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Ops whose result element i reads element i of each operand (numpy
/// broadcasting), or, for softmax-like and norm ops, a whole row along an
/// axis that is never the one they are read along here.
bool isElementwise(Operation *op) {
  if (isa<nn::CumSumOp>(op))
    return false;
  return isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp, nn::PowOp, nn::MaxOp,
             nn::MinOp, nn::ModOp, nn::EqualOp, nn::LessOp, nn::LessEqualOp,
             nn::GreaterOp, nn::GreaterEqualOp, nn::AndOp, nn::OrOp,
             nn::XorOp, nn::WhereOp, nn::CastOp, nn::SoftmaxOp,
             nn::LogSoftmaxOp, nn::LayerNormOp, dist::AnnotateOp>(op) ||
         op->hasTrait<OpTrait::SameOperandsAndResultType>();
}

/// Follows the sequence dimensions of every value computed from the
/// function's inputs and collects the uses where a value that is not (a
/// table) meets one of them along a dimension of the sequence's extent.
class SequenceTracker {
public:
  SequenceTracker(func::FuncOp func, int64_t sequence)
      : func(func), sequence(sequence) {}

  /// "" when every op reading a sequence dimension could be followed, else
  /// what could not.
  std::string run();

  /// Each table use to permute, with the table's dimensions to permute.
  SmallVector<std::pair<OpOperand *, SmallVector<int64_t>>> tableUses;

private:
  bool fromInputs(Value v) const { return dims.count(v); }
  void elementwise(Operation *op);
  std::string visit(Operation *op);
  /// Records that operand `operand` (a table) meets the sequence along its
  /// dimension `d`, if that dimension has the sequence's extent.
  void meets(OpOperand &operand, int64_t d) {
    if (d < 0 || fromInputs(operand.get()) ||
        shapeOf(operand.get())[d] != sequence)
      return;
    for (auto &[use, ds] : tableUses)
      if (use == &operand) {
        if (!llvm::is_contained(ds, d))
          ds.push_back(d);
        return;
      }
    tableUses.push_back({&operand, {d}});
  }

  func::FuncOp func;
  int64_t sequence;
  /// Values computed from the inputs and their sequence dimensions.
  DenseMap<Value, SmallVector<int64_t>> dims;
};

} // namespace

void SequenceTracker::elementwise(Operation *op) {
  Value result = op->getResult(0);
  ArrayRef<int64_t> rs = shapeOf(result);
  int64_t rank = rs.size();
  SmallVector<int64_t> out;
  for (Value x : op->getOperands()) {
    auto it = dims.find(x);
    if (it == dims.end())
      continue;
    int64_t lead = rank - static_cast<int64_t>(shapeOf(x).size());
    for (int64_t d : it->second)
      if (shapeOf(x)[d] == rs[lead + d] && !llvm::is_contained(out, lead + d))
        out.push_back(lead + d);
  }
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<RankedTensorType>(operand.get().getType());
    if (!type)
      continue;
    int64_t lead = rank - type.getRank();
    for (int64_t j : out)
      if (j >= lead)
        meets(operand, j - lead);
  }
  dims[result] = out;
}

std::string SequenceTracker::visit(Operation *op) {
  auto seqOf = [&](Value v) -> ArrayRef<int64_t> {
    auto it = dims.find(v);
    return it == dims.end() ? ArrayRef<int64_t>() : ArrayRef(it->second);
  };
  auto cannot = [&](const Twine &why) {
    return ("'" + op->getName().getStringRef() + "' " + why).str();
  };
  if (op->getNumResults() != 1 ||
      !isa<RankedTensorType>(op->getResult(0).getType()))
    return cannot("has results that are not one tensor");
  Value result = op->getResult(0);
  SmallVector<int64_t> out;
  if (isElementwise(op)) {
    elementwise(op);
    return "";
  }
  if (auto t = dyn_cast<nn::TransposeOp>(op)) {
    for (auto [j, from] : llvm::enumerate(t.getPerm()))
      if (llvm::is_contained(seqOf(t.getInput()), from))
        out.push_back(j);
  } else if (auto r = dyn_cast<nn::ReshapeOp>(op)) {
    // A sequence dimension survives where the dimensions before it hold as
    // many elements and it keeps its extent.
    ArrayRef<int64_t> in = shapeOf(r.getInput()), rs = shapeOf(result);
    for (int64_t d : seqOf(r.getInput())) {
      int64_t before = 1;
      for (int64_t k = 0; k < d; ++k)
        before *= in[k];
      int64_t prefix = 1, found = -1;
      for (int64_t j = 0; j < int64_t(rs.size()); prefix *= rs[j], ++j)
        if (prefix == before && rs[j] == in[d]) {
          found = j;
          break;
        }
      if (found < 0)
        return cannot("reshapes the sequence dimension");
      out.push_back(found);
    }
  } else if (auto m = dyn_cast<nn::MatMulOp>(op)) {
    int64_t rank = shapeOf(result).size();
    int64_t a = shapeOf(m.getLhs()).size(), b = shapeOf(m.getRhs()).size();
    if (a < 2 || b < 2)
      return cannot("multiplies vectors along the sequence");
    for (int64_t d : seqOf(m.getLhs()))
      if (d != a - 1)
        out.push_back(d == a - 2 ? rank - 2 : rank - a + d);
      else // the contraction: a table on the other side follows it
        meets(m->getOpOperand(1), b - 2);
    for (int64_t d : seqOf(m.getRhs()))
      if (d != b - 2)
        out.push_back(d == b - 1 ? rank - 1 : rank - b + d);
      else
        meets(m->getOpOperand(0), a - 1);
  } else if (isa<nn::ReduceSumOp, nn::ReduceMeanOp, nn::ReduceMaxOp,
                 nn::ReduceMinOp, nn::ReduceProdOp>(op)) {
    // Reducing over the sequence does not depend on its order.
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    bool keep = op->hasAttr("keepdims");
    for (int64_t d : seqOf(op->getOperand(0))) {
      if (llvm::is_contained(axes, d))
        continue;
      int64_t before = llvm::count_if(axes, [&](int64_t a) { return a < d; });
      out.push_back(keep ? d : d - before);
    }
  } else if (isa<nn::ExpandOp>(op)) {
    elementwise(op);
    return "";
  } else if (auto g = dyn_cast<nn::GatherOp>(op)) {
    int64_t axis = g.getAxis(), k = shapeOf(g.getIndices()).size();
    if (llvm::is_contained(seqOf(g.getData()), axis))
      return cannot("picks sequence positions by index");
    for (int64_t d : seqOf(g.getData()))
      out.push_back(d < axis ? d : d + k - 1);
    for (int64_t d : seqOf(g.getIndices()))
      out.push_back(axis + d);
  } else if (auto s = dyn_cast<nn::SliceOp>(op)) {
    for (int64_t d : seqOf(s.getInput())) {
      if (shapeOf(result)[d] != shapeOf(s.getInput())[d])
        return cannot("slices the sequence");
      out.push_back(d);
    }
  } else if (auto c = dyn_cast<nn::ConcatOp>(op)) {
    int64_t axis = c.getAxis();
    for (OpOperand &operand : c->getOpOperands())
      for (int64_t d : seqOf(operand.get())) {
        if (d == axis)
          return cannot("concatenates along the sequence");
        if (!llvm::is_contained(out, d))
          out.push_back(d);
      }
    for (OpOperand &operand : c->getOpOperands())
      for (int64_t d : out)
        meets(operand, d);
  } else {
    // Anything else may mix positions: followed only where it reads no
    // sequence dimension (a scalar loss, the batch's sizes).
    for (Value x : op->getOperands())
      if (!seqOf(x).empty())
        return cannot("reads the sequence in a way the mirrored layout "
                      "cannot follow");
  }
  dims[result] = out;
  return "";
}

std::string SequenceTracker::run() {
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (type && type.getRank() >= 2 && type.getDimSize(1) == sequence)
      dims[arg] = {1};
    else
      dims[arg] = {};
  }
  for (Operation &op : func.getBody().front()) {
    if (op.hasTrait<OpTrait::IsTerminator>() ||
        llvm::none_of(op.getOperands(),
                      [&](Value v) { return fromInputs(v); }))
      continue;
    if (std::string why = visit(&op); !why.empty())
      return why;
  }
  return "";
}

/// `table` permuted along `dims` to the program's order of positions
/// (`positions[i]`: the model's position held at program position i): a
/// constant folded, anything else gathered with constant indices (whose
/// gradient, for a trained table, is the opposite permutation).
static Value permuteTable(OpBuilder &b, Value table, ArrayRef<int64_t> dims,
                          ArrayRef<int64_t> positions) {
  Location loc = table.getLoc();
  auto type = cast<RankedTensorType>(table.getType());
  if (auto c = table.getDefiningOp<nn::ConstantOp>()) {
    auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
    if (dense && dense.isSplat())
      return table;
    if (dense) {
      SmallVector<Attribute> from(dense.getValues<Attribute>());
      SmallVector<Attribute> to(from.size());
      ArrayRef<int64_t> shape = type.getShape();
      SmallVector<int64_t> strides(shape.size(), 1);
      for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
        strides[d] = strides[d + 1] * shape[d + 1];
      for (int64_t i = 0, n = from.size(); i < n; ++i) {
        int64_t src = 0;
        for (size_t d = 0; d < shape.size(); ++d) {
          int64_t idx = (i / strides[d]) % shape[d];
          if (llvm::is_contained(dims, int64_t(d)))
            idx = positions[idx];
          src += idx * strides[d];
        }
        to[i] = from[src];
      }
      return nn::ConstantOp::create(b, loc, type,
                                    DenseElementsAttr::get(type, to));
    }
  }
  auto idxType = RankedTensorType::get({int64_t(positions.size())},
                                       b.getI64Type());
  Value indices = nn::ConstantOp::create(
      b, loc, idxType, DenseIntElementsAttr::get(idxType, positions));
  for (int64_t d : dims)
    table = nn::GatherOp::create(b, loc, table, indices,
                                 b.getI64IntegerAttr(d));
  return table;
}

LogicalResult distopt::plan::permuteSequenceTables(func::FuncOp func,
                                                   int64_t sequence,
                                                   ArrayRef<int64_t> chunks,
                                                   std::string &why) {
  int64_t n = chunks.size(), chunk = sequence / n;
  SmallVector<int64_t> positions;
  for (int64_t c : chunks)
    for (int64_t i = 0; i < chunk; ++i)
      positions.push_back(c * chunk + i);
  SequenceTracker tracker(func, sequence);
  why = tracker.run();
  if (!why.empty())
    return failure();
  // One permuted copy per table and set of dimensions, next to the table.
  DenseMap<Value, SmallVector<std::pair<SmallVector<int64_t>, Value>>> copies;
  for (auto &[use, dims] : tracker.tableUses) {
    llvm::sort(dims);
    Value table = use->get();
    Value permuted;
    for (auto &[ds, v] : copies[table])
      if (ds == dims)
        permuted = v;
    if (!permuted) {
      OpBuilder b(func.getContext());
      if (Operation *def = table.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(&func.getBody().front());
      permuted = permuteTable(b, table, dims, positions);
      copies[table].push_back({dims, permuted});
    }
    use->set(permuted);
  }
  return success();
}

