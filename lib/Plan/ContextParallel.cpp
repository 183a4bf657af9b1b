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
//   ring       rewritten before the training step is built (dist-ring-
//              attention, applyRingAttention): the sequence of Q, K and V
//              becomes [cp, chunk] blocks, each rank's query block meets one
//              K/V block per step, the K/V blocks roll one block along the
//              ring between steps (an nn.gather roll, whose local form is a
//              collective_permute and whose gradient is the opposite roll),
//              and the steps merge by log-sum-exp. Autodiff gives the
//              backward; no rank holds the whole K, V or score rows.
//              With load_balance (causal load balancing) the sequence is
//              held in mirrored chunks (SequenceOrder.cpp) and each step
//              after the first computes only the two half-block pairs the
//              causal mask leaves visible, chosen per rank by constants on
//              the block dimension.
//
// A plan that names no variant (and the `cp` preset) gets, per attention,
// the one the cost model finds fastest (ContextParallelCost.h):
// dist-ring-attention chooses, rewrites those it chose ring for and marks
// the others with their variant; each choice is a remark and a report
// entry. Causal load balancing needs the plan to name ring: the rings the
// cost model chooses are unbalanced. What cannot be followed (a sequence
// that does not divide, heads that do not divide, a softmax over the
// sequence that is not recognised as attention) is a warning naming the
// tensor or layer and what was done.
//
//===----------------------------------------------------------------------===//
#include "PlanUtils.h"
#include "distopt/Plan/ContextParallelCost.h"
#include "distopt/Plan/Plan.h"

#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/Transforms/ValueSharding.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNOps.h"
#include "distopt/Dialect/NN/IR/Roll.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <array>
#include <set>

using namespace mlir;
using namespace distopt;
using namespace distopt::plan;

ArrayRef<StringRef> distopt::contextParallelAttentions() {
  static const StringRef names[] = {"allgather", "ulysses", "ring"};
  return names;
}

namespace {

/// On a softmax the ring rewrite left alone: why. dist-apply-plan says it
/// (a note in the report) and all-gathers that attention's keys and values.
constexpr StringLiteral kRingFallbackAttr = "dist.ring_fallback";
/// On the function: what causal load balancing did to the last attention
/// the ring rewrite took (dist-apply-plan makes it a report note).
constexpr StringLiteral kRingLayoutAttr = "dist.ring_layout";
/// On the function: the mirrored chunks dist-ring-attention permuted the
/// tables indexed by position to (causal load balancing), for
/// dist-apply-plan to mark the inputs and outputs with.
constexpr StringLiteral kRingChunksAttr = "dist.ring_chunks";
/// On a softmax whose variant dist-ring-attention chose by cost (and did
/// not rewrite as ring): that variant, for dist-apply-plan to follow.
constexpr StringLiteral kChosenAttentionAttr = "dist.cp_attention";
/// On a softmax split by heads (ulysses): [layer, context axis, who chose
/// it ("plan" or "cost model")], for checkUlyssesHeads once the whole plan
/// is applied.
constexpr StringLiteral kUlyssesAttr = "dist.ulysses_heads";

/// The sources of the pins context parallelism puts on a layer's attention
/// (what the report shows; checkUlyssesHeads finds ulysses' pins by them).
std::string sequencePin(StringRef layer) {
  return "context_parallel: sequence of '" + layer.str() + "'";
}
std::string headsPin(StringRef layer) {
  return "context_parallel: ulysses heads of '" + layer.str() + "'";
}
std::string headsBackwardPin(StringRef layer) {
  return headsPin(layer) + " (backward)";
}

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
/// (masks, scales, casts); `chain`, when given, receives those ops from the
/// softmax's input back to the matmul.
nn::MatMulOp scoresProducer(Value v,
                            SmallVectorImpl<Operation *> *chain = nullptr) {
  auto shape = cast<RankedTensorType>(v.getType()).getShape();
  while (Operation *def = v.getDefiningOp()) {
    if (auto mm = dyn_cast<nn::MatMulOp>(def))
      return mm;
    if (chain)
      chain->push_back(def);
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

/// The bytes of a tensor value (a byte per element below 8 bits).
double bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return static_cast<double>(type.getNumElements()) *
         std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// What the cost model needs of `att`.
AttentionShape attentionShape(Attention att, int64_t sequence, bool training) {
  AttentionShape shape;
  auto scores = att.softmax.getInput().getType();
  shape.heads = scores.getRank() == 4 ? scores.getDimSize(1) : 0;
  shape.sequence = sequence;
  shape.query = bytesOf(att.scores.getLhs());
  shape.key = bytesOf(att.scores.getRhs());
  shape.value = bytesOf(att.output.getRhs());
  shape.output = bytesOf(att.output.getResult());
  shape.scores = bytesOf(att.softmax.getInput());
  shape.training = training;
  return shape;
}

/// Records `decision` for the report and says it in a remark at `loc`.
void tell(Location loc, AttentionDecision decision,
          std::vector<AttentionDecision> &decisions) {
  mlir::emitRemark(loc) << describeDecision(decision);
  decisions.push_back(std::move(decision));
}

/// allgather: the query rows stay split along the sequence over mesh axis
/// `axis`, and keys and values are gathered to them.
void pinQueryRows(Attention att, dist::MeshOp mesh, int64_t axis,
                  StringRef layer) {
  int64_t rank = att.softmax.getInput().getType().getRank();
  dist::ShardingAttr rows =
      oneAxisSharding(mesh, axis, dist::Placement::shard(rank - 2));
  std::string why = "context_parallel: query rows of '" + layer.str() + "'";
  annotateValue(att.scores.getResult(), rows, kStylePriority, why);
  annotateValue(att.output.getResult(), rows, kStylePriority, why);
}

class ContextParallelApplier {
public:
  ContextParallelApplier(func::FuncOp func, dist::MeshOp mesh, int64_t axis,
                         const ContextParallelSpec &spec,
                         const cost::MeshCost &links, PlanFindings &findings)
      : func(func), mesh(mesh), axis(axis), size(mesh.getAxisSizes()[axis]),
        spec(spec), links(links), findings(findings) {}

  LogicalResult apply();

private:
  void note(Location loc, const Twine &message) {
    findings.notes.push_back(message.str());
    mlir::emitWarning(loc) << message;
  }
  void splitInputs();
  /// Causal load balancing: the sequence in mirrored chunks. What the ring
  /// pass did decides it, not the spec: it permuted the tables (and marked
  /// the function) or not; inputs and outputs are marked here.
  bool balanced() const { return static_cast<bool>(chunks); }
  DenseI64ArrayAttr chunksAttr() const { return chunks; }
  void splitAttention(nn::SoftmaxOp softmax);
  std::string chooseVariant(Attention att, StringRef layer);
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
  const cost::MeshCost &links;
  PlanFindings &findings;
  int64_t sequence = ShapedType::kDynamic;
  bool training = false;
  DenseI64ArrayAttr chunks;
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
    if (balanced())
      func.setArgAttr(arg.getArgNumber(), dist::kSequenceChunksAttr,
                      chunksAttr());
  }
  if (!balanced())
    return;
  // Outputs along the sequence (logits) come out in the same order; the
  // runtime puts them back in the model's.
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    auto t = dyn_cast<RankedTensorType>(type);
    if (t && t.getRank() >= 2 && t.getDimSize(1) == sequence &&
        !func.getResultAttr(i, nn::kUpdatesAttr))
      func.setResultAttr(i, dist::kSequenceChunksAttr, chunksAttr());
  }
}

/// A softmax's axis counted from the front (the attribute may count from
/// the back).
static int64_t axisOf(nn::SoftmaxOp softmax) {
  int64_t axis = static_cast<int64_t>(softmax.getAxis());
  return axis < 0 ? axis + softmax.getInput().getType().getRank() : axis;
}

void ContextParallelApplier::splitAttention(nn::SoftmaxOp softmax) {
  auto type = softmax.getInput().getType();
  int64_t rank = type.getRank();
  int64_t softmaxAxis = axisOf(softmax);
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
  if (variant.empty()) {
    // dist-ring-attention chose (and marked) it; without that pass, the
    // cost model chooses here among the variants left.
    auto chosen = softmax->getAttrOfType<StringAttr>(kChosenAttentionAttr);
    variant = chosen ? chosen.str() : chooseVariant(att, layer);
    softmax->removeAttr(kChosenAttentionAttr);
  }
  if (variant == "ring") {
    // Attention the ring rewrite took has no softmax over the whole
    // sequence left: this one it left alone.
    auto why = softmax->getAttrOfType<StringAttr>(kRingFallbackAttr);
    note(softmax.getLoc(),
         "context parallelism: '" + layer + "': " +
             (why ? why.str()
                  : std::string("ring attention was not rewritten before "
                                "the plan was applied (dist-ring-attention "
                                "did not run)")) +
             "; its keys and values are all-gathered instead");
    softmax->removeAttr(kRingFallbackAttr);
    variant = "allgather";
  }
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
    std::string seq = sequencePin(layer), heads = headsPin(layer);
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
    Builder b(softmax.getContext());
    softmax->setAttr(
        kUlyssesAttr,
        b.getStrArrayAttr({layer, spec.axis,
                           spec.attention.empty() ? "cost model" : "plan"}));
    return;
  }
  pinQueryRows(att, mesh, axis, layer);
}

