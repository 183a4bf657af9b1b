//===- PropagateSharding.cpp - dist-propagate-sharding ----------*- C++ -*-===//
//
// Fills every open placement from the annotations, op by op and axis by axis.
// For one op and one mesh axis, each decided tensor around the op votes for
// the choice that explains its placement (a factor, none, or a partial flow);
// the op takes the candidate that agrees with the strongest-priority tensors
// and otherwise moves the fewest bytes, then fills the open tensors with the
// placements that choice implies. A worklist repeats this until nothing
// changes, first for priority 0 (pass-through ops, then all ops), then for
// priority 1, and so on. See docs/propagation.md.
//
//===----------------------------------------------------------------------===//
#include "FactorChoice.h"
#include "distopt/CostModel/CostModel.h"
#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/Transforms/Passes.h"
#include "distopt/Dialect/Dist/Transforms/Propagation.h"
#include "distopt/Dialect/Dist/Transforms/ValueSharding.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include <climits>
#include <deque>
#include <map>
#include <set>

namespace distopt::dist {
#define GEN_PASS_DEF_DISTPROPAGATESHARDING
#include "distopt/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace distopt::dist

using namespace mlir;
using namespace distopt::dist;
namespace cost = distopt::cost;

namespace {

struct AxisState {
  Placement placement;
  int priority = INT_MAX;
  int cause = -1;     // index into Propagator::causes
  bool fixed = false; // set by an annotation: never changed
};

struct ValueState {
  SmallVector<AxisState> axes;
  double globalBytes = 0;
  /// The propagation's tick when a placement of the value was last filled.
  uint64_t changedAt = 0;
};

/// An op's rule (an index into the rule store) and what its last step saw:
/// a step is a function of the states around the op, the round and whether
/// partial sums may flow, so an op none of these changed for is skipped.
struct OpMemo {
  unsigned rule = 0;
  /// Every placement around the op decided: it is done.
  bool finished = false;
  bool stepped = false;
  bool allowedPartialFlow = false;
  int round = 0;
  uint64_t steppedAt = 0;
};

class Propagator {
public:
  Propagator(MeshOp mesh, const cost::MeshCost &links)
      : meshSizes(mesh.getAxisSizes()), numAxes(meshSizes.size()) {
    for (int64_t a = 0; a < numAxes; ++a)
      axisNames.push_back(mesh.getAxisName(a).str());
    // Bytes over an axis weigh as much as the fastest axis moves in the
    // same time (exactly 1 where the links are alike); a collective's
    // latency is what the axis's own link moves meanwhile.
    double fastest = 0;
    for (int64_t a = 0; a < numAxes; ++a)
      fastest = std::max(fastest, links.axisLink(a).betaGBps);
    for (int64_t a = 0; a < numAxes; ++a) {
      const cost::AlphaBeta &l = links.axisLink(a);
      byteWeight.push_back(fastest / l.betaGBps);
      latencyBytes.push_back(l.alphaUs * l.betaGBps * 1e3);
    }
  }

  LogicalResult run(FunctionOpInterface func);
  void materialize(FunctionOpInterface func, FlatSymbolRefAttr meshRef);
  /// `v`'s placement per mesh axis after run(), as materialize writes it.
  SmallVector<Placement> placementsOf(Value v);

private:
  ValueState &state(Value v);
  /// `op`'s memo, made with its rule the first time.
  OpMemo &memoOf(Operation *op);
  bool isSourceValue(Value v);
  bool isPassThrough(Operation *op);
  /// Whether the producer of `v` can give it placement `p` on `axis`.
  bool canProduce(Value v, int64_t axis, Placement p);
  void seedAnnotations(FunctionOpInterface func, std::set<int> &priorities);
  SmallVector<Value> step(Operation *op, int round, bool allowPartialFlow);
  void runPhase(ArrayRef<Operation *> ops, int round, bool passThroughOnly,
                bool allowPartialFlow);
  /// What moving `vs` from `from` to `to` on `axis` costs: the bytes its
  /// collective sends, weighed by the axis's link (byteWeight).
  double axisCost(const ValueState &vs, int64_t axis, Placement from,
                  Placement to);
  const OpShardingRule *rule(Operation *op);
  /// Whether every reader of `v` other than `except` could keep it partial
  /// (reads it once, in a linear position of an op partial sums flow
  /// through). A partial value some reader needs whole is reduced anyway;
  /// reducing it once where it is made is then no dearer, and serves all
  /// its readers.
  bool readersKeepPartial(Value v, Operation *except);
  /// Whether a partial `v` is best reduced where it is made: letting it flow
  /// on through every reader that could keep it partial would end in
  /// reductions (one per value some reader needs whole) that move more
  /// bytes, a collective's latency on `axis` counted as bytes, than
  /// reducing `v` once.
  /// A gradient that fans out into an activation gradient and two small
  /// parameter gradients (a norm's backward) is the case: one all-reduce,
  /// not three.
  bool cheaperReducedAtSource(Value v, int64_t axis);
  bool computeCheaperReducedAtSource(Value v, int64_t axis);

