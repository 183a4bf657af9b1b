//===- StageCut.cpp - cut a model into pipeline stages ----------*- C++ -*-===//
#include "distopt/PipelineStages/StageCut.h"
#include "distopt/PipelineStages/StageOrder.h"

#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/ValueSharding.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNCost.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/GlobPattern.h"

#include <functional>
#include <limits>
#include <map>
#include <set>

using namespace mlir;
using namespace distopt;

namespace {

/// The shortest prefix of the op's module path (`/blocks.3/attn/...` ->
/// `blocks.3`) that the split pattern matches; "" if none.
std::string layerKey(Operation *op, const llvm::GlobPattern &glob) {
  for (const std::string &prefix : nn::getNodeModulePrefixes(op))
    if (glob.match(prefix))
      return prefix;
  return ""; // a top-level node belongs to no layer
}

/// Contiguous groups of `cost` (with extra cost added to the first and last
/// group) into `groups` parts minimising the largest part: DP over prefixes.
std::vector<int64_t> balance(ArrayRef<double> cost, int64_t groups, double head,
                             double tail) {
  int64_t n = cost.size();
  std::vector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + cost[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[g][i]: smallest max over the first i layers in g groups.
  std::vector<std::vector<double>> best(groups + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> cut(groups + 1,
                                        std::vector<int64_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t g = 1; g <= groups; ++g)
    for (int64_t i = g; i <= n; ++i)
      for (int64_t j = g - 1; j < i; ++j) {
        double part = prefix[i] - prefix[j] + (g == 1 ? head : 0) +
                      (g == groups && i == n ? tail : 0);
        double v = std::max(best[g - 1][j], part);
        if (v < best[g][i]) {
          best[g][i] = v;
          cut[g][i] = j;
        }
      }
  std::vector<int64_t> stageOf(n, 0);
  for (int64_t g = groups, i = n; g >= 1; --g) {
    int64_t j = cut[g][i];
    for (int64_t k = j; k < i; ++k)
      stageOf[k] = g - 1;
    i = j;
  }
  return stageOf;
}

func::FuncOp mainFunc(ModuleOp module) {
  if (auto f = module.lookupSymbol<func::FuncOp>("main"))
    return f;
  auto funcs = module.getOps<func::FuncOp>();
  return funcs.empty() ? func::FuncOp() : *funcs.begin();
}

/// The ops of `ops` that do not depend on the function's arguments: weights,
/// constants, and what is computed from them alone (masks sliced from a
/// buffer, gathers of sharded parameters). Any stage can compute them. A
/// microbatch loop's input selects are among them too: each stage reads its
/// own microbatch's inputs (but what they feed depends on the inputs).
llvm::DenseSet<Operation *> inputIndependentOps(ArrayRef<Operation *> ops) {
  llvm::DenseSet<Operation *> independent;
  for (Operation *op : ops) {
    if (op->getNumRegions() != 0 || op->getNumResults() == 0)
      continue;
    bool fromSources = llvm::all_of(op->getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && independent.contains(def);
    });
    if (fromSources)
      independent.insert(op);
  }
  for (Operation *op : ops)
    if (isa<nn::MicrobatchSelectOp>(op))
      independent.insert(op);
  return independent;
}

/// The function's ops in program order, a microbatch loop's body ops (not
/// its yield) just before the loop itself.
std::vector<Operation *> flattenedOps(func::FuncOp func) {
  std::vector<Operation *> ops;
  for (Operation &op : func.getBody().front().without_terminator()) {
    if (auto loop = dyn_cast<nn::MicrobatchLoopOp>(op))
      for (Operation &inner : loop.getBody().front().without_terminator())
        ops.push_back(&inner);
    ops.push_back(&op);
  }
  return ops;
}

/// `user` or the op containing it that sits in `block`.
Operation *ancestorIn(Block *block, Operation *user) {
  return block->findAncestorOpInBlock(*user);
}

} // namespace

bool StageAssignment::storesWeight(Operation *weight, int64_t stage) const {
  for (Operation *user : weight->getUsers())
    if (auto it = stageOf.find(user);
        it != stageOf.end() && it->second % numStages == stage)
      return true;
  return false;
}

/// The persistent tensor (weight or optimizer state) a training-step op
/// updates or reads directly, or through the dist ops that place it (a
/// ZeRO level's piece of the parameter), or null.
static Operation *persistentOperand(Operation *op) {
  for (Value v : op->getOperands()) {
    Operation *def = v.getDefiningOp();
    while (def && isa<dist::DistDialect>(def->getDialect()) &&
           def->getNumOperands() == 1)
      def = def->getOperand(0).getDefiningOp();
    if (def && isa<nn::WeightOp, nn::VariableOp>(def))
      return def;
  }
  return nullptr;
}

FailureOr<StageAssignment> distopt::assignStages(ModuleOp module,
                                                 const PipelineSpec &pipeline,
                                                 int64_t numStages) {
  Location loc = pipeline.loc ? Location(pipeline.loc) : module.getLoc();
  func::FuncOp func = mainFunc(module);
  if (!func)
    return emitError(loc, "pipeline: no function to cut");
  auto glob =
      llvm::GlobPattern::create(pipeline.split, /*MaxSubPatterns=*/1024);
  if (!glob)
    return emitError(loc, "pipeline: bad split pattern '")
           << pipeline.split << "': " << llvm::toString(glob.takeError());
  StageAssignment out;
  out.numStages = numStages;
  out.chunks = std::max<int64_t>(1, pipeline.virtualStages);
  const int64_t numVirtual = numStages * out.chunks;
  std::vector<Operation *> ops = flattenedOps(func);
  llvm::DenseSet<Operation *> independent = inputIndependentOps(ops);

  // The model's own forward: in a training step, the ops of no training
  // phase. Reshards belong to no phase: they go with what they read. A
  // microbatch loop runs on every stage.
  auto isForward = [](Operation *op) {
    return !op->hasAttr(nn::kPhaseAttr) &&
           !isa<dist::DistDialect>(op->getDialect()) &&
           !isa<nn::MicrobatchLoopOp>(op);
  };
  std::map<std::string, int64_t> layerIndex;
  std::vector<int64_t> layerOf(ops.size(), -1);
  int64_t first = -1, last = -1;
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string key = layerKey(ops[i], *glob);
    if (key.empty())
      continue;
    auto [it, inserted] = layerIndex.try_emplace(key, out.layers.size());
    if (inserted)
      out.layers.push_back(key);
    layerOf[i] = it->second;
    if (!isForward(ops[i]))
      continue;
    if (first < 0)
      first = i;
    last = i;
  }
  int64_t numLayers = out.layers.size();
  if (numLayers < numVirtual)
    return emitError(loc, "pipeline: ")
           << numVirtual << " stages"
           << (out.chunks > 1 ? " (" + std::to_string(numStages) + " x " +
                                    std::to_string(out.chunks) + " chunks)"
                              : std::string())
           << " on mesh axis '" << pipeline.axis << "' but the split pattern '"
           << pipeline.split << "' finds " << numLayers << " layer(s)";