/// The variant the cost model finds fastest for `att` where
/// dist-ring-attention did not choose: ring is then no candidate.
std::string ContextParallelApplier::chooseVariant(Attention att,
                                                  StringRef layer) {
  AttentionDecision decision = chooseAttention(
      attentionShape(att, sequence, training), links, axis, spec.axis,
      std::nullopt,
      {{"ring", "rewritten only by dist-ring-attention, which did not run"}});
  decision.layer = layer.str();
  std::string variant = decision.variant;
  tell(att.softmax.getLoc(), std::move(decision), findings.attention);
  return variant;
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
  std::string seq = sequencePin(layer), heads = headsBackwardPin(layer);
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

LogicalResult ContextParallelApplier::apply() {
  func.walk([&](Operation *op) {
    training = training || op->hasAttr(nn::kPhaseAttr);
    return training ? WalkResult::interrupt() : WalkResult::advance();
  });
  // The ring pass's mark, or, where an earlier context parallelism of the
  // plans took it, the inputs'.
  chunks = func->getAttrOfType<DenseI64ArrayAttr>(kRingChunksAttr);
  func->removeAttr(kRingChunksAttr);
  for (unsigned i = 0, e = func.getNumArguments(); i < e && !chunks; ++i)
    chunks = func.getArgAttrOfType<DenseI64ArrayAttr>(
        i, dist::kSequenceChunksAttr);
  // Inputs marked as mirrored with tables in the model's order would be
  // wrong, not just slow.
  if (spec.loadBalance && !chunks && size > 1)
    return emitError(Location(spec.loc))
           << "context parallelism: load_balance, but dist-ring-attention "
              "did not put the sequence in mirrored chunks (it follows the "
              "plans' last context parallelism, here one without "
              "load_balance, or did not run)";
  splitInputs();
  if (auto layout = func->getAttrOfType<StringAttr>(kRingLayoutAttr)) {
    findings.notes.push_back(layout.str());
    func->removeAttr(kRingLayoutAttr);
  }
  if (ShapedType::isDynamic(sequence))
    return success();
  SmallVector<nn::SoftmaxOp> softmaxes;
  func.walk([&](nn::SoftmaxOp op) { softmaxes.push_back(op); });
  for (nn::SoftmaxOp softmax : softmaxes)
    splitAttention(softmax);
  return success();
}

/// Undoes ulysses on the attention of `softmax` (layer `layer`): its pins
/// go, and the query rows are pinned as allgather pins them.
static void gatherInsteadOfUlysses(nn::SoftmaxOp softmax, StringRef layer,
                                   dist::MeshOp mesh, StringRef cpName) {
  std::set<std::string> pins = {sequencePin(layer), headsPin(layer),
                                headsBackwardPin(layer)};
  SmallVector<dist::AnnotateOp> undo;
  softmax->getParentOfType<func::FuncOp>().walk([&](dist::AnnotateOp a) {
    if (a.getSource() && pins.count(a.getSource()->str()))
      undo.push_back(a);
  });
  for (dist::AnnotateOp a : undo) {
    a.getResult().replaceAllUsesWith(a.getInput());
    a.erase();
  }
  Attention att{softmax, scoresProducer(softmax.getInput()),
                outputConsumer(softmax.getResult())};
  if (att.scores && att.output)
    pinQueryRows(att, mesh, mesh.getAxisIndex(cpName), layer);
}

/// `d`, the cost model's ulysses for an attention whose heads do not divide
/// once other axes split them (`why`), as it runs: allgather.
static void reviseToAllgather(AttentionDecision &d, const std::string &why) {
  auto candidate = [&](StringRef variant) -> AttentionDecision::Candidate * {
    for (AttentionDecision::Candidate &c : d.candidates)
      if (c.variant == variant)
        return &c;
    return nullptr;
  };
  AttentionDecision::Candidate *ring = candidate("ring"),
                               *gather = candidate("allgather"),
                               *ulysses = candidate("ulysses");
  std::string rejected = why;
  if (ring && gather && ring->rejected.empty() && gather->rejected.empty() &&
      ring->us < gather->us)
    rejected += "; ring would be faster than allgather but is rewritten "
                "before the plan is applied: name it (context_parallel: "
                "{attention: ring})";
  if (ulysses)
    ulysses->rejected = rejected;
  d.variant = "allgather";
}

void distopt::plan::checkUlyssesHeads(
    ModuleOp module, std::shared_ptr<const cost::MachineProfile> machine,
    PlanFindings &findings) {
  SmallVector<nn::SoftmaxOp> marked;
  module.walk([&](nn::SoftmaxOp s) {
    if (s->hasAttr(kUlyssesAttr))
      marked.push_back(s);
  });
  if (marked.empty())
    return;
  auto meshes = module.getOps<dist::MeshOp>();
  dist::MeshOp mesh = meshes.empty() ? nullptr : *meshes.begin();
  bool otherAxes = mesh && llvm::count_if(mesh.getAxisSizes(), [](int64_t n) {
                             return n > 1;
                           }) > 1;
  // Only another axis can split the heads before the context axis does.
  std::vector<SmallVector<dist::Placement>> propagated;
  if (otherAxes) {
    SmallVector<Value> inputs;
    for (nn::SoftmaxOp s : marked)
      inputs.push_back(s.getInput());
    propagated =
        propagatedPlacementsQuietly(module, inputs, std::move(machine));
  }
  for (auto [i, softmax] : llvm::enumerate(marked)) {
    auto mark = softmax->getAttrOfType<ArrayAttr>(kUlyssesAttr);
    softmax->removeAttr(kUlyssesAttr);
    if (i >= propagated.size() || propagated[i].empty())
      continue;
    StringRef layer = cast<StringAttr>(mark[0]).getValue();
    StringRef cpName = cast<StringAttr>(mark[1]).getValue();
    int64_t heads = softmax.getInput().getType().getDimSize(1), other = 1,
            cp = 1;
    std::string splitters;
    for (auto [axis, p] : llvm::enumerate(propagated[i])) {
      if (!p.isShard() || p.dim != 1)
        continue;
      StringRef name = mesh.getAxisName(axis);
      int64_t size = mesh.getAxisSizes()[axis];
      if (name == cpName) {
        cp = size;
        continue;
      }
      other *= size;
      splitters += (splitters.empty() ? "" : " x ") + name.str() + "=" +
                   std::to_string(size);
    }
    if (other == 1 || cp == 1 || (heads / other) % cp == 0)
      continue;
    int64_t perRank = heads / other;
    std::string uneven = std::to_string(heads) + " heads split over " +
                         splitters + " leave " + std::to_string(perRank) +
                         " per rank, which do not divide by " + cpName.str() +
                         "=" + std::to_string(cp) + " for ulysses";
    if (cast<StringAttr>(mark[2]).getValue() == "cost model") {
      // Nobody asked for ulysses: this attention gathers keys and values
      // instead, as the cost model would have chosen had it known the
      // other axes' split (ring needs dist-ring-attention's rewrite, which
      // came before).
      gatherInsteadOfUlysses(softmax, layer, mesh, cpName);
      for (AttentionDecision &d : findings.attention)
        if (d.layer == layer && d.variant == "ulysses") {
          reviseToAllgather(d, uneven);
          mlir::emitRemark(softmax.getLoc()) << describeDecision(d);
        }
      continue;
    }
    // The pieces the context axis gets: ceil-sized, the last ones short.
    int64_t piece = (perRank + cp - 1) / cp;
    std::string pieces;
    for (int64_t r = 0; r < cp; ++r)
      pieces += (r ? ", " : "") +
                std::to_string(std::clamp<int64_t>(perRank - r * piece, 0,
                                                   piece));
    std::string message =
        "context parallelism: '" + layer.str() + "': " + uneven + "; the " +
        cpName.str() + " ranks get uneven head splits (" + pieces +
        " heads), so some compute less attention or none; allgather or "
        "ring attention splits the sequence evenly";
    findings.notes.push_back(message);
    mlir::emitWarning(softmax.getLoc()) << message;
  }
}

LogicalResult distopt::plan::applyContextParallel(
    ModuleOp module, const ContextParallelSpec &spec,
    std::shared_ptr<const cost::MachineProfile> machine,
    PlanFindings &findings) {
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
  if (!machine)
    machine = std::make_shared<const cost::MachineProfile>(
        cost::defaultMachineProfile());
  SmallVector<std::string> names;
  for (int64_t a = 0; a < mesh.getNumAxes(); ++a)
    names.push_back(mesh.getAxisName(a).str());
  cost::MeshCost links(std::move(machine), names, mesh.getAxisSizes());
  return ContextParallelApplier(func, mesh, axis, spec, links, findings)
      .apply();
}

//===----------------------------------------------------------------------===//
// Ring attention
//===----------------------------------------------------------------------===//

namespace {

/// The extent of dimension 1 of the first model input of rank 2 or more
/// (the sequence, as context parallelism splits it), or kDynamic.
int64_t sequenceOf(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments())
    if (auto type = dyn_cast<RankedTensorType>(arg.getType());
        type && type.getRank() >= 2)
      return type.getDimSize(1);
  return ShapedType::kDynamic;
}

RankedTensorType withShape(Value v, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(
      shape, cast<RankedTensorType>(v.getType()).getElementType());
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// `shape` with dimension `d` (the sequence) as [blocks, extent / blocks].
SmallVector<int64_t> splitDim(ArrayRef<int64_t> shape, int64_t d,
                              int64_t blocks) {
  SmallVector<int64_t> out(shape.take_front(d));
  out.push_back(blocks);
  out.push_back(shape[d] / blocks);
  llvm::append_range(out, shape.drop_front(d + 1));
  return out;
}

/// Rewrites attentions over the whole sequence into ring attention over
/// `blocks` sequence blocks (see the file comment).
class RingRewriter {
public:
  RingRewriter(func::FuncOp func, int64_t blocks, StringRef axis,
               bool balance)
      : func(func), blocks(blocks), axis(axis.str()),
        sequence(sequenceOf(func)), balance(balance) {}

  /// Rewrites every attention (`links` null) or those the cost model on
  /// `links` (axis `axisIndex`) chooses ring for, marking the others.
  void run(const cost::MeshCost *links, int64_t axisIndex,
           const RingAttentionOptions &options,
           std::vector<AttentionDecision> *decisions) {
    if (ShapedType::isDynamic(sequence))
      return;
    SmallVector<nn::SoftmaxOp> softmaxes;
    func.walk([&](nn::SoftmaxOp op) { softmaxes.push_back(op); });
    for (nn::SoftmaxOp softmax : softmaxes) {
      if (links) {
        choose(softmax, *links, axisIndex, options, decisions);
        continue;
      }
      std::string why = rewrite(softmax);
      if (!why.empty())
        softmax->setAttr(kRingFallbackAttr,
                         StringAttr::get(func.getContext(), why));
    }
  }

private:
  using PairPlan = std::vector<std::vector<std::array<std::pair<int, int>, 2>>>;
  /// The attention around `softmax` if it is one over the whole sequence
  /// (as applyContextParallel recognises it).
  std::optional<Attention> attentionAt(nn::SoftmaxOp softmax) const;
  /// Chooses the variant of the attention around `softmax` by cost (see
  /// run), says it and rewrites or marks it.
  void choose(nn::SoftmaxOp softmax, const cost::MeshCost &links,
              int64_t axisIndex, const RingAttentionOptions &options,
              std::vector<AttentionDecision> *decisions);
  /// Rewrites the attention around `softmax`; "" when done (or when it is
  /// not attention over the sequence: dist-apply-plan says so), else why not.
  std::string rewrite(nn::SoftmaxOp softmax);
  /// Why `x`, an operand of the scores' element-wise ops, cannot be cut
  /// into the blocks of a step ("" when it can).
  std::string unblockable(Value x, int64_t rank);
  /// `x` (broadcast against the [..., seq, seq] scores) for the
  /// [..., blocks, chunk, chunk] scores of step `t`.
  /// A [..., seq, seq] operand cut into `pieces` along both dims, as
  /// [..., pieces, size, size, pieces] (query piece, rows, columns, key
  /// piece); made once per operand and kept in `cache`.
  Value byKeyPiece(OpBuilder &b, Location loc, Value x, int64_t pieces,
                   DenseMap<Value, Value> &cache);
  Value blockOf(OpBuilder &b, Location loc, Value x, int64_t t);
  /// blockOf with -inf made the lowest finite value: a row that the mask
  /// hides throughout one block would make that block's softmax NaN; with
  /// a finite fill its log-sum-exp is so low that the merge weighs it 0.
  Value finiteBlockOf(OpBuilder &b, Location loc, Value x, int64_t t,
                      const PairPlan *pairs = nullptr);

  /// With the sequence in mirrored chunks: which (query half, key half)
  /// pairs of its blocks each rank computes at each step after the first,
  /// when the masks hide the others (none when they do not: every step is
  /// then whole). pairs[t][r][p] = {query half, key half}.
  std::optional<PairPlan> planPairs(ArrayRef<Operation *> chain,
                                    function_ref<Value(size_t)> chainInput);
  /// `x` for the [..., blocks, 2, half, half] scores of step t's pairs.
  Value pairBlockOf(OpBuilder &b, Location loc, Value x, int64_t t,
                    const PairPlan &plan);
  /// A constant [blocks, 2, 1, 1] per rank and pair: whether the pair reads
  /// half 1 (of the queries: `keys` false, of the keys: true).
  Value halfSelector(OpBuilder &b, Location loc, int64_t t,
                     const PairPlan &plan, bool keys, int64_t trailing = 2);

  func::FuncOp func;
  int64_t blocks;
  std::string axis;
  int64_t sequence;
  bool balance;
  /// A [..., seq, seq] operand as [..., blocks, chunk, chunk, blocks]
  /// (query block, rows, columns, key block), made once per operand.
  DenseMap<Value, Value> byKeyBlock;
  /// The same in half blocks: [..., 2 blocks, half, half, 2 blocks].
  DenseMap<Value, Value> byKeyHalf;
};

} // namespace

std::optional<Attention>
RingRewriter::attentionAt(nn::SoftmaxOp softmax) const {
  auto type = softmax.getInput().getType();
  int64_t rank = type.getRank();
  int64_t softmaxAxis = axisOf(softmax);
  if (rank < 3 || softmaxAxis != rank - 1 ||
      type.getDimSize(rank - 1) != sequence ||
      type.getDimSize(rank - 2) != sequence)
    return std::nullopt;
  Attention att{softmax, scoresProducer(softmax.getInput()),
                outputConsumer(softmax.getResult())};
  if (!att.scores || !att.output)
    return std::nullopt;
  return att;
}

void RingRewriter::choose(nn::SoftmaxOp softmax, const cost::MeshCost &links,
                          int64_t axisIndex,
                          const RingAttentionOptions &options,
                          std::vector<AttentionDecision> *decisions) {
  // Anything else is not attention to dist-apply-plan either: it says so.
  std::optional<Attention> att = attentionAt(softmax);
  if (!att)
    return;
  Location loc = softmax.getLoc();
  std::string layer = layerOf(softmax);
  AttentionShape shape = attentionShape(*att, sequence, options.training);
  AttentionDecision decision =
      chooseAttention(shape, links, axisIndex, axis, options.memoryBudget);
  if (decision.variant == "ring") {
    // The rewrite changes nothing where it gives a reason not to.
    if (std::string why = rewrite(softmax); !why.empty())
      decision = chooseAttention(shape, links, axisIndex, axis,
                                 options.memoryBudget, {{"ring", why}});
  }
  if (decision.variant != "ring")
    softmax->setAttr(kChosenAttentionAttr,
                     StringAttr::get(func.getContext(), decision.variant));
  decision.layer = layer;
  mlir::emitRemark(loc) << describeDecision(decision);
  if (decisions)
    decisions->push_back(std::move(decision));
}

std::string RingRewriter::unblockable(Value x, int64_t rank) {
  ArrayRef<int64_t> xs = shapeOf(x);
  int64_t rx = xs.size();
  int64_t rows = rx >= 2 ? xs[rx - 2] : 1, cols = rx >= 1 ? xs[rx - 1] : 1;
  if (rx <= rank &&
      ((rows == 1 && cols == 1) || (rows == sequence && cols == sequence)))
    return "";
  std::string shape;
  llvm::raw_string_ostream os(shape);
  llvm::interleave(xs, os, "x");
  return "ring attention cuts the scores' masks and scales into blocks only "
         "when they are scalars per row and column or [seq, seq] matrices, "
         "not tensor<" +
         shape + ">";
}

Value RingRewriter::byKeyPiece(OpBuilder &b, Location loc, Value x,
                               int64_t pieces, DenseMap<Value, Value> &cache) {
  Value &keyed = cache[x];
  if (keyed)
    return keyed;
  ArrayRef<int64_t> xs = shapeOf(x);
  int64_t p = xs.size() - 2, size = sequence / pieces;
  SmallVector<int64_t> shape(xs.take_front(p));
  shape.append({pieces, size, pieces, size});
  Value split = nn::ReshapeOp::create(b, loc, withShape(x, shape), x);
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < p; ++d)
    perm.push_back(d);
  perm.append({p, p + 1, p + 3, p + 2});
  keyed = nn::TransposeOp::create(b, loc, split, b.getDenseI64ArrayAttr(perm));
  return keyed;
}