  SmallVector<int64_t> meshSizes;
  int64_t numAxes;
  SmallVector<std::string> axisNames;
  /// Per axis, from the cost model: what a byte over it weighs, and its
  /// latency in bytes.
  SmallVector<double> byteWeight;
  SmallVector<double> latencyBytes;
  DenseMap<Value, ValueState> states;
  /// Per op, its rule's index into a stable store (rules are large, and
  /// looked up far more often than made) and its last step.
  DenseMap<Operation *, OpMemo> memos;
  std::deque<std::optional<OpShardingRule>> ruleStore;
  DenseMap<std::pair<Value, int64_t>, bool> reducedAtSource;
  std::vector<std::string> causes;
  /// Counts state changes: ValueState::changedAt, OpMemo::steppedAt.
  uint64_t tick = 0;
};

} // namespace

ValueState &Propagator::state(Value v) {
  // A loop's sum is laid out as what its body yields: one state for both.
  if (Value yielded = yieldedFor(v))
    return state(yielded);
  auto it = states.find(v);
  if (it != states.end())
    return it->second;
  ValueState vs;
  vs.axes.resize(numAxes);
  if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
    double bytes = elementBytes(t.getElementType());
    for (int64_t s : t.getShape())
      bytes *= ShapedType::isDynamic(s) ? 1 : s;
    vs.globalBytes = bytes;
  }
  return states.try_emplace(v, std::move(vs)).first->second;
}

OpMemo &Propagator::memoOf(Operation *op) {
  auto [it, inserted] = memos.try_emplace(op);
  if (inserted) {
    it->second.rule = ruleStore.size();
    ruleStore.push_back(getRule(op));
  }
  return it->second;
}

const OpShardingRule *Propagator::rule(Operation *op) {
  std::optional<OpShardingRule> &r = ruleStore[memoOf(op).rule];
  return r ? &*r : nullptr;
}

bool Propagator::readersKeepPartial(Value v, Operation *except) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (user == except)
      continue;
    if (Value sum = loopResultOf(use)) {
      if (!readersKeepPartial(sum, nullptr))
        return false;
      continue;
    }
    const OpShardingRule *r = rule(user);
    if (!r || r->partialFlow == PartialFlow::None ||
        r->linearOperands.size() != user->getNumOperands() ||
        !r->linearOperands[use.getOperandNumber()])
      return false;
    if (r->partialFlow == PartialFlow::OneLinear &&
        llvm::count(user->getOperands(), v) > 1)
      return false;
  }
  return true;
}

bool Propagator::cheaperReducedAtSource(Value v, int64_t axis) {
  // The answer depends on the graph, the rules and the axis's link only:
  // compute it once.
  auto key = std::make_pair(v, axis);
  if (auto it = reducedAtSource.find(key); it != reducedAtSource.end())
    return it->second;
  bool answer = computeCheaperReducedAtSource(v, axis);
  reducedAtSource[key] = answer;
  return answer;
}

