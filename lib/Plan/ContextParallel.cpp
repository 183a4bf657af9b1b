//===- ContextParallel.cpp - split along the sequence --------*- C++ -*-===//
//
// Context parallelism splits every activation along the sequence over one
// mesh axis. The model inputs are split along dimension 1 (tokens and
// labels: [batch, seq]); propagation carries the split through embeddings,
// norms, projections and the MLP, and slices constants (rotary tables, the
// causal mask) to each rank's rows. Attention needs the whole sequence; each
// softmax over keys recognised as attention (Q·Kᵀ, masks and scales,
// softmax, ·V) is pinned to one of:
//
//   allgather  the scores and the attention output keep the query split, so
//              no rank holds a full [seq, seq] score matrix: keys and values
//              are all-gathered along the sequence before their matmuls and
//              their gradients reduce-scattered in backward.
//   ulysses    Q, K, V, the scores and the output are split by heads: the
//              reshard planner turns the sequence split into a head split
//              with one all-to-all per tensor and back after attention.
//
// What cannot be followed (a sequence that does not divide, heads that do
// not divide, a softmax over the sequence that is not recognised as
// attention) is a warning naming the tensor or layer and what was done.
//
//===----------------------------------------------------------------------===//
#include "PlanUtils.h"
#include "distopt/Plan/Plan.h"

#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include <algorithm>

using namespace mlir;
using namespace distopt;
using namespace distopt::plan;

ArrayRef<StringRef> distopt::contextParallelAttentions() {
  static const StringRef names[] = {"allgather", "ulysses"};
  return names;
}

namespace {

/// One attention: scores = Q·Kᵀ (then masks, scales), softmax, output =
/// probabilities·V.
struct Attention {
  nn::SoftmaxOp softmax;
  nn::MatMulOp scores; // Q·Kᵀ
  nn::MatMulOp output; // probabilities·V
};

/// The module path of a node ("/layers.0/self_attn/Softmax" ->
/// "layers.0.self_attn"), or the node name where it has none.
std::string layerOf(Operation *op) {
  std::string node = nn::getNodeName(op);
  StringRef path = StringRef(node).ltrim('/');
  size_t slash = path.rfind('/');
  if (slash == StringRef::npos)
    return node.empty() ? op->getName().getStringRef().str() : node;
  std::string layer = path.take_front(slash).str();
  std::replace(layer.begin(), layer.end(), '/', '.');
  return layer;
}

/// The matmul that made `v` through element-wise ops that keep its shape
/// (masks, scales, casts).
nn::MatMulOp scoresProducer(Value v) {
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  while (Operation *def = v.getDefiningOp()) {
    if (auto mm = dyn_cast<nn::MatMulOp>(def))
      return mm;
    if (!isa<nn::WhereOp, nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp,
             nn::CastOp, dist::AnnotateOp>(def))
      return nullptr;
    Value next;
    for (Value operand : def->getOperands()) {
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (type && type.getShape() == shape &&
          isa<FloatType>(type.getElementType()) && !next)
        next = operand;
    }
    if (!next)
      return nullptr;
    v = next;
  }
  return nullptr;
}

/// The matmul reading the probabilities `p` as its left operand (through
/// casts).
nn::MatMulOp outputConsumer(Value p) {
  for (Operation *user : p.getUsers()) {
    if (auto mm = dyn_cast<nn::MatMulOp>(user); mm && mm.getLhs() == p)
      return mm;
    if (isa<nn::CastOp, dist::AnnotateOp>(user))
      if (nn::MatMulOp mm = outputConsumer(user->getResult(0)))
        return mm;
  }
  return nullptr;
}

class ContextParallelApplier {
public:
  ContextParallelApplier(func::FuncOp func, dist::MeshOp mesh, int64_t axis,
                         const ContextParallelSpec &spec,
                         std::vector<std::string> &notes)
      : func(func), mesh(mesh), axis(axis), size(mesh.getAxisSizes()[axis]),
        spec(spec), notes(notes) {}