  // Balance layers (with the prologue on stage 0, the epilogue on the last).
  std::vector<double> cost(numLayers, 0);
  double head = 0, tail = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (independent.contains(ops[i]) || !isForward(ops[i]))
      continue;
    double f = nn::estimateFlops(ops[i]);
    if (layerOf[i] >= 0)
      cost[layerOf[i]] += f;
    else if (static_cast<int64_t>(i) < first)
      head += f;
    else if (static_cast<int64_t>(i) > last)
      tail += f;
  }
  out.stageOfLayer = balance(cost, numVirtual, head, tail);

  // Where a parameter lives: where its forward reads it first (once the
  // forward's stages are known).
  std::function<int64_t(Operation *)> homeOf = [&](Operation *op) {
    int64_t stage = numVirtual;
    for (Operation *user : op->getUsers()) {
      if (auto it = out.stageOf.find(user); it != out.stageOf.end())
        stage = std::min(stage, it->second);
      else if (independent.contains(user)) // a transpose of the weight
        stage = std::min(stage, homeOf(user));
    }
    return stage;
  };
  // A parameter's whole gradient (nn.gradient_of) and what sums it after the
  // microbatch loop (a tied parameter's shares, the loss scale's undoing)
  // sit where the parameter lives: each share crosses once, and the
  // gradient norm sums stage by stage.
  std::map<std::string, Operation *> weightOfKey;
  for (Operation *op : ops)
    if (isa<nn::WeightOp>(op))
      weightOfKey.try_emplace(nn::getPersistentKey(op), op);
  // Without a microbatch loop (one microbatch) nothing stops the walk below
  // at the backward: it would pull the head's and the loss's backward to a
  // tied embedding's stage. There, backward ops that derive from a forward
  // op (its layer or its node name) stay where that op went.
  bool loop = llvm::any_of(
      ops, [](Operation *op) { return isa<nn::MicrobatchLoopOp>(op); });
  std::set<std::string> forwardNames;
  for (Operation *op : ops)
    if (isForward(op))
      if (std::string name = nn::getNodeName(op); !name.empty())
        forwardNames.insert(name);
  DenseSet<Operation *> followsForward;
  for (size_t i = 0; i < ops.size() && !loop; ++i)
    if (!isForward(ops[i]) &&
        (layerOf[i] >= 0 || forwardNames.count(nn::getNodeName(ops[i]))))
      followsForward.insert(ops[i]);
  DenseMap<Operation *, Operation *> gradientOf; // op -> its parameter
  for (Operation *op : ops) {
    auto key = op->getAttrOfType<StringAttr>(nn::kGradientOfAttr);
    auto weight = key ? weightOfKey.find(key.str()) : weightOfKey.end();
    if (weight == weightOfKey.end())
      continue;
    SmallVector<Operation *> work{op};
    while (!work.empty()) {
      Operation *g = work.pop_back_val();
      if (!gradientOf.try_emplace(g, weight->second).second)
        continue;
      for (Value v : g->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && def->getBlock() == op->getBlock() &&
            !isa<nn::MicrobatchLoopOp>(def) && !independent.contains(def) &&
            !followsForward.contains(def))
          work.push_back(def);
    }
  }
  // The stage of what an op reads: a loop's sum is computed where the body
  // computes what it yields.
  auto stageOfOperand = [&](Value v) -> std::optional<int64_t> {
    Operation *def = v.getDefiningOp();
    if (auto loop = dyn_cast_or_null<nn::MicrobatchLoopOp>(def))
      def = loop.getYielded()[cast<OpResult>(v).getResultNumber()]
                .getDefiningOp();
    if (!def || independent.contains(def))
      return std::nullopt;
    if (auto it = out.stageOf.find(def); it != out.stageOf.end())
      return it->second;
    return std::nullopt;
  };

  // Forward ops: their layer's stage; before the first layer stage 0, after
  // the last the final stage; anything else no earlier than its operands.
  // Every other op of a training step (copies for later microbatches, loss,
  // backward) goes where the forward op it derives from (same node name)
  // went; optimizer updates where their parameter lives.
  std::map<std::string, int64_t> stageOfName;
  std::vector<Operation *> deferred;
  // The latest stage of an operand placed so far; -1 when none is.
  auto latestOperandStage = [&](Operation *op) {
    int64_t stage = -1;
    for (Value v : op->getOperands())
      if (std::optional<int64_t> s = stageOfOperand(v))
        stage = std::max(stage, *s);
    return stage;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    Operation *op = ops[i];
    if (independent.contains(op) || isa<nn::MicrobatchLoopOp>(op))
      continue;
    std::string name = nn::getNodeName(op);
    if (layerOf[i] >= 0) {
      out.stageOf[op] = out.stageOfLayer[layerOf[i]];
    } else if (isForward(op)) {
      int64_t stage = static_cast<int64_t>(i) > last ? numVirtual - 1 : 0;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && !independent.contains(def))
          stage = std::max(stage, out.stageOf.lookup(def));
      out.stageOf[op] = stage;
    } else if (auto g = gradientOf.find(op); g != gradientOf.end()) {
      out.stageOf[op] = std::min(homeOf(g->second), numVirtual - 1);
    } else if (auto it = stageOfName.find(name);
               !name.empty() && it != stageOfName.end()) {
      out.stageOf[op] = it->second;
    } else if (persistentOperand(op)) {
      deferred.push_back(op); // once the parameter's stage is known
      continue;
    } else {
      // No earlier than its operands; what reads only inputs goes where it
      // is read (below).
      int64_t stage = latestOperandStage(op);
      if (stage < 0) {
        deferred.push_back(op);
        continue;
      }
      out.stageOf[op] = stage;
    }
    if (isForward(op) && !name.empty())
      stageOfName.try_emplace(name, out.stageOf[op]);
  }
  // Updates of a parameter run where its forward reads it first; ops that
  // read only inputs sit with their first reader.
  for (Operation *op : deferred)
    if (Operation *p = persistentOperand(op); p && isa<nn::WeightOp>(p))
      out.stageOf[op] = std::min(homeOf(p), numVirtual - 1);
  // What follows an update (ZeRO's gather of the updated piece) goes no
  // earlier than its operands, as in the walk above.
  for (Operation *op : deferred)
    if (int64_t stage = latestOperandStage(op);
        !out.stageOf.count(op) && stage >= 0)
      out.stageOf[op] = stage;
  for (Operation *op : llvm::reverse(deferred)) {
    if (out.stageOf.count(op))
      continue;
    int64_t stage = numVirtual - 1;
    for (Operation *user : op->getUsers())
      if (auto it = out.stageOf.find(user); it != out.stageOf.end())
        stage = std::min(stage, it->second);
    out.stageOf[op] = stage;
  }
  // What does not depend on the inputs sits at the first stage that reads
  // it (users come later in the block, so walk backwards).
  for (Operation *op : llvm::reverse(ops)) {
    if (!independent.contains(op))
      continue;
    int64_t stage = numVirtual - 1;
    for (Operation *user : op->getUsers())
      if (auto it = out.stageOf.find(user); it != out.stageOf.end())
        stage = std::min(stage, it->second);
    out.stageOf[op] = stage;
  }

  out.stageFlops.assign(numStages, 0);
  out.stageParameterBytes.assign(numStages, 0);
  for (Operation *op : ops) {
    if (!independent.contains(op) && !isa<nn::MicrobatchLoopOp>(op)) {
      auto loop = dyn_cast<nn::MicrobatchLoopOp>(op->getParentOp());
      double runs = loop ? static_cast<double>(loop.getMicrobatches()) : 1.0;
      out.stageFlops[out.stageOf[op] % numStages] +=
          nn::estimateFlops(op) * runs;
    }
    if (auto w = dyn_cast<nn::WeightOp>(op)) {
      // A weight read by several stages is stored by each of them.
      for (int64_t s = 0; s < numStages; ++s)
        if (out.storesWeight(op, s))
          out.stageParameterBytes[s] +=
              nn::tensorBytes(w.getResult().getType());
    }
  }
  return out;
}

