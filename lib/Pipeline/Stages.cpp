//===- Stages.cpp - cut a model into pipeline stages ------------*- C++ -*-===//
#include "distopt/Pipeline/Stages.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/Transforms/ValueSharding.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/GlobPattern.h"

#include <limits>
#include <map>
#include <set>

using namespace mlir;
using namespace distopt;

namespace {

std::string nodeName(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(l))
        return name.getName().str();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

/// The shortest prefix of the op's module path (`/blocks.3/attn/...` ->
/// `blocks.3`) that the split pattern matches; "" if none.
std::string layerKey(Operation *op, const llvm::GlobPattern &glob) {
  std::string name = nodeName(op);
  SmallVector<StringRef> parts;
  StringRef(name).ltrim('/').split(parts, '/', -1, false);
  if (parts.size() < 2)
    return "";      // a top-level node belongs to no layer
  parts.pop_back(); // the op itself
  std::string prefix;
  for (StringRef part : parts) {
    SmallVector<StringRef> dots;
    part.split(dots, '.', -1, false);
    for (StringRef d : dots) {
      prefix += (prefix.empty() ? "" : ".") + d.str();
      if (glob.match(prefix))
        return prefix;
    }
  }
  return "";
}

double opFlops(Operation *op) {
  if (auto mm = dyn_cast<nn::MatMulOp>(op)) {
    auto a = mm.getLhs().getType();
    auto c = mm.getResult().getType();
    if (a.hasStaticShape() && c.hasStaticShape())
      return 2.0 * c.getNumElements() * a.getShape().back();
  }
  double n = 0;
  for (Value r : op->getResults())
    if (auto t = dyn_cast<RankedTensorType>(r.getType());
        t && t.hasStaticShape())
      n += t.getNumElements();
  return n;
}

int64_t bytesOf(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  Type et = t.getElementType();
  return t.getNumElements() *
         (et.isIntOrFloat()
              ? std::max<int64_t>(1, et.getIntOrFloatBitWidth() / 8)
              : 4);
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

} // namespace

FailureOr<StageAssignment> distopt::assignStages(ModuleOp module,
                                                 const PipelineConfig &config,
                                                 int64_t numStages) {
  func::FuncOp func = mainFunc(module);
  if (!func)
    return emitError(module.getLoc(), "pipeline: no function to cut");
  auto glob = llvm::GlobPattern::create(config.split);
  if (!glob)
    return emitError(module.getLoc(), "pipeline: bad split pattern '")
           << config.split << "': " << llvm::toString(glob.takeError());
  StageAssignment out;
  out.numStages = numStages;
  Block &body = func.getBody().front();
  std::vector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);

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
    if (first < 0)
      first = i;
    last = i;
  }
  int64_t numLayers = out.layers.size();
  if (numLayers < numStages)
    return emitError(module.getLoc(), "pipeline: ")
           << numStages << " stages on mesh axis '" << config.axis
           << "' but the split pattern '" << config.split << "' finds "
           << numLayers << " layer(s)";

  // Balance layers (with the prologue on stage 0, the epilogue on the last).
  std::vector<double> cost(numLayers, 0);
  double head = 0, tail = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    double f = opFlops(ops[i]);
    if (layerOf[i] >= 0)
      cost[layerOf[i]] += f;
    else if (static_cast<int64_t>(i) < first)
      head += f;
    else if (static_cast<int64_t>(i) > last)
      tail += f;
  }
  out.stageOfLayer = balance(cost, numStages, head, tail);

  // Ops: their layer's stage; before the first layer stage 0, after the
  // last the final stage; anything else no earlier than its operands.
  // Sources (weights, constants) go where they are used.
  for (size_t i = 0; i < ops.size(); ++i) {
    Operation *op = ops[i];
    if (op->getNumOperands() == 0)
      continue;
    int64_t stage = 0;
    if (layerOf[i] >= 0)
      stage = out.stageOfLayer[layerOf[i]];
    else if (static_cast<int64_t>(i) > last)
      stage = numStages - 1;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        if (def->getNumOperands() != 0)
          stage = std::max(stage, out.stageOf.lookup(def));
    out.stageOf[op] = stage;
  }
  for (Operation *op : ops) {
    if (op->getNumOperands() != 0)
      continue;
    int64_t stage = numStages - 1;
    for (Operation *user : op->getUsers())
      if (out.stageOf.count(user))
        stage = std::min(stage, out.stageOf[user]);
    out.stageOf[op] = stage;
  }

  out.stageFlops.assign(numStages, 0);
  out.stageParameterBytes.assign(numStages, 0);
  for (Operation *op : ops) {
    int64_t s = out.stageOf[op];
    out.stageFlops[s] += opFlops(op);
    if (auto w = dyn_cast<nn::WeightOp>(op)) {
      // A weight used by several stages is stored by each of them.
      std::set<int64_t> users;
      for (Operation *u : op->getUsers())
        users.insert(out.stageOf.lookup(u));
      for (int64_t u : users)
        out.stageParameterBytes[u] += bytesOf(w.getResult().getType());
    }
  }
  return out;
}