bool Propagator::computeCheaperReducedAtSource(Value v, int64_t axis) {
  // What one more collective costs, in bytes moved: fewer, larger
  // collectives win unless flowing on saves real volume.
  const double kLatencyBytes = latencyBytes[axis];
  constexpr size_t kMaxValues = 64;
  // Only where the value fans out: a value with one reader can still be
  // reduced once further on, after a sum of partials, say.
  if (llvm::hasSingleElement(v.getUsers()) || v.use_empty())
    return false;
  SmallVector<Value> work{v};
  llvm::SmallPtrSet<Value, 16> seen{v};
  double sinks = 0;
  while (!work.empty()) {
    Value w = work.pop_back_val();
    bool reducedHere = false;
    for (OpOperand &use : w.getUses()) {
      Operation *user = use.getOwner();
      if (Value sum = loopResultOf(use)) {
        if (seen.insert(sum).second)
          work.push_back(sum);
        continue;
      }
      const OpShardingRule *r = rule(user);
      bool flows = r && r->partialFlow != PartialFlow::None &&
                   r->linearOperands.size() == user->getNumOperands() &&
                   r->linearOperands[use.getOperandNumber()] &&
                   !(r->partialFlow == PartialFlow::OneLinear &&
                     llvm::count(user->getOperands(), w) > 1);
      if (!flows) {
        reducedHere = true;
        continue;
      }
      for (Value res : user->getResults())
        if (seen.insert(res).second)
          work.push_back(res);
    }
    if (reducedHere)
      sinks += state(w).globalBytes + kLatencyBytes;
    if (seen.size() > kMaxValues) {
      // A flow this wide is cut off: whatever is still to visit counts as
      // reduced where the search stopped.
      for (Value rest : work)
        sinks += state(rest).globalBytes + kLatencyBytes;
      break;
    }
  }
  return sinks > state(v).globalBytes + kLatencyBytes;
}

bool Propagator::isSourceValue(Value v) {
  if (isa<BlockArgument>(v))
    return true;
  if (yieldedFor(v))
    return false;
  Operation *def = v.getDefiningOp();
  return def && def->getNumOperands() == 0;
}

/// Element-wise-like ops (no reduction, nothing whole, one result) propagate
/// first: their choices never move data.
bool Propagator::isPassThrough(Operation *op) {
  const OpShardingRule *r = rule(op);
  if (!r || op->getNumResults() != 1)
    return false;
  return llvm::none_of(r->factors, [](const Factor &f) {
    return f.kind != FactorKind::Parallel;
  });
}

bool Propagator::canProduce(Value v, int64_t axis, Placement p) {
  if (Value yielded = yieldedFor(v))
    v = yielded;
  auto res = dyn_cast<OpResult>(v);
  if (!res)
    return true;
  const OpShardingRule *r = rule(res.getOwner());
  if (!r)
    return p.isReplicateOrOpen();
  std::optional<AxisChoice> vote = voteOf(*r, {true, res.getResultNumber()}, p);
  return vote && isValidChoice(*r, *vote, meshSizes[axis]);
}

double Propagator::axisCost(const ValueState &vs, int64_t axis, Placement from,
                            Placement to) {
  if (from == to)
    return 0;
  double pieces = 1;
  for (auto [a, st] : llvm::enumerate(vs.axes))
    if (st.placement.isShard())
      pieces *= meshSizes[a];
  double local = vs.globalBytes / pieces;
  int64_t k = meshSizes[axis];
  using cost::Collective;
  double bytes;
  if (from.isReplicateOrOpen())
    bytes = 0; // a local slice or mask
  else if (from.isShard())
    // An all-gather sends (k-1)/k of the k pieces it gathers.
    bytes = to.isShard() ? cost::bytesSent(Collective::AllToAll, local, k)
                         : local * (k - 1);
  else if (to.isShard())
    bytes = cost::bytesSent(Collective::ReduceScatter, local, k);
  else if (to.isReplicateOrOpen())
    bytes = cost::bytesSent(Collective::AllReduce, local, k);
  else
    bytes = 2 * local; // reduce, then make partial again
  // Any mismatch costs a little, so exact agreement wins ties.
  return bytes * byteWeight[axis] + 1;
}

void Propagator::seedAnnotations(FunctionOpInterface func,
                                 std::set<int> &priorities) {
  func.walk([&](AnnotateOp op) {
    ValueState &vs = state(op.getResult());
    if (op.getSource()) {
      causes.push_back("'" + op.getSource()->str() + "'");
    } else {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << "dist.annotate at ";
      op.getLoc().print(os);
      causes.push_back(text);
    }
    int causeId = causes.size() - 1;
    int prio = op.getPriority();
    priorities.insert(prio);
    for (auto [axis, p] : llvm::enumerate(op.getSharding().getPlacements())) {
      if (p.isOpen())
        continue;
      vs.axes[axis] = {p, prio, causeId, /*fixed=*/true};
    }
  });
}

/// Adds `c` to `set`, kept sorted and without repeats (a handful of
/// choices: cheaper than a std::set, same order).
static void insertChoice(SmallVectorImpl<AxisChoice> &set, AxisChoice c) {
  auto it = llvm::lower_bound(set, c);
  if (it == set.end() || !(*it == c))
    set.insert(it, std::move(c));
}

