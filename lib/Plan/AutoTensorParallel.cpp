//===- AutoTensorParallel.cpp - the `tp` preset -----------------*- C++ -*-===//
//
// Finds Megatron's structure without names. In a transformer every
// projection either reads the (normalised) residual stream — an *entry*: Q, K,
// V, MLP up/gate, LM head — or produces what is added back to it — an *exit*:
// attention output, MLP down. Entries become column-parallel; propagation
// then carries the split through heads and activations and makes the exits
// row-parallel by itself, leaving one reduction per block at the residual
// add. Embedding tables become vocabulary-parallel. A mixture of experts'
// router stays whole (every rank routes every token alike), and its experts'
// FFN einsums are split on their hidden dimension as an MLP's projections
// are: the first column-parallel, the second row-parallel.
//
//===----------------------------------------------------------------------===//
#include "PlanUtils.h"
#include "distopt/Plan/Experts.h"
#include "distopt/Plan/Plan.h"

#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::plan;

/// True if `v` is a weight, possibly reshaped or transposed.
static bool isWeightValue(Value v) {
  for (int i = 0; i < 8 && v; ++i) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return false;
    if (isa<nn::WeightOp, nn::ConstantOp>(def))
      return true;
    if (!isa<nn::TransposeOp, nn::ReshapeOp, nn::CastOp, dist::AnnotateOp>(def))
      return false;
    v = def->getOperand(0);
  }
  return false;
}

/// Ops of a training step's loss, backward or optimizer: the structure of
/// the model is read from its forward ops only.
static bool isForward(Operation *op) { return !op->hasAttr(nn::kPhaseAttr); }

/// Whether `v` depends on an argument of the function (a model input), not
/// only on weights and constants (positions made by a range).
static bool fromInputs(Value v) {
  SmallVector<Value> work{v};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    if (isa<BlockArgument>(x))
      return true;
    if (Operation *def = x.getDefiningOp())
      for (Value operand : def->getOperands())
        work.push_back(operand);
  }
  return false;
}

static bool isWeightMatmul(Operation *op) {
  auto mm = dyn_cast_or_null<nn::MatMulOp>(op);
  return mm && isWeightValue(mm.getRhs()) && !isWeightValue(mm.getLhs());
}

/// The matmul's output (after its bias) is added to a tensor of its own
/// shape: it writes into the residual stream.
static bool feedsResidualAdd(nn::MatMulOp mm) {
  SmallVector<Value> frontier{mm.getResult()};
  for (int depth = 0; depth < 6 && !frontier.empty(); ++depth) {
    SmallVector<Value> next;
    for (Value v : frontier) {
      for (Operation *user : v.getUsers()) {
        if (!isForward(user))
          continue;
        if (auto add = dyn_cast<nn::AddOp>(user)) {
          Value other = add.getLhs() == v ? add.getRhs() : add.getLhs();
          if (isWeightValue(other)) {
            next.push_back(add.getResult()); // bias
            continue;
          }
          if (other.getType() == v.getType())
            return true;
        }
        if (isa<nn::ReshapeOp, nn::TransposeOp, nn::IdentityOp>(user))
          next.push_back(user->getResult(0));
      }
    }
    frontier = std::move(next);
  }
  return false;
}

/// The matmul's input comes from another projection through element-wise
/// and layout ops only (an MLP's down projection after its activation).
static bool followsProjection(nn::MatMulOp mm) {
  SmallVector<Value> frontier{mm.getLhs()};
  for (int depth = 0; depth < 10 && !frontier.empty(); ++depth) {
    SmallVector<Value> next;
    for (Value v : frontier) {
      Operation *def = v.getDefiningOp();
      if (!def)
        continue;
      if (isWeightMatmul(def))
        return true;
      if (def->getNumOperands() == 0 || isWeightValue(v))
        continue;
      bool elementwise = def->hasTrait<OpTrait::SameOperandsAndResultType>() ||
                         isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp,
                             nn::ReshapeOp, nn::TransposeOp>(def);
      if (!elementwise)
        continue;
      // The residual stream (an add of two activations) separates blocks:
      // a projection behind it belongs to the previous block, not to this
      // one's input (a spelled-out RMSNorm is element-wise all the way).
      if (isa<nn::AddOp>(def) && !isWeightValue(def->getOperand(0)) &&
          !isWeightValue(def->getOperand(1)))
        continue;
      for (Value operand : def->getOperands())
        if (!isWeightValue(operand))
          next.push_back(operand);
    }
    frontier = std::move(next);
  }
  return false;
}