Value RingRewriter::blockOf(OpBuilder &b, Location loc, Value x, int64_t t) {
  ArrayRef<int64_t> xs = shapeOf(x);
  int64_t rx = xs.size();
  if (rx < 2 || xs[rx - 1] == 1) {
    // Same for every block: only the new block dimension is inserted.
    if (rx <= 2)
      return x;
    SmallVector<int64_t> shape(xs.take_front(rx - 2));
    shape.append({1, 1, 1});
    return nn::ReshapeOp::create(b, loc, withShape(x, shape), x);
  }
  int64_t chunk = sequence / blocks, p = rx - 2;
  Value keyed = byKeyPiece(b, loc, x, blocks, byKeyBlock);
  // Query block r meets key block (r - t) mod blocks at step t.
  SmallVector<int64_t> idxShape(xs.take_front(p));
  idxShape.append({blocks, chunk, chunk, 1});
  int64_t outer = 1;
  for (int64_t d = 0; d < p; ++d)
    outer *= xs[d];
  SmallVector<int64_t> idx;
  idx.reserve(outer * blocks * chunk * chunk);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < blocks; ++r)
      idx.append(chunk * chunk, llvm::mod(r - t, blocks));
  auto idxType = RankedTensorType::get(idxShape, b.getI64Type());
  Value indices = nn::ConstantOp::create(
      b, loc, idxType, DenseIntElementsAttr::get(idxType, idx));
  Value picked = nn::GatherElementsOp::create(b, loc, keyed, indices,
                                              b.getI64IntegerAttr(p + 3));
  idxShape.pop_back();
  return nn::ReshapeOp::create(b, loc, withShape(x, idxShape), picked);
}