namespace {

/// Builds one stage's program inside a copy of the module.
class StageExtractor {
public:
  StageExtractor(ModuleOp copy, func::FuncOp func, const PipelineSpec &pipeline,
                 int64_t stage, int64_t numStages,
                 ArrayRef<ScheduleAction> actions)
      : copy(copy), func(func), pipeline(pipeline), stage(stage),
        numStages(numStages), actions(actions), b(copy.getContext()) {
    dist::MeshOp mesh = *copy.getOps<dist::MeshOp>().begin();
    meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  }

  void run(DenseMap<Operation *, int64_t> stageOf,
           const llvm::DenseSet<Operation *> &independent);

  /// A copy of `loop` yielding only its sums `kept` (their uses move to
  /// it); the original is erased.
  nn::MicrobatchLoopOp keepSums(nn::MicrobatchLoopOp loop,
                                ArrayRef<unsigned> kept);

private:
  /// `v` (input-independent) computed in this stage before `user`: the
  /// producing ops are cloned, each once.
  Value localCopy(Value v, Operation *user);
  /// The stage (position on the pipeline axis) running `op`: its virtual
  /// stage modulo the stages. A microbatch loop runs on every stage.
  int64_t rankOf(Operation *op) {
    if (isa<nn::MicrobatchLoopOp>(op))
      return stage;
    return stageOf.lookup(op) % numStages;
  }
  /// The stage computing `v`: a loop's sum is computed where the body
  /// computes what it yields.
  int64_t stageOfValue(Value v);
  /// The action a training-step op of the loop body belongs to by itself
  /// (pass and chunk), if any.
  std::optional<ScheduleAction> taskOf(Operation *op);