/// Where a column-parallel projection's output is split into heads: a
/// reshape (after the bias) of its last dimension C into [H, C/H]. Returns
/// H, or 0 when the output is not split into heads.
static int64_t headsOf(nn::MatMulOp mm) {
  Value v = mm.getResult();
  int64_t features = mm.getResult().getType().getShape().back();
  for (int depth = 0; depth < 4; ++depth) {
    Operation *next = nullptr;
    for (Operation *user : v.getUsers()) {
      if (auto add = dyn_cast<nn::AddOp>(user);
          add && add.getResult().getType() == v.getType()) {
        next = user; // the bias
        break;
      }
      if (auto reshape = dyn_cast<nn::ReshapeOp>(user)) {
        ArrayRef<int64_t> in = cast<RankedTensorType>(v.getType()).getShape();
        ArrayRef<int64_t> out = reshape.getResult().getType().getShape();
        if (out.size() == in.size() + 1 &&
            out.take_front(in.size() - 1) == in.take_front(in.size() - 1) &&
            out[in.size() - 1] * out.back() == features)
          return out[in.size() - 1];
      }
    }
    if (!next)
      return 0;
    v = next->getResult(0);
  }
  return 0;
}

/// A mixture of experts' router: the projection's output picks experts
/// (reaches an nn.top_k or nn.argmax through element-wise ops such as the
/// softmax). Split over its experts, every rank would gather the scores
/// back before choosing.
static bool isRouter(nn::MatMulOp mm) {
  SmallVector<Value> work{mm.getResult()};
  for (int depth = 0; depth < 6 && !work.empty(); ++depth) {
    SmallVector<Value> next;
    for (Value v : work)
      for (Operation *user : v.getUsers()) {
        if (isa<nn::TopKOp, nn::ArgMaxOp>(user))
          return true;
        if (user->getNumResults() == 1 &&
            (user->hasTrait<OpTrait::SameOperandsAndResultType>() ||
             isa<nn::SoftmaxOp, nn::AddOp, nn::IdentityOp>(user)))
          next.push_back(user->getResult(0));
      }
    work = std::move(next);
  }
  return false;
}

/// The dimension of an experts' weight that tensor parallelism splits: in
/// the einsum reading the dispatched tokens, the weight's letter the result
/// keeps besides the expert (`f` of `gecd,edf->gecf`: column-parallel); in
/// the one reading the experts' activations, the letter it sums over (`f`
/// of `gecf,efd->gecd`: row-parallel). -1 if there is none.
static int64_t expertHiddenDim(const ExpertEinsum &x, bool readsExperts) {
  const std::string &term = x.eq.inputs[x.weight];
  for (size_t d = 1; d < term.size(); ++d) {
    bool kept = x.eq.output.find(term[d]) != std::string::npos;
    if (kept != readsExperts)
      return static_cast<int64_t>(d);
  }
  return -1;
}