Value RingRewriter::finiteBlockOf(OpBuilder &b, Location loc, Value x,
                                  int64_t t, const PairPlan *pairs) {
  auto cut = [&](Value v) {
    return pairs ? pairBlockOf(b, loc, v, t, *pairs) : blockOf(b, loc, v, t);
  };
  auto type = cast<RankedTensorType>(x.getType());
  auto et = dyn_cast<FloatType>(type.getElementType());
  if (!et)
    return cut(x);
  auto lowest = FloatAttr::get(
      et, APFloat::getLargest(et.getFloatSemantics(), /*Negative=*/true));
  // A mixed-precision policy casts the fill to the compute dtype first:
  // the constant is looked for through casts, and replaced by the lowest
  // value of x's own type (f32's lowest would round to -inf in bf16).
  Value source = x;
  while (auto cast = source.getDefiningOp<nn::CastOp>())
    source = cast.getInput();
  if (auto c = source.getDefiningOp<nn::ConstantOp>()) {
    auto dense = dyn_cast<DenseFPElementsAttr>(c.getValue());
    if (dense && dense.isSplat()) {
      APFloat v = dense.getSplatValue<APFloat>();
      if (v.isInfinity() && v.isNegative())
        x = nn::ConstantOp::create(b, loc, type,
                                   DenseElementsAttr::get(type, lowest));
      return cut(x);
    }
  }
  Value block = cut(x);
  if (shapeOf(x).size() < 2 || shapeOf(x).back() == 1)
    return block;
  auto scalarType = RankedTensorType::get({}, et);
  return nn::MaxOp::create(
      b, loc, block,
      nn::ConstantOp::create(b, loc, scalarType,
                             DenseElementsAttr::get(scalarType, lowest)));
}