  ModuleOp copy;
  func::FuncOp func;
  const PipelineSpec &pipeline;
  int64_t stage, numStages;
  ArrayRef<ScheduleAction> actions;
  OpBuilder b;
  FlatSymbolRefAttr meshRef;
  DenseMap<Operation *, int64_t> stageOf;
  llvm::DenseSet<Operation *> independent;
  DenseMap<Value, Value> copies;
};

} // namespace

/// Moves `op` (and the copies it reads) up to before `user` (or the op
/// holding `user` in `op`'s block) if needed.
static void hoistBefore(Operation *op, Operation *user) {
  Operation *at = ancestorIn(op->getBlock(), user);
  if (!at || op->isBeforeInBlock(at))
    return;
  op->moveBefore(at);
  for (Value operand : op->getOperands())
    if (Operation *def = operand.getDefiningOp())
      hoistBefore(def, op);
}

Value StageExtractor::localCopy(Value v, Operation *user) {
  Operation *def = v.getDefiningOp();
  if (!def) // the loop's index, a function argument
    return v;
  if (auto it = copies.find(v); it != copies.end()) {
    hoistBefore(it->second.getDefiningOp(), user);
    return it->second;
  }
  // The copy sits where the original does: before the loop holding `user`
  // if the original is computed outside it.
  b.setInsertionPoint(ancestorIn(def->getBlock(), user));
  Operation *clone = b.clone(*def);
  stageOf[clone] = stage;
  independent.insert(clone); // of no action: it goes with its first reader
  for (OpOperand &operand : clone->getOpOperands())
    operand.set(localCopy(operand.get(), clone));
  for (auto [orig, copied] : llvm::zip(def->getResults(), clone->getResults()))
    copies[orig] = copied;
  return copies[v];
}