  void apply();

private:
  void note(Location loc, const Twine &message) {
    notes.push_back(message.str());
    mlir::emitWarning(loc) << message;
  }
  void splitInputs();
  void splitAttention(nn::SoftmaxOp softmax);
  void pinUlyssesBackward(Attention att, StringRef layer);
  void pin(Value v, int64_t dim, StringRef why) {
    annotateValue(v, oneAxisSharding(mesh, axis, dist::Placement::shard(dim)),
                  kStylePriority, why);
  }

  func::FuncOp func;
  dist::MeshOp mesh;
  int64_t axis;
  int64_t size;
  const ContextParallelSpec &spec;
  std::vector<std::string> &notes;
  int64_t sequence = ShapedType::kDynamic;
};

} // namespace

void ContextParallelApplier::splitInputs() {
  Location loc(spec.loc);
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() < 2)
      continue;
    int64_t extent = type.getDimSize(1);
    if (ShapedType::isDynamic(sequence))
      sequence = extent;
    if (!ShapedType::isDynamic(extent) && extent % size != 0) {
      auto name =
          func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kNameAttr);
      note(loc, "context parallelism: input '" +
                    (name ? name.str()
                          : "input_" + std::to_string(arg.getArgNumber())) +
                    "' has " + std::to_string(extent) +
                    " positions in dimension 1 (the sequence), which do not "
                    "divide by " +
                    spec.axis + "=" + std::to_string(size) +
                    "; it is split into uneven pieces");
    }
    pin(arg, 1, "context_parallel: sequence");
  }
}

void ContextParallelApplier::splitAttention(nn::SoftmaxOp softmax) {
  auto type = softmax.getInput().getType();
  int64_t rank = type.getRank();
  int64_t softmaxAxis = static_cast<int64_t>(softmax.getAxis());
  if (softmaxAxis < 0)
    softmaxAxis += rank;
  // Only a softmax over the whole sequence is attention over it.
  if (rank < 2 || softmaxAxis != rank - 1 ||
      type.getDimSize(rank - 1) != sequence)
    return;
  std::string layer = layerOf(softmax);
  Attention att{softmax, scoresProducer(softmax.getInput()),
                outputConsumer(softmax.getResult())};
  if (!att.scores || !att.output || rank < 3 ||
      type.getDimSize(rank - 2) != sequence) {
    note(softmax.getLoc(),
         "context parallelism: '" + layer +
             "': a softmax over the sequence that is not recognised as "
             "attention (a matmul of queries and keys, softmax, a matmul with "
             "values); its split is left to propagation, which may gather the "
             "sequence there");
    return;
  }
  std::string variant = spec.attention;
  if (variant == "ulysses") {
    int64_t heads = rank == 4 ? type.getDimSize(1) : 0;
    if (rank != 4) {
      note(softmax.getLoc(), "context parallelism: '" + layer +
                                 "': ulysses needs scores shaped [batch, "
                                 "heads, queries, keys]; its keys and values "
                                 "are all-gathered instead");
      variant = "allgather";
    } else if (heads % size != 0) {
      note(softmax.getLoc(),
           "context parallelism: '" + layer + "': " + std::to_string(heads) +
               " heads do not divide by " + spec.axis + "=" +
               std::to_string(size) +
               " for ulysses; its keys and values are all-gathered instead");
      variant = "allgather";
    }
  }
  if (variant == "ulysses") {
    // Q, Kᵀ and V are pinned to the sequence split where they are made and
    // to the head split where attention reads them, the output the other
    // way round: the reshard between each pair is one all-to-all, and the
    // head split cannot leak into the projections (which would make them
    // tensor-parallel over the context axis).
    std::string seq = "context_parallel: sequence of '" + layer + "'";
    std::string heads = "context_parallel: ulysses heads of '" + layer + "'";
    int64_t keyDim = att.scores.getRhs().getType().getRank() - 1;
    auto toHeads = [&](OpOperand &operand, int64_t seqDim) {
      pin(operand.get(), seqDim, seq);
      pin(operand.get(), 1, heads);
    };
    toHeads(att.scores->getOpOperand(0), rank - 2);
    toHeads(att.scores->getOpOperand(1), keyDim);
    toHeads(att.output->getOpOperand(1), rank - 2);
    pin(att.output.getResult(), 1, heads);
    Operation *headsView = *att.output.getResult().getUsers().begin();
    pin(headsView->getResult(0), rank - 2, seq);
    pinUlyssesBackward(att, layer);
    return;
  }
  // The query rows stay split: keys and values are gathered to them.
  std::string why = "context_parallel: query rows of '" + layer + "'";
  pin(att.scores.getResult(), rank - 2, why);
  pin(att.output.getResult(), rank - 2, why);
}