/// The elements of a [..., seq, seq] constant (prefix dimensions of extent
/// 1), row-major over the last two; empty when `x` is not such a constant.
static SmallVector<APInt> squareConstant(Value x, int64_t sequence) {
  auto c = x.getDefiningOp<nn::ConstantOp>();
  auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
  ArrayRef<int64_t> xs = shapeOf(x);
  if (!dense || xs.size() < 2 || xs.back() != sequence ||
      xs[xs.size() - 2] != sequence ||
      dense.getNumElements() != sequence * sequence ||
      !dense.getElementType().isInteger(1))
    return {};
  return SmallVector<APInt>(dense.getValues<APInt>());
}

static bool isNegativeInfinity(Value x) {
  auto c = x.getDefiningOp<nn::ConstantOp>();
  auto dense = c ? dyn_cast<DenseFPElementsAttr>(c.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return false;
  APFloat v = dense.getSplatValue<APFloat>();
  return v.isNegative() && (v.isInfinity() || v.isLargest());
}

std::optional<RingRewriter::PairPlan>
RingRewriter::planPairs(ArrayRef<Operation *> chain,
                        function_ref<Value(size_t)> chainInput) {
  // Which scores the masks hide: `where(mask, -inf, scores)` hides where a
  // constant mask is true, `where(mask, scores, -inf)` where it is false.
  std::vector<bool> hidden(sequence * sequence, false);
  bool any = false;
  for (auto [i, op] : llvm::enumerate(chain)) {
    auto where = dyn_cast<nn::WhereOp>(op);
    if (!where)
      continue;
    Value through = chainInput(i);
    bool hideWhenTrue;
    if (where.getRhs() == through && isNegativeInfinity(where.getLhs()))
      hideWhenTrue = true;
    else if (where.getLhs() == through && isNegativeInfinity(where.getRhs()))
      hideWhenTrue = false;
    else
      continue;
    SmallVector<APInt> mask = squareConstant(where.getCondition(), sequence);
    if (mask.empty())
      continue;
    any = true;
    for (int64_t k = 0, n = mask.size(); k < n; ++k)
      if (mask[k].getBoolValue() == hideWhenTrue)
        hidden[k] = true;
  }
  if (!any)
    return std::nullopt;
  int64_t half = sequence / (2 * blocks);
  // Whether program chunk a's queries see nothing of chunk b's keys.
  auto hides = [&](int64_t a, int64_t bk) {
    for (int64_t i = a * half; i < (a + 1) * half; ++i)
      for (int64_t j = bk * half; j < (bk + 1) * half; ++j)
        if (!hidden[i * sequence + j])
          return false;
    return true;
  };
  PairPlan plan(blocks);
  for (int64_t t = 1; t < blocks; ++t) {
    plan[t].resize(blocks);
    for (int64_t r = 0; r < blocks; ++r) {
      int64_t k = llvm::mod(r - t, blocks);
      SmallVector<std::pair<int, int>> seen, unseen;
      for (int qh = 0; qh < 2; ++qh)
        for (int kh = 0; kh < 2; ++kh)
          (hides(2 * r + qh, 2 * k + kh) ? unseen : seen).push_back({qh, kh});
      // More than two visible pairs: this step cannot be halved.
      if (seen.size() > 2)
        return std::nullopt;
      // Padded with hidden pairs, which the merge weighs 0.
      seen.append(unseen.begin(), unseen.end());
      plan[t][r] = {seen[0], seen[1]};
    }
  }
  return plan;
}

Value RingRewriter::halfSelector(OpBuilder &b, Location loc, int64_t t,
                                 const PairPlan &plan, bool keys,
                                 int64_t trailing) {
  SmallVector<int64_t> shape{blocks, 2};
  shape.append(trailing, 1);
  auto type = RankedTensorType::get(shape, b.getI1Type());
  SmallVector<bool> sel;
  for (int64_t r = 0; r < blocks; ++r)
    for (int p = 0; p < 2; ++p)
      sel.push_back((keys ? plan[t][r][p].second : plan[t][r][p].first) == 1);
  return nn::ConstantOp::create(b, loc, type,
                                DenseElementsAttr::get(type, ArrayRef(sel)));
}

Value RingRewriter::pairBlockOf(OpBuilder &b, Location loc, Value x, int64_t t,
                                const PairPlan &plan) {
  ArrayRef<int64_t> xs = shapeOf(x);
  int64_t rx = xs.size();
  if (rx < 2 || xs[rx - 1] == 1) {
    if (rx <= 2)
      return x;
    SmallVector<int64_t> shape(xs.take_front(rx - 2));
    shape.append({1, 1, 1, 1});
    return nn::ReshapeOp::create(b, loc, withShape(x, shape), x);
  }
  int64_t halves = 2 * blocks, half = sequence / halves, p = rx - 2;
  Value keyed = byKeyPiece(b, loc, x, halves, byKeyHalf);
  // Rank r's pair (qh, kh) at step t: query chunk 2r + qh (half qh of its
  // own block: a local choice), key chunk 2k + kh of the key block
  // k = (r - t) mod blocks.
  ArrayRef<int64_t> ks = shapeOf(keyed);
  SmallVector<int64_t> byBlock(ks.take_front(p));
  byBlock.append({blocks, 2, half, half, halves});
  Value rowsOf = nn::ReshapeOp::create(b, loc, withShape(x, byBlock), keyed);
  SmallVector<Value, 2> rowHalves;
  for (int64_t h = 0; h < 2; ++h) {
    SmallVector<int64_t> starts(byBlock.size(), 0), ends(byBlock),
        steps(byBlock.size(), 1), shape(byBlock);
    starts[p + 1] = h;
    ends[p + 1] = h + 1;
    shape[p + 1] = 1;
    rowHalves.push_back(nn::SliceOp::create(
        b, loc, withShape(x, shape), rowsOf, b.getDenseI64ArrayAttr(starts),
        b.getDenseI64ArrayAttr(ends), b.getDenseI64ArrayAttr(steps)));
  }
  Value picked = nn::WhereOp::create(
      b, loc, halfSelector(b, loc, t, plan, /*keys=*/false, 3), rowHalves[1],
      rowHalves[0]);
  SmallVector<int64_t> cols;
  for (int64_t r = 0; r < blocks; ++r)
    for (int q = 0; q < 2; ++q)
      cols.push_back(2 * llvm::mod(r - t, blocks) + plan[t][r][q].second);
  SmallVector<int64_t> idxShape(xs.take_front(p));
  idxShape.append({blocks, 2, half, half, 1});
  int64_t outer = 1;
  for (int64_t d = 0; d < p; ++d)
    outer *= xs[d];
  SmallVector<int64_t> idx;
  idx.reserve(outer * 2 * blocks * half * half);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c : cols)
      idx.append(half * half, c);
  auto idxType = RankedTensorType::get(idxShape, b.getI64Type());
  Value indices = nn::ConstantOp::create(
      b, loc, idxType, DenseIntElementsAttr::get(idxType, idx));
  picked = nn::GatherElementsOp::create(b, loc, picked, indices,
                                        b.getI64IntegerAttr(p + 4));
  idxShape.pop_back();
  return nn::ReshapeOp::create(b, loc, withShape(x, idxShape), picked);
}