int64_t StageExtractor::stageOfValue(Value v) {
  if (auto r = dyn_cast<OpResult>(v)) {
    if (auto loop = dyn_cast<nn::MicrobatchLoopOp>(r.getOwner())) {
      Value yielded = loop.getYielded()[r.getResultNumber()];
      Operation *def = yielded.getDefiningOp();
      return def ? rankOf(def) : 0;
    }
    return rankOf(r.getOwner());
  }
  return 0; // arguments: the inputs, read by stage 0
}

std::optional<ScheduleAction> StageExtractor::taskOf(Operation *op) {
  auto it = stageOf.find(op);
  if (it == stageOf.end() || independent.contains(op) ||
      !isa<nn::NNDialect>(op->getDialect()))
    return std::nullopt;
  auto phase = op->getAttrOfType<StringAttr>(nn::kPhaseAttr);
  bool backward = phase && phase.getValue() == "backward";
  return ScheduleAction{0, backward ? Pass::Backward : Pass::Forward,
                        it->second / numStages};
}

void StageExtractor::run(DenseMap<Operation *, int64_t> stages,
                         const llvm::DenseSet<Operation *> &indep) {
  stageOf = std::move(stages);
  independent = indep;
  std::vector<Operation *> ops = flattenedOps(func);
  auto rankOfUser = [&](Operation *u) -> int64_t {
    if (u->hasTrait<OpTrait::IsTerminator>())
      return -1;
    return rankOf(u);
  };
  Operation *ret = func.getBody().front().getTerminator();
  nn::MicrobatchLoopOp loop;
  for (Operation *op : ops)
    if (auto l = dyn_cast<nn::MicrobatchLoopOp>(op))
      loop = l;

  // Which stages store each parameter (before local copies change users):
  // those that read it, and those that compute again what is made of it
  // alone (a mixed-precision policy's cast of a tied embedding and head is
  // computed in both stages, each from its own copy of the parameter).
  std::map<std::string, std::set<int64_t>> storedBy;
  for (Operation *op : ops) {
    if (!isa<nn::WeightOp>(op))
      continue;
    SmallVector<Operation *> work(op->getUsers().begin(), op->getUsers().end());
    llvm::DenseSet<Operation *> seen;
    while (!work.empty()) {
      Operation *user = work.pop_back_val();
      if (user->hasTrait<OpTrait::IsTerminator>() || !seen.insert(user).second)
        continue;
      storedBy[nn::getPersistentKey(op)].insert(rankOf(user));
      if (independent.contains(user))
        work.append(user->getUsers().begin(), user->getUsers().end());
    }
  }

  // Every crossing gets the same tag in every stage's program: tags count
  // the crossings of activations in program order. A crossing inside the
  // microbatch loop is one message per microbatch (tag + microbatch *
  // tag_stride at run time).
  int64_t tag = 0;
  auto sendAfter = [&](Operation *op, Value v, int64_t from, int64_t to,
                       int64_t t) {
    b.setInsertionPointAfter(op);
    auto send = dist::SendOp::create(
        b, op->getLoc(), v, meshRef, b.getStringAttr(pipeline.axis),
        b.getI64IntegerAttr(to), b.getI64IntegerAttr(t));
    // (A loop runs on every stage: its sum is sent by the one computing it.)
    stageOf[send] = isa<nn::MicrobatchLoopOp>(op) ? from : stageOf.lookup(op);
  };
  auto recvBefore = [&](Operation *op, Value v, Operation *user, int64_t from,
                        int64_t t) {
    b.setInsertionPoint(user);
    auto recv = dist::RecvOp::create(
        b, op->getLoc(), v.getType(), meshRef, b.getStringAttr(pipeline.axis),
        b.getI64IntegerAttr(from), b.getI64IntegerAttr(t));
    stageOf[recv] = stage;
    std::string producer = nn::getNodeName(op);
    std::string what = producer.empty() ? op->getName().getStringRef().str()
                                        : "'" + producer + "'";
    if (auto l = dyn_cast<nn::MicrobatchLoopOp>(op))
      if (Operation *def = l.getYielded()[cast<OpResult>(v).getResultNumber()]
                               .getDefiningOp())
        what = "the microbatches' sum of '" + nn::getNodeName(def) + "'";
    recv->setAttr(dist::kReasonAttr,
                  b.getStringAttr("pipeline: stage " + std::to_string(stage) +
                                  " reads " + what + " of stage " +
                                  std::to_string(from)));
    if (dist::ShardingAttr sharding = dist::getValueSharding(v, {}))
      recv->setAttr(dist::kShardingAttr, b.getArrayAttr({sharding}));
    return recv.getResult();
  };
  for (Operation *op : ops) {
    for (Value v : op->getResults()) {
      int64_t from = stageOfValue(v);
      // Uses by stage, each at its op in `op`'s block (the loop holding a
      // use reads a value from before it).
      std::map<int64_t, SmallVector<OpOperand *>> usesByStage;
      for (OpOperand &use : v.getUses()) {
        int64_t to = rankOfUser(use.getOwner());
        if (to >= 0 && to != from)
          usesByStage[to].push_back(&use);
      }
      for (auto &[to, uses] : usesByStage) {
        if (independent.contains(op)) {
          // Computed again where it is read, not sent.
          if (to != stage)
            continue;
          for (OpOperand *use : uses)
            use->set(localCopy(v, use->getOwner()));
          continue;
        }
        Operation *firstUser = nullptr;
        for (OpOperand *use : uses) {
          Operation *at = ancestorIn(op->getBlock(), use->getOwner());
          if (!firstUser || at->isBeforeInBlock(firstUser))
            firstUser = at;
        }
        int64_t t = tag++;
        if (from == stage)
          sendAfter(op, v, from, to, t);
        if (to == stage) {
          Value received = recvBefore(op, v, firstUser, from, t);
          for (OpOperand *use : uses)
            use->set(received);
        }
      }
    }
  }

  // A parameter several stages store (a tied embedding and head) is updated
  // where it lives first; the other stages receive the new value and write
  // it into their copy.
  DenseMap<unsigned, Value> receivedResults;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    auto updates = func.getResultAttrOfType<StringAttr>(i, nn::kUpdatesAttr);
    Operation *def = v.getDefiningOp();
    if (!updates || !def || independent.contains(def))
      continue;
    int64_t from = stageOfValue(v);
    for (int64_t to : storedBy[updates.str()]) {
      if (to == from)
        continue;
      int64_t t = tag++;
      if (from == stage)
        sendAfter(def, v, from, to, t);
      if (to == stage)
        receivedResults[i] = recvBefore(def, v, ret, from, t);
    }
  }

  // Results: the stage returns the outputs it produces (inputs returned as
  // they are belong to stage 0).
  MLIRContext *ctx = copy.getContext();
  SmallVector<Value> kept;
  SmallVector<DictionaryAttr> resultAttrs;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    Value mine = stageOfValue(v) == stage ? v : receivedResults.lookup(i);
    if (mine) {
      kept.push_back(mine);
      resultAttrs.push_back(func.getResultAttrDict(i));
    }
  }
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret->getLoc(), kept);
  ret->erase();

  // The loop keeps the sums this stage computes.
  SmallVector<unsigned> ownSums;
  if (loop)
    for (Value r : loop.getResults())
      if (stageOfValue(r) == stage)
        ownSums.push_back(cast<OpResult>(r).getResultNumber());

  // Drop everything of other stages, then the arguments nobody uses.
  SmallVector<Operation *> doomed;
  for (Operation *op : flattenedOps(func))
    if (rankOf(op) != stage)
      doomed.push_back(op);
  for (Operation *op : llvm::reverse(doomed)) {
    op->dropAllUses();
    op->erase();
  }
  if (loop)
    loop = keepSums(loop, ownSums);
  llvm::BitVector unused(func.getNumArguments());
  for (BlockArgument arg : func.getArguments())
    if (arg.use_empty())
      unused.set(arg.getArgNumber());
  (void)func.eraseArguments(unused);
  // (Read from the return: a kept loop sum is now the new loop's.)
  SmallVector<Type> resultTypes(
      func.getBody().front().getTerminator()->getOperandTypes());
  func.setType(FunctionType::get(ctx, func.getArgumentTypes(), resultTypes));
  func.setAllResultAttrs(resultAttrs);
  // A training step's loop runs the stage's schedule: its body cut into
  // actions, which the runtime interleaves over the microbatches.
  if (loop && !actions.empty())
    scheduleLoopBody(loop, actions, std::max<int64_t>(tag, 1),
                     [&](Operation *op) { return taskOf(op); });
  copy->setAttr(dist::kStageAttr, b.getI64IntegerAttr(stage));
  // The stage runs on one slice of the pipeline axis: collectives inside it
  // must not use that axis (dist-reshard-to-collectives reads this).
  copy->setAttr(dist::kPipelineAxisAttr, b.getStringAttr(pipeline.axis));
}