OwningOpRef<ModuleOp> distopt::extractStage(ModuleOp module,
                                            const StageAssignment &stages,
                                            const PipelineConfig &config,
                                            int64_t stage) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  func::FuncOp origFunc = mainFunc(module), func = mainFunc(*copy);
  auto meshes = copy->getOps<dist::MeshOp>();
  dist::MeshOp mesh = *meshes.begin();
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  MLIRContext *ctx = copy->getContext();
  OpBuilder b(ctx);

  // The copy's ops, with the stages of the originals they were cloned from.
  DenseMap<Operation *, int64_t> stageOf;
  {
    auto o = origFunc.getBody().front().begin();
    for (Operation &c : func.getBody().front()) {
      if (!c.hasTrait<OpTrait::IsTerminator>())
        stageOf[&c] = stages.stageOf.lookup(&*o);
      ++o;
    }
  }
  std::vector<Operation *> ops;
  for (Operation &op : func.getBody().front().without_terminator())
    ops.push_back(&op);
  auto stageOfUser = [&](Operation *u) -> int64_t {
    if (u->hasTrait<OpTrait::IsTerminator>())
      return -1;
    return stageOf.lookup(u);
  };

  // Every crossing gets the same tag in every stage's program: tags count
  // the crossings in program order.
  int64_t tag = 0;
  for (Operation *op : ops) {
    int64_t from = stageOf[op];
    for (Value v : op->getResults()) {
      std::map<int64_t, SmallVector<OpOperand *>> usesByStage;
      for (OpOperand &use : v.getUses()) {
        int64_t to = stageOfUser(use.getOwner());
        if (to >= 0 && to != from)
          usesByStage[to].push_back(&use);
      }
      for (auto &[to, uses] : usesByStage) {
        Operation *firstUser = uses.front()->getOwner();
        for (OpOperand *use : uses)
          if (use->getOwner()->isBeforeInBlock(firstUser))
            firstUser = use->getOwner();
        if (op->getNumOperands() == 0) {
          // Weights and constants are loaded by every stage that uses them.
          if (to != stage)
            continue;
          b.setInsertionPoint(firstUser);
          Operation *clone = b.clone(*op);
          stageOf[clone] = to;
          for (OpOperand *use : uses)
            use->set(clone->getResult(cast<OpResult>(v).getResultNumber()));
          continue;
        }
        int64_t t = tag++;
        if (from == stage) {
          b.setInsertionPointAfter(op);
          auto send = dist::SendOp::create(
              b, op->getLoc(), v, meshRef, b.getStringAttr(config.axis),
              b.getI64IntegerAttr(to), b.getI64IntegerAttr(t));
          stageOf[send] = from;
        }
        if (to == stage) {
          b.setInsertionPoint(firstUser);
          auto recv = dist::RecvOp::create(
              b, op->getLoc(), v.getType(), meshRef,
              b.getStringAttr(config.axis), b.getI64IntegerAttr(from),
              b.getI64IntegerAttr(t));
          stageOf[recv] = to;
          dist::ShardingAttr sharding = dist::getValueSharding(v, {});
          if (sharding)
            recv->setAttr("dist.sharding", b.getArrayAttr({sharding}));
          for (OpOperand *use : uses)
            use->set(recv.getResult());
        }
      }
    }
  }

  // Results: the stage returns the outputs it produces (inputs returned as
  // they are belong to stage 0).
  Operation *ret = func.getBody().front().getTerminator();
  SmallVector<Value> kept;
  SmallVector<unsigned> keptIndex;
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    Operation *def = v.getDefiningOp();
    int64_t s = def ? stageOf.lookup(def) : 0;
    if (s == stage) {
      kept.push_back(v);
      keptIndex.push_back(i);
    }
  }
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i : keptIndex)
    resultAttrs.push_back(func.getResultAttrDict(i));
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret->getLoc(), kept);
  ret->erase();

  // Drop everything of other stages, then the arguments nobody uses.
  SmallVector<Operation *> doomed;
  for (Operation &op : func.getBody().front().without_terminator())
    if (stageOf.lookup(&op) != stage)
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
  (*copy)->setAttr("dist.stage", b.getI64IntegerAttr(stage));
  // The stage runs on one slice of the pipeline axis: collectives inside it
  // must not use that axis (dist-reshard-to-collectives reads this).
  (*copy)->setAttr("dist.pipeline_axis", b.getStringAttr(config.axis));
  return copy;
}

