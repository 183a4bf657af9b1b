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
/// buffer, gathers of sharded parameters). Any stage can compute them.
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
  return independent;
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
/// updates or reads directly, or null.
static Operation *persistentOperand(Operation *op) {
  for (Value v : op->getOperands())
    if (Operation *def = v.getDefiningOp();
        def && isa<nn::WeightOp, nn::VariableOp>(def))
      return def;
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
  Block &body = func.getBody().front();
  std::vector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  llvm::DenseSet<Operation *> independent = inputIndependentOps(ops);

  // The model's own forward: in a training step, the ops of neither a
  // training phase nor a later microbatch's copy.
  // Reshards belong to no phase: they go with what they read.
  auto isForward = [](Operation *op) {
    auto mb = op->getAttrOfType<IntegerAttr>(nn::kMicrobatchAttr);
    return !op->hasAttr(nn::kPhaseAttr) && (!mb || mb.getInt() == 0) &&
           !isa<dist::DistDialect>(op->getDialect());
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

  // Forward ops: their layer's stage; before the first layer stage 0, after
  // the last the final stage; anything else no earlier than its operands.
  // Every other op of a training step (copies for later microbatches, loss,
  // backward) goes where the forward op it derives from (same node name)
  // went; optimizer updates where their parameter lives.
  std::map<std::string, int64_t> stageOfName;
  std::vector<Operation *> deferred;
  for (size_t i = 0; i < ops.size(); ++i) {
    Operation *op = ops[i];
    if (independent.contains(op))
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
    } else if (auto it = stageOfName.find(name);
               !name.empty() && it != stageOfName.end()) {
      out.stageOf[op] = it->second;
    } else if (persistentOperand(op)) {
      deferred.push_back(op); // once the parameter's stage is known
      continue;
    } else {
      // No earlier than its operands; what reads only inputs goes where it
      // is read (below).
      int64_t stage = -1;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp();
            def && !independent.contains(def))
          if (auto s = out.stageOf.find(def); s != out.stageOf.end())
            stage = std::max(stage, s->second);
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
  for (Operation *op : deferred)
    if (Operation *p = persistentOperand(op); p && isa<nn::WeightOp>(p))
      out.stageOf[op] = std::min(homeOf(p), numVirtual - 1);
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
    if (!independent.contains(op))
      out.stageFlops[out.stageOf[op] % numStages] += nn::estimateFlops(op);
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

private:
  /// `v` (input-independent) computed in this stage before `user`: the
  /// producing ops are cloned, each once.
  Value localCopy(Value v, Operation *user);
  /// The stage (position on the pipeline axis) running `op`: its virtual
  /// stage modulo the stages.
  int64_t rankOf(Operation *op) { return stageOf.lookup(op) % numStages; }
  /// The action a training-step op belongs to, if any.
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

/// Moves `op` (and the copies it reads) up to before `user` if needed.
static void hoistBefore(Operation *op, Operation *user) {
  if (op->isBeforeInBlock(user))
    return;
  op->moveBefore(user);
  for (Value operand : op->getOperands())
    if (Operation *def = operand.getDefiningOp())
      hoistBefore(def, op);
}

Value StageExtractor::localCopy(Value v, Operation *user) {
  if (auto it = copies.find(v); it != copies.end()) {
    hoistBefore(it->second.getDefiningOp(), user);
    return it->second;
  }
  Operation *def = v.getDefiningOp();
  b.setInsertionPoint(user);
  Operation *clone = b.clone(*def);
  stageOf[clone] = stage;
  for (OpOperand &operand : clone->getOpOperands())
    operand.set(localCopy(operand.get(), clone));
  for (auto [orig, copied] : llvm::zip(def->getResults(), clone->getResults()))
    copies[orig] = copied;
  return copies[v];
}

std::optional<ScheduleAction> StageExtractor::taskOf(Operation *op) {
  auto mb = op->getAttrOfType<IntegerAttr>(nn::kMicrobatchAttr);
  if (!mb || independent.contains(op))
    return std::nullopt;
  auto phase = op->getAttrOfType<StringAttr>(nn::kPhaseAttr);
  bool backward = phase && phase.getValue() == "backward";
  return ScheduleAction{mb.getInt(), backward ? Pass::Backward : Pass::Forward,
                        stageOf.lookup(op) / numStages};
}

void StageExtractor::run(DenseMap<Operation *, int64_t> stages,
                         const llvm::DenseSet<Operation *> &indep) {
  stageOf = std::move(stages);
  independent = indep;
  std::vector<Operation *> ops;
  for (Operation &op : func.getBody().front().without_terminator())
    ops.push_back(&op);
  auto rankOfUser = [&](Operation *u) -> int64_t {
    if (u->hasTrait<OpTrait::IsTerminator>())
      return -1;
    return rankOf(u);
  };
  Operation *ret = func.getBody().front().getTerminator();

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
  // the crossings of activations in program order.
  int64_t tag = 0;
  auto sendAfter = [&](Operation *op, Value v, int64_t from, int64_t to,
                       int64_t t) {
    b.setInsertionPointAfter(op);
    auto send = dist::SendOp::create(
        b, op->getLoc(), v, meshRef, b.getStringAttr(pipeline.axis),
        b.getI64IntegerAttr(to), b.getI64IntegerAttr(t));
    stageOf[send] = stageOf.lookup(op);
  };
  auto recvBefore = [&](Operation *op, Value v, Operation *user, int64_t from,
                        int64_t t) {
    b.setInsertionPoint(user);
    auto recv = dist::RecvOp::create(
        b, op->getLoc(), v.getType(), meshRef, b.getStringAttr(pipeline.axis),
        b.getI64IntegerAttr(from), b.getI64IntegerAttr(t));
    stageOf[recv] = stage;
    std::string producer = nn::getNodeName(op);
    recv->setAttr(
        dist::kReasonAttr,
        b.getStringAttr("pipeline: stage " + std::to_string(stage) + " reads " +
                        (producer.empty() ? op->getName().getStringRef().str()
                                          : "'" + producer + "'") +
                        " of stage " + std::to_string(from)));
    if (dist::ShardingAttr sharding = dist::getValueSharding(v, {}))
      recv->setAttr(dist::kShardingAttr, b.getArrayAttr({sharding}));
    return recv.getResult();
  };
  for (Operation *op : ops) {
    int64_t from = rankOf(op);
    for (Value v : op->getResults()) {
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
        Operation *firstUser = uses.front()->getOwner();
        for (OpOperand *use : uses)
          if (use->getOwner()->isBeforeInBlock(firstUser))
            firstUser = use->getOwner();
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
    int64_t from = rankOf(def);
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
    Operation *def = v.getDefiningOp();
    int64_t s = def ? rankOf(def) : 0;
    Value mine = s == stage ? v : receivedResults.lookup(i);
    if (mine) {
      kept.push_back(mine);
      resultAttrs.push_back(func.getResultAttrDict(i));
    }
  }
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret->getLoc(), kept);
  ret->erase();

  // Drop everything of other stages, then the arguments nobody uses.
  SmallVector<Operation *> doomed;
  for (Operation &op : func.getBody().front().without_terminator())
    if (rankOf(&op) != stage)
      doomed.push_back(&op);
  for (Operation *op : llvm::reverse(doomed)) {
    op->dropAllUses();
    op->erase();
  }
  llvm::BitVector unused(func.getNumArguments());
  for (BlockArgument arg : func.getArguments())
    if (arg.use_empty())
      unused.set(arg.getArgNumber());
  (void)func.eraseArguments(unused);
  SmallVector<Type> resultTypes;
  for (Value v : kept)
    resultTypes.push_back(v.getType());
  func.setType(FunctionType::get(ctx, func.getArgumentTypes(), resultTypes));
  func.setAllResultAttrs(resultAttrs);
  // A training step runs its schedule in program order.
  if (!actions.empty())
    orderStageOps(func, actions, [&](Operation *op) { return taskOf(op); });
  copy->setAttr(dist::kStageAttr, b.getI64IntegerAttr(stage));
  // The stage runs on one slice of the pipeline axis: collectives inside it
  // must not use that axis (dist-reshard-to-collectives reads this).
  copy->setAttr(dist::kPipelineAxisAttr, b.getStringAttr(pipeline.axis));
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
    std::vector<Operation *> origOps;
    for (Operation &o : origFunc.getBody().front().without_terminator())
      origOps.push_back(&o);
    llvm::DenseSet<Operation *> origIndependent = inputIndependentOps(origOps);
    auto o = origOps.begin();
    for (Operation &c : func.getBody().front().without_terminator()) {
      stageOf[&c] = stages.stageOf.lookup(*o);
      if (origIndependent.contains(*o))
        independent.insert(&c);
      ++o;
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
  // (from, to) -> (tag, type, op) in program order, per side.
  struct Message {
    int64_t tag;
    Type type;
    Operation *op;
  };
  std::map<std::pair<int64_t, int64_t>, std::vector<Message>> sent, received;
  for (auto [s, m] : llvm::enumerate(stageModules)) {
    int64_t stage = s;
    ModuleOp module = m;
    module.walk([&](Operation *op) {
      if (auto send = dyn_cast<dist::SendOp>(op))
        sent[{stage, send.getPeer()}].push_back(
            {send.getTag(), send.getInput().getType(), op});
      if (auto recv = dyn_cast<dist::RecvOp>(op))
        received[{recv.getPeer(), stage}].push_back(
            {recv.getTag(), recv.getResult().getType(), op});
    });
  }
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (auto &e : sent)
    pairs.insert(e.first);
  for (auto &e : received)
    pairs.insert(e.first);
  for (auto [from, to] : pairs) {
    const auto &s = sent[{from, to}];
    const auto &r = received[{from, to}];
    for (size_t i = 0; i < std::max(s.size(), r.size()); ++i) {
      if (i >= s.size())
        return r[i].op->emitError("pipeline: stage ")
               << to << " receives message " << i << " (tag " << r[i].tag
               << ") from stage " << from << ", which never sends it";
      if (i >= r.size())
        return s[i].op->emitError("pipeline: stage ")
               << from << " sends message " << i << " (tag " << s[i].tag
               << ") to stage " << to << ", which never receives it";
      if (s[i].tag != r[i].tag || s[i].type != r[i].type)
        return s[i].op->emitError("pipeline: stage ")
               << from << " sends tag " << s[i].tag << " (" << s[i].type
               << ") as message " << i << " to stage " << to
               << ", which expects tag " << r[i].tag << " (" << r[i].type
               << ") there";
    }
  }
  return success();
}