nn::MicrobatchLoopOp StageExtractor::keepSums(nn::MicrobatchLoopOp loop,
                                              ArrayRef<unsigned> kept) {
  Block &body = loop.getBody().front();
  Operation *yield = body.getTerminator();
  SmallVector<Value> values;
  SmallVector<Type> types;
  for (unsigned k : kept) {
    values.push_back(yield->getOperand(k));
    types.push_back(values.back().getType());
  }
  b.setInsertionPoint(yield);
  nn::MicrobatchYieldOp::create(b, yield->getLoc(), values);
  yield->erase();
  b.setInsertionPoint(loop);
  auto mine = nn::MicrobatchLoopOp::create(b, loop.getLoc(), types,
                                           loop.getMicrobatches(), nullptr,
                                           nullptr);
  mine->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
  // One sharding per result: those of the kept sums.
  if (auto shardings = loop->getAttrOfType<ArrayAttr>(dist::kShardingAttr)) {
    SmallVector<Attribute> mineShardings;
    for (unsigned k : kept)
      mineShardings.push_back(shardings[k]);
    mine->setAttr(dist::kShardingAttr, b.getArrayAttr(mineShardings));
  }
  mine.getBody().takeBody(loop.getBody());
  for (auto [i, k] : llvm::enumerate(kept))
    loop.getResult(k).replaceAllUsesWith(mine.getResult(i));
  loop->dropAllUses(); // other stages' readers are gone already
  loop.erase();
  return mine;
}