std::string RingRewriter::rewrite(nn::SoftmaxOp softmax) {
  std::optional<Attention> found = attentionAt(softmax);
  if (!found)
    return "";
  Attention att = *found;
  int64_t rank = softmax.getInput().getType().getRank();
  SmallVector<Operation *> chain;
  scoresProducer(softmax.getInput(), &chain);
  if (sequence % blocks != 0)
    return "ring attention needs the sequence (" + std::to_string(sequence) +
           ") to divide by " + axis + "=" + std::to_string(blocks);
  std::reverse(chain.begin(), chain.end());
  Value q = att.scores.getLhs(), kt = att.scores.getRhs(),
        v = att.output.getRhs();
  if (shapeOf(q).size() != size_t(rank) || shapeOf(kt).size() != size_t(rank) ||
      shapeOf(v).size() != size_t(rank) || shapeOf(v)[rank - 2] != sequence)
    return "ring attention needs queries, keys and values of the scores' "
           "rank";
  // The value op `i` of the chain reads from the scores' side.
  auto chainInput = [&](size_t i) -> Value {
    return i == 0 ? Value(att.scores.getResult()) : chain[i - 1]->getResult(0);
  };
  // Each operand of the scores' element-wise ops other than the scores.
  for (auto [i, op] : llvm::enumerate(chain)) {
    Value through = chainInput(i);
    if (isa<dist::AnnotateOp>(op))
      continue;
    for (Value x : op->getOperands())
      if (x != through)
        if (std::string why = unblockable(x, rank); !why.empty())
          return why;
  }
  // The probabilities reach ·V through casts (and annotations).
  SmallVector<Operation *> probs;
  for (Value p = att.output.getLhs(); p != softmax.getResult();) {
    Operation *def = p.getDefiningOp();
    if (!def || !isa<nn::CastOp, dist::AnnotateOp>(def))
      return "ring attention needs the probabilities to reach the values' "
             "matmul only through casts";
    probs.push_back(def);
    p = def->getOperand(0);
  }
  std::reverse(probs.begin(), probs.end());
  // Anything else reading the scores or probabilities would keep the
  // whole-sequence attention alive next to the ring.
  auto readOnce = [](Operation *op) { return op->getResult(0).hasOneUse(); };
  if (!readOnce(att.scores) || !readOnce(softmax) ||
      !llvm::all_of(chain, readOnce) || !llvm::all_of(probs, readOnce))
    return "ring attention needs the scores and probabilities to be read "
           "only on the way to the values' matmul";

  OpBuilder b(att.output);
  std::string node = nn::getNodeName(softmax);
  StringRef dir = StringRef(node).rsplit('/').first;
  auto at = [&](const Twine &what) -> Location {
    return NameLoc::get(b.getStringAttr(dir + "/Ring" + what),
                        softmax.getLoc());
  };
  int64_t blockDim = rank - 2;
  Value qb = nn::ReshapeOp::create(
      b, at("Q"), withShape(q, splitDim(shapeOf(q), rank - 2, blocks)), q);
  Value kb = nn::ReshapeOp::create(
      b, at("K"), withShape(kt, splitDim(shapeOf(kt), rank - 1, blocks)), kt);
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank - 2; ++d)
    perm.push_back(d);
  perm.append({rank - 1, rank - 2, rank});
  kb = nn::TransposeOp::create(b, at("K"), kb, b.getDenseI64ArrayAttr(perm));
  Value vb = nn::ReshapeOp::create(
      b, at("V"), withShape(v, splitDim(shapeOf(v), rank - 2, blocks)), v);

  auto castTo = [&](Location loc, Value x, Type et) -> Value {
    auto xt = cast<RankedTensorType>(x.getType());
    if (xt.getElementType() == et)
      return x;
    return nn::CastOp::create(b, loc, xt.clone(et), x);
  };
  // Causal load balancing: each step after the first computes the two
  // (query half, key half) pairs of its blocks the masks leave visible.
  std::optional<PairPlan> pairs;
  if (balance) {
    pairs = planPairs(chain, chainInput);
    // Per rank and step: the score elements computed (every rank the same).
    int64_t block = sequence / blocks, half = block / 2;
    int64_t work = block * block +
                   (blocks - 1) * (pairs ? 2 * half * half : block * block);
    softmax->getParentOfType<func::FuncOp>()->setAttr(
        kRingLayoutAttr,
        b.getStringAttr(
            "context parallelism: ring attention balanced for causal masks: "
            "rank r holds sequence chunks r and " +
            std::to_string(2 * blocks - 1) + "-r of " +
            std::to_string(2 * blocks) + "; each rank computes " +
            std::to_string(work) + " scores per attention, batch row and "
                                   "head (" +
            (pairs ? "each step after the first skips the half of its "
                     "blocks the mask hides"
                   : "the masks hide no half of a step: every step is whole") +
            "), the same on every rank"));
  }
  // [..., blocks, 2c, d] as [..., blocks, 1, c, d] for half 0 and half 1,
  // the two halves along dimension `dim` of the block (K's is its last).
  auto halvesOf = [&](Location loc, Value x, bool keys) {
    ArrayRef<int64_t> xs = shapeOf(x);
    SmallVector<int64_t> shape(xs.take_front(blockDim + 1));
    if (keys)
      shape.append({xs[blockDim + 1], 2, xs.back() / 2});
    else
      shape.append({2, xs[blockDim + 1] / 2, xs.back()});
    Value split = nn::ReshapeOp::create(b, loc, withShape(x, shape), x);
    if (keys) {
      SmallVector<int64_t> perm;
      for (int64_t d = 0; d <= blockDim; ++d)
        perm.push_back(d);
      perm.append({blockDim + 2, blockDim + 1, blockDim + 3});
      split = nn::TransposeOp::create(b, loc, split,
                                      b.getDenseI64ArrayAttr(perm));
    }
    SmallVector<Value, 2> parts;
    ArrayRef<int64_t> ss = shapeOf(split);
    for (int64_t h = 0; h < 2; ++h) {
      SmallVector<int64_t> starts(ss.size(), 0), ends(ss), steps(ss.size(), 1);
      starts[blockDim + 1] = h;
      ends[blockDim + 1] = h + 1;
      SmallVector<int64_t> shape(ss);
      shape[blockDim + 1] = 1;
      parts.push_back(nn::SliceOp::create(
          b, loc, withShape(x, shape), split, b.getDenseI64ArrayAttr(starts),
          b.getDenseI64ArrayAttr(ends), b.getDenseI64ArrayAttr(steps)));
    }
    return parts;
  };
  // A step's two pairs [..., blocks, 2 (pair), c, dv] and their log-sum-
  // exps as the contributions to the block's query halves [..., blocks,
  // 2c, dv]: each half merges the pairs that read it (a constant bias of
  // the lowest value drops the others), a half no pair reads gets a
  // log-sum-exp so low that the running merge weighs it 0.
  auto mergePairs = [&](Location loc, Value o, Value lseT,
                        int64_t t) -> std::pair<Value, Value> {
    ArrayRef<int64_t> os = shapeOf(o), ls = shapeOf(lseT);
    int64_t pairDim = blockDim + 1;
    auto insertHalf = [&](Value v, ArrayRef<int64_t> vs) {
      SmallVector<int64_t> shape(vs);
      shape.insert(shape.begin() + pairDim, 1);
      return nn::ReshapeOp::create(b, loc, withShape(v, shape), v);
    };
    auto ft = cast<FloatType>(
        cast<RankedTensorType>(lseT.getType()).getElementType());
    auto biasType = RankedTensorType::get({blocks, 2, 2, 1, 1}, ft);
    APFloat lowest = APFloat::getLargest(ft.getFloatSemantics(), true);
    APFloat zero = APFloat::getZero(ft.getFloatSemantics());
    SmallVector<APFloat> bias;
    for (int64_t r = 0; r < blocks; ++r)
      for (int h = 0; h < 2; ++h)
        for (int q = 0; q < 2; ++q)
          bias.push_back((*pairs)[t][r][q].first == h ? zero : lowest);
    Value biasC = nn::ConstantOp::create(
        b, loc, biasType, DenseElementsAttr::get(biasType, bias));
    Value lseH = nn::AddOp::create(b, loc, insertHalf(lseT, ls), biasC);
    auto pairAxis = b.getDenseI64ArrayAttr({pairDim + 1});
    Value mh = nn::ReduceMaxOp::create(b, loc, lseH, pairAxis, b.getUnitAttr());
    Value w = nn::ExpOp::create(b, loc, nn::SubOp::create(b, loc, lseH, mh));
    Value sum = nn::ReduceSumOp::create(b, loc, w, pairAxis, b.getUnitAttr());
    Type ot = cast<RankedTensorType>(o.getType()).getElementType();
    Value weighted = nn::MulOp::create(b, loc, insertHalf(o, os),
                                       castTo(loc, w, ot));
    Value merged = nn::DivOp::create(
        b, loc,
        nn::ReduceSumOp::create(b, loc, weighted, pairAxis, b.getUnitAttr()),
        castTo(loc, sum, ot));
    Value lseMerged =
        nn::AddOp::create(b, loc, mh, nn::LogOp::create(b, loc, sum));
    // [..., blocks, 2 (half), 1, c, x] as [..., blocks, 2c, x].
    auto asBlock = [&](Value v) {
      ArrayRef<int64_t> vs = shapeOf(v);
      SmallVector<int64_t> shape(vs.take_front(blockDim + 1));
      shape.append({2 * vs[blockDim + 3], vs.back()});
      return nn::ReshapeOp::create(b, loc, withShape(v, shape), v);
    };
    return {asBlock(merged), asBlock(lseMerged)};
  };
  SmallVector<Value, 2> qHalves;
  if (pairs)
    qHalves = halvesOf(at("Q"), qb, false);
  Value out, lse;
  for (int64_t t = 0; t < blocks; ++t) {
    std::string step = std::to_string(t);
    if (t > 0) {
      kb = nn::createRoll(b, at("RollK" + step), kb, blockDim, 1);
      vb = nn::createRoll(b, at("RollV" + step), vb, blockDim, 1);
    }
    Location loc = at("Step" + step);
    bool halved = pairs && t > 0;
    Value qs = qb, ks = kb, vs = vb;
    if (halved) {
      // Each pair's halves, chosen per rank by constant selectors.
      auto pick = [&](ArrayRef<Value> halves, bool keys) -> Value {
        return nn::WhereOp::create(b, loc, halfSelector(b, loc, t, *pairs,
                                                        keys),
                                   halves[1], halves[0]);
      };
      qs = pick(qHalves, false);
      ks = pick(halvesOf(loc, kb, true), true);
      vs = pick(halvesOf(loc, vb, false), true);
    }
    Value s = nn::MatMulOp::create(b, loc, qs, ks);
    SmallVector<int64_t> blockShape(shapeOf(s));
    for (auto [i, op] : llvm::enumerate(chain)) {
      if (isa<dist::AnnotateOp>(op))
        continue;
      Value through = chainInput(i);
      IRMapping map;
      for (Value x : op->getOperands())
        map.map(x, x == through
                       ? s
                       : finiteBlockOf(b, loc, x, t,
                                       halved ? &*pairs : nullptr));
      Operation *copy = b.clone(*op, map);
      copy->setLoc(loc);
      copy->getResult(0).setType(withShape(op->getResult(0), blockShape));
      s = copy->getResult(0);
    }
    // The step's softmax, unnormalised: e·V and the row sums l, merged
    // below with the log-sum-exp m + log l. Backward keeps the scores (for
    // the max) and e, as one whole-sequence softmax keeps its input and
    // output.
    int64_t sRank = shapeOf(s).size();
    auto last = b.getDenseI64ArrayAttr({sRank - 1});
    Value m = nn::ReduceMaxOp::create(b, loc, s, last, b.getUnitAttr());
    Value e = nn::ExpOp::create(b, loc, nn::SubOp::create(b, loc, s, m));
    Value l = nn::ReduceSumOp::create(b, loc, e, last, b.getUnitAttr());
    Value lseT = nn::AddOp::create(b, loc, m, nn::LogOp::create(b, loc, l));
    Value p = e;
    for (Operation *op : probs) {
      if (isa<dist::AnnotateOp>(op))
        continue;
      p = castTo(loc, p,
                 cast<RankedTensorType>(op->getResult(0).getType())
                     .getElementType());
    }
    Type ot = cast<RankedTensorType>(att.output.getType()).getElementType();
    Value o = nn::DivOp::create(b, loc, nn::MatMulOp::create(b, loc, p, vs),
                                castTo(loc, l, ot));
    if (halved)
      std::tie(o, lseT) = mergePairs(loc, o, lseT, t);
    if (t == 0) {
      out = o;
      lse = lseT;
      continue;
    }
    // out = (out·exp(lse - mx) + o·exp(lseT - mx)) / w, lse = mx + log w.
    Value mx = nn::MaxOp::create(b, loc, lse, lseT);
    Value a = nn::ExpOp::create(b, loc, nn::SubOp::create(b, loc, lse, mx));
    Value c = nn::ExpOp::create(b, loc, nn::SubOp::create(b, loc, lseT, mx));
    Value w = nn::AddOp::create(b, loc, a, c);
    Value keep = castTo(loc, nn::DivOp::create(b, loc, a, w), ot);
    Value take = castTo(loc, nn::DivOp::create(b, loc, c, w), ot);
    out = nn::AddOp::create(b, loc, nn::MulOp::create(b, loc, out, keep),
                            nn::MulOp::create(b, loc, o, take));
    if (t + 1 < blocks)
      lse = nn::AddOp::create(b, loc, mx, nn::LogOp::create(b, loc, w));
  }
  Value merged = nn::ReshapeOp::create(b, at("Output"),
                                       att.output.getResult().getType(), out);
  att.output.getResult().replaceAllUsesWith(merged);
  // The whole-sequence attention is dead now.
  SmallVector<Operation *> dead{att.output};
  dead.append(probs.rbegin(), probs.rend());
  dead.push_back(softmax);
  dead.append(chain.rbegin(), chain.rend());
  dead.push_back(att.scores);
  for (Operation *op : dead)
    if (op->use_empty())
      op->erase();
  return "";
}