SmallVector<Value> Propagator::step(Operation *op, int round,
                                    bool allowPartialFlow) {
  SmallVector<Value> changed;
  const OpShardingRule *r = rule(op);
  if (!r || r->operands.size() != op->getNumOperands() ||
      r->results.size() != op->getNumResults())
    return changed;

  // Every value's state exists before propagation starts (run), so these
  // pointers stay valid while the op is decided.
  struct Tensor {
    Value value;
    TensorRef ref;
    ValueState *vs;
  };
  SmallVector<Tensor> tensors;
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (isa<RankedTensorType>(v.getType()))
      tensors.push_back({v, {false, static_cast<unsigned>(i)}, &state(v)});
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (isa<RankedTensorType>(v.getType()))
      tensors.push_back({v, {true, static_cast<unsigned>(i)}, &state(v)});
  // Nothing new around the op since its last step (no state filled, no
  // annotation that this round makes visible, the same partial-flow
  // rule): the step would decide what it decided then.
  OpMemo &memo = memoOf(op);
  if (memo.stepped && memo.allowedPartialFlow == allowPartialFlow &&
      llvm::all_of(tensors, [&](const Tensor &t) {
        return t.vs->changedAt <= memo.steppedAt &&
               llvm::none_of(t.vs->axes, [&](const AxisState &s) {
                 return s.priority > memo.round && s.priority <= round;
               });
      }))
    return changed;
  memo.stepped = true;
  memo.allowedPartialFlow = allowPartialFlow;
  memo.round = round;
  memo.steppedAt = tick;

  // Decided placements never change: an op with nothing open is done.
  bool anythingOpen = llvm::any_of(tensors, [](const Tensor &t) {
    return llvm::any_of(t.vs->axes, [](const AxisState &s) {
      return s.placement.isOpen() && !s.fixed;
    });
  });
  if (!anythingOpen) {
    memo.finished = true;
    return changed;
  }

  for (int64_t axis = 0; axis < numAxes; ++axis) {
    bool anyOpen = llvm::any_of(tensors, [&](const Tensor &t) {
      const AxisState &s = t.vs->axes[axis];
      return s.placement.isOpen() && !s.fixed;
    });
    if (!anyOpen)
      continue;
    auto visible = [&](const AxisState &s) {
      return !s.placement.isOpen() && s.priority <= round;
    };

    // Candidates: what each visible tensor votes for, plus "none".
    SmallVector<AxisChoice, 4> candidates{AxisChoice::none()};
    bool anyVote = false;
    for (const Tensor &t : tensors) {
      const AxisState &s = t.vs->axes[axis];
      if (!visible(s))
        continue;
      anyVote = true;
      if (auto v = voteOf(*r, t.ref, s.placement))
        insertChoice(candidates, std::move(*v));
    }
    if (!anyVote)
      continue;

    // A partial flow voted by a result of a multilinear op must say which
    // operand carries the partial value: one already partial, else the first
    // open linear operand that is not a weight.
    SmallVector<AxisChoice, 4> resolved;
    for (AxisChoice c : candidates) {
      if (c.kind == AxisChoice::Kind::PartialFlow && !allowPartialFlow)
        continue;
      if (c.kind == AxisChoice::Kind::PartialFlow && c.partialOperand < 0 &&
          r->partialFlow == PartialFlow::OneLinear) {
        int64_t pick = -1;
        for (const Tensor &t : tensors) {
          if (t.ref.isResult || !r->linearOperands[t.ref.index])
            continue;
          const AxisState &s = t.vs->axes[axis];
          if (visible(s) && s.placement.isPartial()) {
            pick = t.ref.index;
            break;
          }
          if (pick < 0 && s.placement.isOpen() && !isSourceValue(t.value))
            pick = t.ref.index;
        }
        if (pick < 0)
          continue;
        c.partialOperand = pick;
      }
      if (c.kind == AxisChoice::Kind::PartialFlow) {
        // The flow makes the results partial: a result read by several ops
        // stays partial only if all of them keep it so (else each reader
        // that needs it whole reduces it: reduce once, before). With one
        // reader, delaying the sum costs nothing more. In a multilinear op
        // the partial operand must be read once.
        // Summing two partial operands and reducing the sum once beats
        // reducing each, whoever reads the sum.
        int partialOperands = llvm::count_if(tensors, [&](const Tensor &t) {
          const AxisState &s = t.vs->axes[axis];
          return !t.ref.isResult && visible(s) && s.placement.isPartial();
        });
        bool keep = partialOperands >= 2 ||
                    llvm::all_of(op->getResults(), [&](Value res) {
                      return res.hasOneUse() || res.use_empty() ||
                             readersKeepPartial(res, nullptr);
                    });
        if (keep && c.partialOperand >= 0 &&
            llvm::count(op->getOperands(), op->getOperand(c.partialOperand)) >
                1)
          keep = false;
        // A partial operand that another reader needs whole is reduced once
        // for all of them instead of flowing on here.
        for (const Tensor &t : tensors) {
          if (!keep || t.ref.isResult)
            continue;
          const AxisState &s = t.vs->axes[axis];
          if (visible(s) && s.placement.isPartial() &&
              (!readersKeepPartial(t.value, op) ||
               cheaperReducedAtSource(t.value, axis)))
            keep = false;
        }
        if (!keep)
          continue;
      }
      insertChoice(resolved, std::move(c));
    }

    // Score: conflicts with stronger priorities weigh first, then bytes.
    std::optional<AxisChoice> best;
    std::map<int, double> bestScore;
    for (AxisChoice c : resolved) {
      if (!isValidChoice(*r, c, meshSizes[axis]))
        continue;
      std::map<int, double> score;
      bool representable = true;
      for (const Tensor &t : tensors) {
        const ValueState &vs = *t.vs;
        const AxisState &s = vs.axes[axis];
        std::optional<Placement> proj = project(*r, c, t.ref, op->getContext());
        if (!proj) {
          representable = false;
          break;
        }
        if (!visible(s) || *proj == s.placement)
          continue;
        // A partial value is a by-product, not something asked for: it
        // weighs least when choices conflict (only its bytes count).
        int strength = s.placement.isPartial() ? INT_MAX : s.priority;
        score[strength] += axisCost(vs, axis, s.placement, *proj);
      }
      if (!representable)
        continue;
      if (!best || score < bestScore) {
        best = c;
        bestScore = std::move(score);
      }
    }
    if (!best || best->kind == AxisChoice::Kind::None)
      continue;

    // The strongest tensor that agrees with the choice lends its priority
    // and cause to the placements filled from it.
    int prio = INT_MAX, cause = -1;
    for (const Tensor &t : tensors) {
      const AxisState &s = t.vs->axes[axis];
      if (visible(s) &&
          project(*r, *best, t.ref, op->getContext()) == s.placement &&
          s.priority < prio) {
        prio = s.priority;
        cause = s.cause;
      }
    }
    if (prio == INT_MAX)
      continue;
    for (const Tensor &t : tensors) {
      AxisState &s = t.vs->axes[axis];
      if (!s.placement.isOpen() || s.fixed)
        continue;
      Placement p = *project(*r, *best, t.ref, op->getContext());
      // Weights and inputs are never partial: they stay whole and the op
      // masks them (a free local step) if it needs a partial operand.
      if (p.isPartial() && isSourceValue(t.value))
        p = Placement::replicate();
      // An operand takes the placement only if its producer can make it.
      if (!t.ref.isResult && !canProduce(t.value, axis, p))
        continue;
      s = {p, prio, cause, false};
      t.vs->changedAt = ++tick;
      changed.push_back(t.value);
    }
  }
  return changed;
}