OwningOpRef<ModuleOp> distopt::extractStage(ModuleOp module,
                                            const StageAssignment &stages,
                                            const PipelineSpec &pipeline,
                                            int64_t stage,
                                            ArrayRef<ScheduleAction> actions) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  func::FuncOp origFunc = mainFunc(module), func = mainFunc(*copy);
  // The copy's ops, with the stages of the originals they were cloned from.
  DenseMap<Operation *, int64_t> stageOf;
  llvm::DenseSet<Operation *> independent;
  {
    std::vector<Operation *> origOps = flattenedOps(origFunc);
    llvm::DenseSet<Operation *> origIndependent = inputIndependentOps(origOps);
    for (auto [o, c] : llvm::zip(origOps, flattenedOps(func))) {
      stageOf[c] = stages.stageOf.lookup(o);
      if (origIndependent.contains(o))
        independent.insert(c);
    }
  }
  StageExtractor extractor(*copy, func, pipeline, stage, stages.numStages,
                           actions);
  extractor.run(std::move(stageOf), independent);
  return copy;
}

SmallVector<ModuleOp> distopt::stageModulesOf(ModuleOp module) {
  SmallVector<std::pair<int64_t, ModuleOp>> found;
  for (ModuleOp nested : module.getOps<ModuleOp>())
    if (auto stage = nested->getAttrOfType<IntegerAttr>(dist::kStageAttr))
      found.push_back({stage.getInt(), nested});
  llvm::stable_sort(
      found, [](const auto &a, const auto &b) { return a.first < b.first; });
  SmallVector<ModuleOp> out;
  for (auto &entry : found)
    out.push_back(entry.second);
  return out;
}