LogicalResult
distopt::plan::applyAutoTensorParallel(ModuleOp module, Location loc,
                                       StringRef axisName,
                                       std::vector<std::string> &notes) {
  func::FuncOp func = mainFunction(module);
  if (!func)
    return failure();
  dist::MeshOp mesh = requireMesh(module, loc, "preset 'tp'", axisName);
  if (!mesh)
    return failure();
  int64_t axis = requireAxis(mesh, loc, axisName, "preset 'tp'");
  if (axis < 0)
    return failure();
  int64_t size = mesh.getAxisSizes()[axis];

  int entries = 0, exits = 0, tables = 0;
  SmallVector<std::pair<Operation *, unsigned>> colwise, vocab;
  func.walk([&](Operation *op) {
    if (!isForward(op))
      return;
    if (auto mm = dyn_cast<nn::MatMulOp>(op)) {
      if (!isWeightMatmul(op))
        return;
      if (feedsResidualAdd(mm) || followsProjection(mm)) {
        ++exits; // row-parallel, by propagation
        return;
      }
      if (isRouter(mm))
        return;
      colwise.push_back({op, 1});
    }
    // Token embeddings become vocabulary-parallel (below: only the largest
    // tables read at inputs); a position table read at positions the model
    // makes itself stays whole (one reduction for the embedding sum, as
    // Megatron has).
    if (auto g = dyn_cast<nn::GatherOp>(op))
      if (isWeightValue(g.getData()) && g.getAxis() == 0 &&
          fromInputs(g.getIndices()))
        vocab.push_back({op, 0});
  });
  for (auto [op, operand] : colwise) {
    auto type = cast<RankedTensorType>(op->getOperand(operand).getType());
    int64_t dim = type.getRank() - 1;
    int64_t heads = headsOf(cast<nn::MatMulOp>(op));
    std::string layer = nn::getNodeModulePath(op);
    if (heads > 0 && heads % size != 0) {
      // The head split cannot keep a split that cuts heads apart: the
      // projection is gathered before it, and the attention runs whole.
      std::string text =
          "preset 'tp': '" + (layer.empty() ? nn::getNodeName(op) : layer) +
          "' splits its output into " + std::to_string(heads) +
          " heads, which do not divide by " + axisName.str() + "=" +
          std::to_string(size) +
          "; the projection is gathered before the head split and its "
          "attention is not split";
      // A fused projection split in parts warns once.
      if (!llvm::is_contained(notes, text)) {
        op->emitWarning() << text;
        notes.push_back(text);
      }
    } else if (type.getDimSize(dim) % size != 0) {
      op->emitWarning("preset 'tp': output features ")
          << type.getDimSize(dim) << " do not divide by " << axisName << "="
          << size << "; the pieces are uneven";
    }
    annotateOperand(op, operand,
                    oneAxisSharding(mesh, axis, dist::Placement::shard(dim)),
                    kPresetPriority, "preset tp: column-parallel");
    ++entries;
  }
  // Only the vocabulary: among tables read at the model's inputs, those with
  // the most rows. A small table read at input positions (position_ids into
  // rotary or position tables, BERT's token types) gains no memory from a
  // split and would cost an all-reduce at every read.
  int64_t vocabRows = 0;
  for (auto [op, operand] : vocab)
    vocabRows = std::max(vocabRows, cast<RankedTensorType>(
                                        op->getOperand(operand).getType())
                                        .getDimSize(0));
  llvm::erase_if(vocab, [&](std::pair<Operation *, unsigned> entry) {
    return cast<RankedTensorType>(
               entry.first->getOperand(entry.second).getType())
               .getDimSize(0) != vocabRows;
  });
  for (auto [op, operand] : vocab) {
    annotateOperand(op, operand,
                    oneAxisSharding(mesh, axis, dist::Placement::shard(0)),
                    kPresetPriority, "preset tp: vocabulary-parallel");
    ++tables;
  }
  // The experts' FFNs: both einsums are split explicitly, since the second
  // reads the first's split through the experts' activation and the
  // dispatch's annotations of expert parallelism.
  SmallVector<ExpertEinsum> experts = findExpertEinsums(func);
  llvm::DenseMap<Operation *, ExpertEinsum> byOp;
  for (const ExpertEinsum &x : experts)
    byOp.try_emplace(x.op, x);
  llvm::SmallPtrSet<void *, 8> splitWeights;
  for (const ExpertEinsum &x : experts) {
    if (!isForward(x.op))
      continue;
    bool readsExperts = llvm::any_of(
        llvm::enumerate(x.op.getInputs()), [&](auto operand) {
          return operand.index() != x.weight &&
                 fromExperts(operand.value(), byOp);
        });
    int64_t dim = expertHiddenDim(x, readsExperts);
    if (dim < 0)
      continue;
    Value w = weightOperand(x.op.getInputs()[x.weight]);
    if (!splitWeights.insert(w.getAsOpaquePointer()).second)
      continue;
    annotateValue(w, oneAxisSharding(mesh, axis, dist::Placement::shard(dim)),
                  kPresetPriority,
                  readsExperts ? "preset tp: experts' row-parallel"
                               : "preset tp: experts' column-parallel");
    ++entries;
  }
  if (entries == 0 && tables == 0) {
    std::string text =
        "preset 'tp' found no projections or embedding tables to split";
    mlir::emitWarning(loc) << text;
    notes.push_back(text);
  }
  (void)exits;
  return success();
}