void Propagator::runPhase(ArrayRef<Operation *> ops, int round,
                          bool passThroughOnly, bool allowPartialFlow) {
  std::deque<Operation *> work;
  DenseSet<Operation *> queued;
  auto eligible = [&](Operation *op) {
    return !memoOf(op).finished && rule(op) &&
           (!passThroughOnly || isPassThrough(op));
  };
  for (Operation *op : ops)
    if (eligible(op) && queued.insert(op).second)
      work.push_back(op);
  while (!work.empty()) {
    Operation *op = work.front();
    work.pop_front();
    queued.erase(op);
    for (Value v : step(op, round, allowPartialFlow)) {
      auto push = [&](Operation *o) {
        if (o && eligible(o) && queued.insert(o).second)
          work.push_back(o);
      };
      // A loop's sum and the value yielded in its place share a state: the
      // ops around either see the change.
      SmallVector<Value, 2> same{v};
      if (Value yielded = yieldedFor(v))
        same.push_back(yielded);
      for (OpOperand &use : v.getUses())
        if (Value sum = loopResultOf(use))
          same.push_back(sum);
      for (Value w : same) {
        push(w.getDefiningOp());
        for (Operation *user : w.getUsers())
          push(user);
      }
    }
  }
}

LogicalResult Propagator::run(FunctionOpInterface func) {
  std::set<int> priorities;
  seedAnnotations(func, priorities);
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (op != func.getOperation())
      ops.push_back(op);
  });
  memos.reserve(ops.size());
  // Every value's state up front: step() keeps pointers to them.
  func->walk([&](Block *block) {
    for (BlockArgument arg : block->getArguments())
      state(arg);
  });
  for (Operation *op : ops)
    for (Value v : op->getResults())
      state(v);
  // Keeping a sum partial through a linear op is an optimisation, not a
  // constraint: it is only considered once every annotation has spoken, so
  // a weaker annotation (sequence parallelism) still shapes the values a
  // partial sum flows into.
  for (int round : priorities) {
    runPhase(ops, round, /*passThroughOnly=*/true, /*allowPartialFlow=*/false);
    runPhase(ops, round, /*passThroughOnly=*/false, /*allowPartialFlow=*/false);
  }
  if (!priorities.empty())
    runPhase(ops, *priorities.rbegin(), /*passThroughOnly=*/false,
             /*allowPartialFlow=*/true);
  return success();
}