LogicalResult distopt::verifyStagePairing(ArrayRef<ModuleOp> stageModules) {
  // (from, to) -> tag -> (type, op), per side, over every microbatch.
  struct Message {
    Type type;
    Operation *op;
  };
  std::map<std::pair<int64_t, int64_t>, std::map<int64_t, Message>> sent,
      received;
  for (auto [s, m] : llvm::enumerate(stageModules)) {
    int64_t stage = s;
    for (const StageMessage &msg : stageMessages(m)) {
      auto &side = msg.isSend ? sent[{stage, msg.peer}]
                              : received[{msg.peer, stage}];
      Type type = msg.isSend ? cast<dist::SendOp>(msg.op).getInput().getType()
                             : cast<dist::RecvOp>(msg.op).getResult().getType();
      side.try_emplace(msg.tag, Message{type, msg.op});
    }
  }
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (auto &e : sent)
    pairs.insert(e.first);
  for (auto &e : received)
    pairs.insert(e.first);
  for (auto [from, to] : pairs) {
    auto &s = sent[{from, to}];
    auto &r = received[{from, to}];
    for (auto &[tag, msg] : r)
      if (!s.count(tag))
        return msg.op->emitError("pipeline: stage ")
               << to << " receives tag " << tag << " from stage " << from
               << ", which never sends it";
    for (auto &[tag, msg] : s) {
      auto it = r.find(tag);
      if (it == r.end())
        return msg.op->emitError("pipeline: stage ")
               << from << " sends tag " << tag << " to stage " << to
               << ", which never receives it";
      if (it->second.type != msg.type)
        return msg.op->emitError("pipeline: stage ")
               << from << " sends tag " << tag << " (" << msg.type
               << ") to stage " << to << ", which expects "
               << it->second.type << " there";
    }
  }
  return success();
}