/// Causal load balancing's layout: the tables indexed by position permuted
/// to the mirrored chunks the inputs will be fed in. An input whose
/// sequence does not divide into 2 x `blocks` chunks is an error.
static LogicalResult mirrorSequence(func::FuncOp func, StringRef axis,
                                    int64_t blocks) {
  int64_t sequence = sequenceOf(func);
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() < 2)
      continue;
    int64_t extent = type.getDimSize(1);
    if (!ShapedType::isDynamic(extent) && extent % (2 * blocks) == 0)
      continue;
    auto name =
        func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kNameAttr);
    return mlir::emitError(arg.getLoc())
           << "context parallelism: load_balance needs input '"
           << (name ? name.str()
                    : "input_" + std::to_string(arg.getArgNumber()))
           << "' dimension 1 (the sequence, "
           << (ShapedType::isDynamic(extent) ? std::string("dynamic")
                                             : std::to_string(extent))
           << ") to divide by 2 x " << axis << " = " << 2 * blocks
           << " (two mirrored chunks per rank)";
  }
  std::string why;
  SmallVector<int64_t> chunks = mirroredChunks(blocks);
  if (!ShapedType::isDynamic(sequence) &&
      failed(permuteSequenceTables(func, sequence, chunks, why)))
    return func.emitError("context parallelism: load_balance cannot hold "
                          "the sequence in mirrored chunks: ")
           << why;
  func->setAttr(kRingChunksAttr,
                DenseI64ArrayAttr::get(func.getContext(), chunks));
  return success();
}