std::vector<std::vector<ScheduleAction>>
distopt::buildSchedule(StringRef kind, int64_t numStages, int64_t m,
                       bool withBackward) {
  std::vector<std::vector<ScheduleAction>> out(numStages);
  for (int64_t s = 0; s < numStages; ++s) {
    auto &acts = out[s];
    if (!withBackward) {
      for (int64_t i = 0; i < m; ++i)
        acts.push_back({i, true});
      continue;
    }
    if (kind == "gpipe") {
      for (int64_t i = 0; i < m; ++i)
        acts.push_back({i, true});
      for (int64_t i = m - 1; i >= 0; --i)
        acts.push_back({i, false});
      continue;
    }
    // 1F1B: warm up, then one forward and one backward at a time.
    int64_t warmup = std::min(numStages - s - 1, m);
    int64_t f = 0, bw = 0;
    for (; f < warmup; ++f)
      acts.push_back({f, true});
    while (f < m) {
      acts.push_back({f++, true});
      acts.push_back({bw++, false});
    }
    while (bw < m)
      acts.push_back({bw++, false});
  }
  return out;
}

ScheduleTimeline distopt::simulateSchedule(
    const std::vector<std::vector<ScheduleAction>> &schedule,
    ArrayRef<double> forwardTime, ArrayRef<double> backwardTime,
    double transferTime) {
  int64_t S = schedule.size();
  ScheduleTimeline tl;
  // done[stage][mb][phase]: finish time, once known.
  std::map<std::tuple<int64_t, int64_t, bool>, double> done;
  std::vector<size_t> next(S, 0);
  std::vector<double> free(S, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t s = 0; s < S; ++s) {
      while (next[s] < schedule[s].size()) {
        const ScheduleAction &a = schedule[s][next[s]];
        // A forward needs the previous stage's forward of the microbatch; a
        // backward the next stage's backward (or its own forward last).
        double ready = 0;
        if (a.forward && s > 0) {
          auto it = done.find({s - 1, a.microbatch, true});
          if (it == done.end())
            break;
          ready = it->second + transferTime;
        } else if (!a.forward) {
          auto it = s + 1 < S ? done.find({s + 1, a.microbatch, false})
                              : done.find({s, a.microbatch, true});
          if (it == done.end())
            break;
          ready = it->second + (s + 1 < S ? transferTime : 0);
        }
        double start = std::max(ready, free[s]);
        double end = start + (a.forward ? forwardTime[s] : backwardTime[s]);
        done[{s, a.microbatch, a.forward}] = end;
        free[s] = end;
        tl.slots.push_back({s, a.microbatch, a.forward, start, end});
        tl.makespan = std::max(tl.makespan, end);
        ++next[s];
        progress = true;
      }
    }
  }
  double busy = 0;
  for (const auto &slot : tl.slots)
    busy += slot.end - slot.start;
  if (tl.makespan > 0 && S > 0)
    tl.bubbleFraction = 1.0 - busy / (S * tl.makespan);
  return tl;
}

void distopt::writeTimelineSvg(const ScheduleTimeline &tl, int64_t numStages,
                               int64_t microbatches, StringRef title,
                               raw_ostream &os) {
  auto num = [](double v) { return llvm::formatv("{0:f1}", v).str(); };
  const double width = 900, rowHeight = 36, left = 80, top = 40;
  double scale = tl.makespan > 0 ? (width - left - 20) / tl.makespan : 1;
  double height = top + numStages * rowHeight + 50;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width)
     << "\" height=\"" << num(height)
     << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << num(left) << "\" y=\"20\" font-size=\"14\">" << title
     << "</text>\n";
  for (int64_t s = 0; s < numStages; ++s)
    os << "<text x=\"10\" y=\"" << num(top + s * rowHeight + rowHeight / 2 + 4)
       << "\">stage " << s << "</text>\n";
  for (const auto &slot : tl.slots) {
    double hue = microbatches > 0 ? 360.0 * slot.microbatch / microbatches : 0;
    double x = left + slot.start * scale, w = (slot.end - slot.start) * scale;
    double y = top + slot.stage * rowHeight + 4;
    os << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\""
       << num(w) << "\" height=\"" << num(rowHeight - 8) << "\" fill=\"hsl("
       << num(hue) << (slot.forward ? ",70%,60%)" : ",70%,35%)")
       << "\" stroke=\"#333\"><title>stage " << slot.stage << ", microbatch "
       << slot.microbatch << (slot.forward ? " forward" : " backward") << ", "
       << num(slot.start) << ".." << num(slot.end) << " us</title></rect>\n";
    os << "<text x=\"" << num(x + w / 2 - 8) << "\" y=\""
       << num(y + rowHeight / 2) << "\">" << (slot.forward ? "F" : "B")
       << slot.microbatch << "</text>\n";
  }
  os << "<text x=\"" << num(left) << "\" y=\"" << num(height - 15)
     << "\">time across (makespan " << num(tl.makespan) << " us), bubble "
     << num(tl.bubbleFraction * 100)
     << "%, colour = microbatch</text>\n</svg>\n";
}