SmallVector<Placement> Propagator::placementsOf(Value v) {
  SmallVector<Placement> placements;
  for (const AxisState &s : state(v).axes)
    placements.push_back(s.placement.isOpen() ? Placement::replicate()
                                              : s.placement);
  return placements;
}

void Propagator::materialize(FunctionOpInterface func,
                             FlatSymbolRefAttr meshRef) {
  MLIRContext *ctx = func.getContext();
  // A value's sharding and its cause text, made once per distinct
  // (placement, cause) per axis: most values share a few of them.
  std::map<SmallVector<int64_t>, std::pair<ShardingAttr, StringAttr>> made;
  auto layoutOf = [&](Value v) -> const std::pair<ShardingAttr, StringAttr> & {
    ValueState &vs = state(v);
    SmallVector<int64_t> key;
    for (const AxisState &s : vs.axes) {
      const Placement &p = s.placement;
      key.append({static_cast<int64_t>(p.kind), p.dim,
                  static_cast<int64_t>(p.reduction),
                  reinterpret_cast<intptr_t>(p.sizes.getAsOpaquePointer()),
                  s.cause});
    }
    auto [it, inserted] = made.try_emplace(std::move(key));
    if (!inserted)
      return it->second;
    SmallVector<Placement> placements;
    for (const AxisState &s : vs.axes)
      placements.push_back(s.placement.isOpen() ? Placement::replicate()
                                                : s.placement);
    auto sharding = ShardingAttr::get(ctx, meshRef, placements);
    std::string text;
    llvm::raw_string_ostream os(text);
    bool first = true;
    for (auto [axis, s] : llvm::enumerate(vs.axes)) {
      if (s.cause < 0 || placements[axis].isReplicate())
        continue;
      os << (first ? "" : "; ") << axisNames[axis] << " "
         << placements[axis].str() << " from " << causes[s.cause];
      first = false;
    }
    it->second = {sharding, StringAttr::get(ctx, text)};
    return it->second;
  };
  func.walk([&](Operation *op) {
    if (op == func.getOperation() || op->getNumResults() == 0)
      return;
    if (!llvm::all_of(op->getResultTypes(), llvm::IsaPred<RankedTensorType>))
      return;
    SmallVector<Attribute> shardings, why;
    bool anyCause = false;
    for (Value r : op->getResults()) {
      auto [sharding, cause] = layoutOf(r);
      shardings.push_back(sharding);
      anyCause |= !cause.getValue().empty();
      why.push_back(cause);
    }
    // Both attributes in one rebuild of the op's dictionary.
    NamedAttrList attrs(op->getAttrDictionary());
    attrs.set(kShardingAttr, ArrayAttr::get(ctx, shardings));
    if (anyCause)
      attrs.set(kCauseAttr, ArrayAttr::get(ctx, why));
    op->setAttrs(attrs.getDictionary(ctx));
  });
  // All argument attributes at once: setting them one by one rebuilds the
  // whole array each time (quadratic in the argument count).
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    NamedAttrList attrs(func.getArgAttrs(i));
    Value arg = func.getArgument(i);
    if (isa<RankedTensorType>(arg.getType()))
      attrs.set(kShardingAttr, layoutOf(arg).first);
    argAttrs.push_back(attrs.getDictionary(ctx));
  }
  func.setAllArgAttrs(argAttrs);
}