LogicalResult
distopt::plan::applyRingAttention(ModuleOp module,
                                  const RingAttentionOptions &options,
                                  std::vector<AttentionDecision> *decisions) {
  func::FuncOp func = mainFunction(module);
  if (!func)
    return failure();
  if (!options.choose) {
    if (options.blocks <= 1)
      return success();
    if (options.balance &&
        failed(mirrorSequence(func, options.axis, options.blocks)))
      return failure();
    RingRewriter(func, options.blocks, options.axis, options.balance)
        .run(nullptr, 0, options, decisions);
    return success();
  }
  // Balancing is for a ring the plan names (dist-ring-attention refuses it
  // with a choice): the choice's rings are unbalanced.
  RingRewriter rewriter(func, options.blocks, options.axis, /*balance=*/false);
  // The links of the axis as the whole mesh places it.
  std::vector<std::string> names = options.meshAxes;
  std::vector<int64_t> sizes = options.meshSizes;
  if (names.empty()) {
    names = {options.axis};
    sizes = {options.blocks};
  }
  auto it = llvm::find(names, options.axis);
  // Without the axis (or its size) dist-apply-plan says what is missing.
  if (it == names.end() || options.blocks < 1)
    return success();
  auto machine = options.machine;
  if (!machine)
    machine = std::make_shared<const cost::MachineProfile>(
        cost::defaultMachineProfile());
  cost::MeshCost links(std::move(machine), names, sizes);
  rewriter.run(&links, it - names.begin(), options, decisions);
  return success();
}