/// Backward reads the head-split forward values (Q, Kᵀ, V, the
/// probabilities) in matmuls whose other operand arrives split along the
/// sequence. Each such matmul is pinned to the head split; a result shaped
/// like Q, Kᵀ or V (a gradient leaving attention) goes back to the sequence
/// split after it, as the forward output does.
void ContextParallelApplier::pinUlyssesBackward(Attention att,
                                                StringRef layer) {
  // A value up through transposes and pins: backward reads a forward value
  // through transposes of its own (the gradient of Q·Kᵀ by Q reads K, a
  // transpose of the pinned Kᵀ's source), which are as head-split as it.
  auto source = [](Value v) {
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<nn::TransposeOp, dist::AnnotateOp>(def))
        break;
      v = def->getOperand(0);
    }
    return v;
  };
  llvm::SmallPtrSet<Value, 8> headSplit;
  for (Value v : {att.scores.getLhs(), att.scores.getRhs(),
                  att.output.getRhs(), att.softmax.getResult()})
    headSplit.insert(source(v));
  auto readsHeads = [&](Value operand) {
    return headSplit.contains(source(operand));
  };
  std::string seq = "context_parallel: sequence of '" + layer.str() + "'";
  std::string heads =
      "context_parallel: ulysses heads of '" + layer.str() + "' (backward)";
  SmallVector<nn::MatMulOp> matmuls;
  func.walk([&](nn::MatMulOp mm) {
    auto phase = mm->getAttrOfType<StringAttr>(nn::kPhaseAttr);
    if (phase && phase.getValue() == "backward" &&
        mm.getType().getRank() == 4 &&
        (readsHeads(mm.getLhs()) || readsHeads(mm.getRhs())))
      matmuls.push_back(mm);
  });
  for (nn::MatMulOp mm : matmuls) {
    ArrayRef<int64_t> shape = mm.getType().getShape();
    pin(mm.getResult(), 1, heads);
    if (shape[2] == sequence && shape[3] == sequence)
      continue;
    Operation *headsView = *mm.getResult().getUsers().begin();
    pin(headsView->getResult(0), shape[2] == sequence ? 2 : 3, seq);
  }
}

void ContextParallelApplier::apply() {
  splitInputs();
  if (ShapedType::isDynamic(sequence))
    return;
  SmallVector<nn::SoftmaxOp> softmaxes;
  func.walk([&](nn::SoftmaxOp op) { softmaxes.push_back(op); });
  for (nn::SoftmaxOp softmax : softmaxes)
    splitAttention(softmax);
}

LogicalResult distopt::plan::applyContextParallel(
    ModuleOp module, const ContextParallelSpec &spec,
    std::vector<std::string> &notes) {
  func::FuncOp func = mainFunction(module);
  if (!func)
    return failure();
  Location loc(spec.loc);
  dist::MeshOp mesh =
      requireMesh(module, loc, "context parallelism", spec.axis);
  if (!mesh)
    return failure();
  int64_t axis = requireAxis(mesh, loc, spec.axis, "context parallelism");
  if (axis < 0)
    return failure();
  ContextParallelApplier(func, mesh, axis, spec, notes).apply();
  return success();
}