namespace {
/// The module's mesh and what its links cost; no links: nothing to
/// distribute (no mesh, no annotation).
struct PropagationSetup {
  MeshOp mesh;
  std::optional<cost::MeshCost> links;
};
} // namespace

static FailureOr<PropagationSetup>
propagationSetup(ModuleOp module,
                 std::shared_ptr<const cost::MachineProfile> profile,
                 StringRef machineOption) {
  bool anyAnnotation = false;
  module.walk([&](AnnotateOp) { anyAnnotation = true; });
  if (!anyAnnotation && module.getOps<MeshOp>().empty())
    return PropagationSetup();
  FailureOr<MeshOp> mesh = getModuleMesh(module);
  if (failed(mesh))
    return failure();
  auto meshRef = FlatSymbolRefAttr::get(mesh->getSymNameAttr());
  bool failedAny = false;
  module.walk([&](AnnotateOp op) {
    if (op.getSharding().getMesh() != meshRef) {
      op.emitOpError("uses mesh ") << op.getSharding().getMesh()
                                   << " but the module's mesh is " << meshRef;
      failedAny = true;
    }
  });
  if (failedAny)
    return failure();
  FailureOr<cost::MeshCost> links =
      meshCostFor(module, *mesh, std::move(profile), machineOption);
  if (failed(links))
    return failure();
  return PropagationSetup{*mesh, std::move(*links)};
}

/// Propagates every function of `module` that has a body, and hands each
/// with its propagator to `done`; a module with nothing to distribute
/// propagates nothing.
static LogicalResult propagateFunctions(
    ModuleOp module, std::shared_ptr<const cost::MachineProfile> profile,
    StringRef machineOption,
    function_ref<void(FunctionOpInterface, Propagator &, MeshOp)> done) {
  auto setup = propagationSetup(module, std::move(profile), machineOption);
  if (failed(setup))
    return failure();
  if (!setup->links)
    return success(); // nothing to distribute
  for (auto func : module.getOps<FunctionOpInterface>()) {
    if (func.isExternal())
      continue;
    Propagator prop(setup->mesh, *setup->links);
    if (failed(prop.run(func)))
      return failure();
    done(func, prop, setup->mesh);
  }
  return success();
}

namespace {
struct PropagateShardingPass
    : public distopt::dist::impl::DistPropagateShardingBase<
          PropagateShardingPass> {
  using Base::Base;
  PropagateShardingPass() = default;
  explicit PropagateShardingPass(
      std::shared_ptr<const cost::MachineProfile> machine)
      : profile(std::move(machine)) {}

  std::shared_ptr<const cost::MachineProfile> profile;

  void runOnOperation() override {
    auto written = [](FunctionOpInterface func, Propagator &prop, MeshOp mesh) {
      prop.materialize(func, FlatSymbolRefAttr::get(mesh.getSymNameAttr()));
    };
    if (failed(propagateFunctions(getOperation(), profile, machine, written)))
      signalPassFailure();
  }
};
} // namespace

std::unique_ptr<Pass> distopt::dist::createDistPropagateSharding(
    std::shared_ptr<const cost::MachineProfile> machine) {
  return std::make_unique<PropagateShardingPass>(std::move(machine));
}

FailureOr<std::vector<SmallVector<Placement>>>
distopt::dist::propagatedPlacements(
    ModuleOp module, ArrayRef<Value> values,
    std::shared_ptr<const cost::MachineProfile> machine) {
  std::vector<SmallVector<Placement>> placements(values.size());
  auto read = [&](FunctionOpInterface func, Propagator &prop, MeshOp) {
    for (auto [v, ps] : llvm::zip(values, placements)) {
      Operation *owner = Value(v).getParentRegion()->getParentOp();
      if (owner == func.getOperation() || func->isProperAncestor(owner))
        ps = prop.placementsOf(v);
    }
  };
  // A null profile: the pass's default, as its `machine` option left out.
  if (failed(propagateFunctions(module, std::move(machine), "", read)))
    return failure();
  return placements;
}
