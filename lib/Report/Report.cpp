//===- Report.cpp - what a partitioned model communicates and costs -*- C++
//-*-===//
#include "distopt/Report/Report.h"
#include "HumanBytes.h"
#include "distopt/Plan/Experts.h"
#include "distopt/CostModel/CostModel.h"
#include "distopt/Dialect/Dist/IR/DistAttrNames.h"
#include "distopt/Dialect/Dist/Transforms/ValueSharding.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"
#include "distopt/Dialect/NN/IR/NNCost.h"
#include "distopt/Driver/Compilation.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/Dist/IR/Pieces.h"
#include "distopt/Dialect/NN/IR/NNFusedOps.h"
#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

#include <cmath>
#include <map>
#include <set>

using namespace mlir;
using namespace distopt;

/// An element type as the report names it: f32, bf16, i64, ...
static std::string dtypeName(Type t) {
  std::string name;
  llvm::raw_string_ostream os(name);
  t.print(os);
  return name;
}

/// What `op` does for the cost model, as the runtime runs it once per
/// `runs`: the kernel (the op's name without "nn." and "fused_", which is
/// the instruction the exporter writes), the elements of its largest
/// tensor, its bytes; a reshape or identity only views its operand. A
/// matrix product's (or convolution's) FLOPs run at the GEMM rate of its
/// dtype and shape class, m x n the result (rows: every dimension but the
/// last; a convolution's columns are its output channels) and k its FLOPs
/// per result element over two.
static cost::OpWork opWork(Operation *op, double flops, double runs) {
  cost::OpWork work;
  work.flops = flops;
  int64_t bytes = 0, elements = 0;
  auto count = [&](Value v) {
    bytes += nn::tensorBytes(v.getType());
    if (auto t = dyn_cast<RankedTensorType>(v.getType());
        t && t.hasStaticShape())
      elements = std::max<int64_t>(elements, t.getNumElements());
  };
  llvm::for_each(op->getOperands(), count);
  llvm::for_each(op->getResults(), count);
  work.bytes = runs * bytes;
  work.elements = runs * elements;
  StringRef kernel = op->getName().stripDialect();
  kernel.consume_front("fused_");
  work.kernel = kernel.str();
  work.view = isa<nn::ReshapeOp, nn::IdentityOp>(op);
  work.gemm = isa<nn::MatMulOp, nn::FusedMatMulOp, nn::ConvOp>(op);
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!result)
    return work;
  work.dtype = dtypeName(result.getElementType());
  if (!work.gemm || !result.hasStaticShape() || result.getNumElements() == 0)
    return work;
  int64_t resultElements = result.getNumElements();
  int64_t n = 1;
  if (isa<nn::ConvOp>(op) && result.getRank() >= 2)
    n = result.getDimSize(1);
  else if (result.getRank() >= 1)
    n = result.getShape().back();
  int64_t m = resultElements / std::max<int64_t>(n, 1);
  int64_t k = static_cast<int64_t>(flops / (2.0 * resultElements));
  work.gemmClass = cost::classifyGemm(m, n, k);
  return work;
}

/// The most bytes a microbatch loop holds at once beyond what was live
/// before it and its running sums. Each microbatch's values live from their
/// op to their last reader in the body; what the body yields is added to
/// the running sums right after its op (eager accumulation), so it dies
/// there. A pipeline stage's loop runs its schedule's actions in order, and
/// the values still waiting for a later action of their microbatch add up
/// (GPipe keeps every microbatch's, 1F1B at most the stages'); a plain
/// loop runs its microbatches one after another.
static int64_t loopPeak(nn::MicrobatchLoopOp loop) {
  Block &body = loop.getBody().front();
  std::map<std::pair<int64_t, int64_t>, std::vector<Operation *>> actions;
  std::pair<int64_t, int64_t> at{0, 0};
  DenseMap<Value, Operation *> lastUse;
  for (Operation &op : body) {
    if (auto marker = dyn_cast<nn::MicrobatchActionOp>(op))
      at = {marker.getPass(), marker.getChunk()};
    else if (!op.hasTrait<OpTrait::IsTerminator>())
      actions[at].push_back(&op);
    for (Value v : op.getOperands())
      lastUse[v] = &op;
  }
  // A plain loop: one action, one microbatch at a time.
  SmallVector<int64_t> table{0, 0, 0};
  if (std::optional<ArrayRef<int64_t>> schedule = loop.getSchedule())
    table.assign(schedule->begin(), schedule->end());
  std::map<int64_t, size_t> lastAction;
  for (size_t a = 0; a + 2 < table.size(); a += 3)
    lastAction[table[a]] = a;
  Operation *yield = body.getTerminator();
  std::map<int64_t, int64_t> liveOf; // per microbatch
  int64_t live = 0, peak = 0;
  for (size_t a = 0; a + 2 < table.size(); a += 3) {
    int64_t j = table[a];
    for (Operation *op : actions[{table[a + 1], table[a + 2]}]) {
      for (Value r : op->getResults()) {
        int64_t bytes = nn::tensorBytes(r.getType());
        live += bytes;
        liveOf[j] += bytes;
      }
      peak = std::max(peak, live);
      for (Value r : op->getResults())
        if (Operation *last = lastUse.lookup(r); !last || last == yield) {
          live -= nn::tensorBytes(r.getType());
          liveOf[j] -= nn::tensorBytes(r.getType());
        }
      for (Value v : op->getOperands())
        if (lastUse.lookup(v) == op && v.getDefiningOp() &&
            v.getDefiningOp()->getBlock() == &body) {
          live -= nn::tensorBytes(v.getType());
          liveOf[j] -= nn::tensorBytes(v.getType());
        }
    }
    if (lastAction[j] == a) { // its last action: its values go
      live -= liveOf[j];
      liveOf[j] = 0;
    }
  }
  return peak;
}

/// Node names differ per layer only by their indices: `blocks.3` and
/// `blocks.7` are the same collective repeated.
/// How often `op` runs per step: once, or once per microbatch in a loop.
static int64_t runsPerStep(Operation *op) {
  int64_t runs = 1;
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (auto loop = dyn_cast<nn::MicrobatchLoopOp>(p))
      runs *= loop.getMicrobatches();
  return runs;
}

/// A collective whose result the function returns, said in the user's
/// names: the parameter or optimizer state the result updates (a training
/// step's `nn.updates`), or the output's name, instead of the return's
/// operand number ("func.return ... needs operand 94 as [R] ..." becomes
/// "function result: returns the update of 'h.0.mlp.c_fc.weight' as [R]
/// ..."), so one layer's collectives group with the others'.
static std::string inUserNames(Operation *op, std::string reason) {
  if (op->getNumResults() != 1)
    return reason;
  for (OpOperand &use : op->getResult(0).getUses()) {
    if (!isa<func::ReturnOp>(use.getOwner()))
      continue;
    auto func = use.getOwner()->getParentOfType<func::FuncOp>();
    unsigned i = use.getOperandNumber();
    if (!func || i >= func.getNumResults())
      return reason;
    std::string what;
    if (auto key = func.getResultAttrOfType<StringAttr>(i, nn::kUpdatesAttr))
      what = "the update of '" + key.str() + "'";
    else if (auto name = func.getResultAttrOfType<StringAttr>(i, nn::kNameAttr))
      what = "output '" + name.str() + "'";
    size_t as = reason.find(" as [");
    if (what.empty() || as == std::string::npos ||
        !StringRef(reason).starts_with("function result"))
      return reason;
    return "function result: returns " + what + reason.substr(as);
  }
  return reason;
}

/// An all-to-all of expert parallelism in words: the annotations of the
/// plan's expert_parallel part (dist-apply-plan) say which side of the
/// experts a reshard serves, in forward and backward alike.
static std::string expertTraffic(StringRef reason) {
  if (reason.contains("'expert_parallel: tokens to their experts'"))
    return "tokens to their experts' ranks";
  if (reason.contains("'expert_parallel: experts' outputs back to their "
                      "batch rows'"))
    return "tokens back from their experts' ranks";
  return "";
}

/// The reason with layer indices made `*` ("h.3.mlp" -> "h.*.mlp", also
/// after '/' and '_'), so that repeated layers share one line.
static std::string normalizeReason(StringRef reason) {
  std::string out;
  out.reserve(reason.size());
  for (size_t i = 0; i < reason.size();) {
    char c = reason[i++];
    out += c;
    if ((c == '.' || c == '/' || c == '_') && i < reason.size() &&
        llvm::isDigit(reason[i])) {
      while (i < reason.size() && llvm::isDigit(reason[i]))
        ++i;
      out += '*';
    }
  }
  return out;
}

/// The training phase a collective serves: its own where it says it (a
/// roll's permute, made from an op of that phase), else that of the first
/// op reading its result (through other collectives), forward for untagged
/// model ops; a collective only a return reads serves the op that made its
/// operand.
static std::string phaseOf(Operation *collective) {
  if (auto p = collective->getAttrOfType<StringAttr>(nn::kPhaseAttr))
    return p.str();
  SmallVector<Operation *> work{collective};
  llvm::SmallPtrSet<Operation *, 8> seen{collective};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Operation *user : op->getUsers()) {
      if (isa<dist::DistDialect>(user->getDialect())) {
        if (seen.insert(user).second)
          work.push_back(user);
        continue;
      }
      if (auto p = user->getAttrOfType<StringAttr>(nn::kPhaseAttr))
        return p.str();
      if (isa<nn::NNDialect>(user->getDialect()))
        return "forward";
    }
  }
  for (Value v : collective->getOperands())
    if (Operation *def = v.getDefiningOp()) {
      if (auto p = def->getAttrOfType<StringAttr>(nn::kPhaseAttr))
        return p.str();
      if (isa<nn::NNDialect>(def->getDialect()))
        return "forward";
    }
  return "forward";
}

int64_t distopt::activationPeak(ModuleOp program) {
  int64_t result = 0;
  for (auto func : program.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    DenseMap<Value, Operation *> lastUse;
    func.walk([&](Operation *op) {
      for (Value v : op->getOperands())
        lastUse[v] = op;
    });
    int64_t live = 0, peak = 0;
    DenseSet<Value> madeByOptimizer;
    // Weights, constants and optimizer states are stored, not computed.
    auto stored = [](Operation *op) {
      return isa<nn::WeightOp, nn::ConstantOp, nn::VariableOp>(op);
    };
    func.walk([&](Operation *op) {
      if (op == func.getOperation() || stored(op))
        return;
      if (isa_and_nonnull<nn::MicrobatchLoopOp>(op->getParentOp()))
        return; // counted with the loop
      if (auto loop = dyn_cast<nn::MicrobatchLoopOp>(op)) {
        // The loop's sums (the gradients, accumulated over the
        // microbatches) are held while it runs, beside what its
        // microbatches keep.
        int64_t sums = 0;
        for (Value r : loop.getResults())
          sums += nn::tensorBytes(r.getType());
        peak = std::max(peak, live + sums + loopPeak(loop));
        // What the body read last from before the loop dies with it.
        loop.getBody().walk([&](Operation *inner) {
          for (Value v : inner->getOperands())
            if (lastUse.lookup(v) == inner && v.getDefiningOp() &&
                !loop->isAncestor(v.getDefiningOp()) &&
                !stored(v.getDefiningOp()))
              live -= nn::tensorBytes(v.getType());
        });
      }
      // The optimizer's outputs replace the parameters and states in place
      // (the runtime swaps buffers): the peak is that of forward and
      // backward, and what the optimizer makes is not live after it (a
      // reshard of the loss placed after the update would otherwise count
      // every updated parameter and state).
      auto phase = op->getAttrOfType<StringAttr>(nn::kPhaseAttr);
      const bool optimizer = phase && phase.getValue() == "optimizer";
      for (Value r : op->getResults()) {
        if (optimizer)
          madeByOptimizer.insert(r);
        else
          live += nn::tensorBytes(r.getType());
      }
      if (!optimizer)
        peak = std::max(peak, live);
      for (Value v : op->getOperands())
        if (lastUse.lookup(v) == op && v.getDefiningOp() &&
            !stored(v.getDefiningOp()) && !madeByOptimizer.contains(v))
          live -= nn::tensorBytes(v.getType());
    });
    result = std::max(result, peak);
  }
  return result;
}

Report distopt::buildReport(ModuleOp sharded, ArrayRef<ModuleOp> partitioned,
                            std::shared_ptr<const cost::MachineProfile> machine,
                            std::function<bool(Operation *, int64_t)> stores,
                            const llvm::StringMap<Type> *storedGradients) {
  Report report;
  dist::MeshOp mesh;
  if (!sharded.getOps<dist::MeshOp>().empty())
    mesh = *sharded.getOps<dist::MeshOp>().begin();
  SmallVector<int64_t> meshSizes;
  if (mesh) {
    meshSizes.assign(mesh.getAxisSizes().begin(), mesh.getAxisSizes().end());
    for (int64_t a = 0; a < mesh.getNumAxes(); ++a)
      report.meshAxes.push_back(mesh.getAxisName(a).str());
    report.ranks = mesh.getNumDevices();
  }
  report.meshSizes.assign(meshSizes.begin(), meshSizes.end());
  if (!machine)
    machine = std::make_shared<const cost::MachineProfile>(
        cost::defaultMachineProfile());
  cost::MeshCost links(machine, report.meshAxes, meshSizes);
  report.machine.profile = machine->name;
  report.machine.builtin =
      llvm::is_contained(cost::builtinMachineNames(), machine->name);
  report.machine.device = machine->device;
  for (int64_t a = 0; a < links.numAxes(); ++a)
    report.machine.axes.push_back(
        {report.meshAxes[a], links.linkKind(a).str(),
         machine->links.at(links.linkKind(a).str()).backend,
         links.axisLink(a).alphaUs, links.axisLink(a).betaGBps});

  // Each rank's mesh coordinates, computed once: the walks below ask what
  // every rank holds of every parameter, state and gradient (a million
  // questions on a mesh of 1024).
  std::vector<SmallVector<int64_t>> coordsOf;
  if (mesh)
    for (int64_t r = 0; r < report.ranks; ++r)
      coordsOf.push_back(mesh.getCoords(r));
  // Adds to `perRank` what each rank that stores `owner` holds of `op`'s
  // result, by the result's own sharding. A sharding that splits every
  // dimension evenly (no explicit piece sizes) leaves every rank the same
  // piece.
  // The same for a value of `type` laid out as `s`.
  auto addLocalBytesAs = [&](Operation *owner, RankedTensorType type,
                             dist::ShardingAttr s,
                             std::vector<int64_t> &perRank) {
    // nn::tensorBytes of the type with `shape`, without making the type.
    int64_t width =
        nn::tensorBytes(RankedTensorType::get({}, type.getElementType()));
    auto bytesOf = [&](ArrayRef<int64_t> shape) -> int64_t {
      int64_t n = 1;
      for (int64_t d : shape) {
        if (ShapedType::isDynamic(d))
          return 0;
        n *= d;
      }
      return n * width;
    };
    std::optional<int64_t> same;
    if (!s || !mesh)
      same = nn::tensorBytes(type);
    else if (llvm::none_of(s.getPlacements(), [](const dist::Placement &p) {
               return p.hasSizes();
             }))
      if (SmallVector<int64_t> shape =
              dist::localShape(type.getShape(), s, meshSizes, std::nullopt);
          !llvm::any_of(shape, ShapedType::isDynamic))
        same = bytesOf(shape);
    for (int64_t r = 0; r < report.ranks; ++r) {
      if (stores && !stores(owner, r))
        continue;
      perRank[r] +=
          same ? *same
               : bytesOf(dist::localShape(type.getShape(), s, meshSizes,
                                          ArrayRef<int64_t>(coordsOf[r])));
    }
  };
  // By `op`'s result type, or with `element` in place of its element type
  // (what the target stores it as).
  auto addLocalBytes = [&](Operation *owner, Operation *op,
                           std::vector<int64_t> &perRank,
                           Type element = nullptr) {
    dist::ShardingAttr s;
    if (auto arr = op->getAttrOfType<ArrayAttr>(dist::kShardingAttr);
        arr && !arr.empty())
      s = dyn_cast<dist::ShardingAttr>(arr[0]);
    auto type = cast<RankedTensorType>(op->getResult(0).getType());
    addLocalBytesAs(owner, element ? type.clone(element) : type, s, perRank);
  };
  // Parameters: each weight's own sharding decides what every rank stores.
  report.parameterBytesPerRank.assign(report.ranks, 0);
  sharded.walk([&](nn::WeightOp w) {
    report.parameterBytesTotal += nn::tensorBytes(w.getResult().getType());
    addLocalBytes(w, w, report.parameterBytesPerRank);
  });
  // Training steps: gradients (marked where backward completes them) and
  // optimizer states (variables of a parameter).
  report.gradientBytesPerRank.assign(report.ranks, 0);
  report.optimizerStateBytesPerRank.assign(report.ranks, 0);
  sharded.walk([&](Operation *op) {
    bool gradient = op->hasAttr(nn::kGradientOfAttr);
    bool state = isa<nn::VariableOp>(op) && op->hasAttr(nn::kStateOfAttr);
    if (op->hasAttr(nn::kPhaseAttr))
      report.training = true;
    if (!gradient && !state)
      return;
    // With a pipeline, a rank keeps the states and gradients of its stage's
    // parameters only (those its stage's ops read), as it does parameters.
    if (!gradient)
      return addLocalBytes(op, op, report.optimizerStateBytesPerRank);
    Type stored;
    auto of = op->getAttrOfType<StringAttr>(nn::kGradientOfAttr);
    if (storedGradients && of)
      if (auto it = storedGradients->find(of.getValue());
          it != storedGradients->end())
        stored = it->second;
    addLocalBytes(op, op, report.gradientBytesPerRank, stored);
  });

  // Mixed precision: the narrowing casts of parameters, or the copies a
  // training step keeps of them (nn.copy_of).
  report.computeCopyBytesPerRank.assign(report.ranks, 0);
  std::map<std::string, nn::WeightOp> weightsByKey;
  sharded.walk([&](nn::WeightOp w) {
    weightsByKey.try_emplace(nn::getPersistentKey(w), w);
  });
  sharded.walk([&](Operation *op) {
    nn::WeightOp w;
    FloatType from, to;
    if (auto c = dyn_cast<nn::CastOp>(op)) {
      w = c.getInput().getDefiningOp<nn::WeightOp>();
      from = dyn_cast<FloatType>(c.getInput().getType().getElementType());
      to = dyn_cast<FloatType>(c.getType().getElementType());
    } else if (auto of = op->getAttrOfType<StringAttr>(nn::kCopyOfAttr)) {
      auto it = weightsByKey.find(of.str());
      if (it == weightsByKey.end())
        return;
      w = it->second;
      from = dyn_cast<FloatType>(w.getResult().getType().getElementType());
      to = dyn_cast<FloatType>(
          cast<RankedTensorType>(op->getResult(0).getType()).getElementType());
    }
    if (!w || !from || !to || to.getWidth() >= from.getWidth())
      return;
    report.computeDtype = dtypeName(to);
    // ZeRO-1/2's copy is cast from the master's shard and gathered once:
    // the gathered copy is what forward and backward read all step.
    if (op->hasAttr(dist::kGatheredOnceAttr))
      for (Operation *user : op->getUsers())
        if (auto gathered = dyn_cast<dist::ReshardOp>(user)) {
          addLocalBytesAs(w, cast<RankedTensorType>(gathered.getType()),
                          gathered.getTo(),
                          report.computeCopyBytesPerRank);
          return;
        }
    addLocalBytes(w, op, report.computeCopyBytesPerRank);
  });

  // Mixtures of experts: each layer's capacity, and what each rank keeps of
  // the experts' weights, gradients and optimizer states.
  sharded.walk([&](func::FuncOp func) {
    SmallVector<plan::ExpertEinsum> experts = plan::findExpertEinsums(func);
    llvm::DenseMap<Operation *, plan::ExpertEinsum> byOp;
    for (const plan::ExpertEinsum &x : experts)
      byOp.try_emplace(x.op, x);
    std::set<std::string> keys;
    for (const plan::ExpertEinsum &x : experts) {
      Value w = plan::weightOperand(x.op.getInputs()[x.weight]);
      keys.insert(nn::getPersistentKey(w.getDefiningOp()));
      if (x.op->hasAttr(nn::kPhaseAttr))
        continue; // a training step's backward reads the weights too
      for (auto [i, v] : llvm::enumerate(x.op.getInputs())) {
        if (i == x.weight || plan::weightOperand(v) ||
            plan::fromExperts(v, byOp))
          continue;
        // The dispatched tokens: every letter but the expert's and the
        // ones the weight shares (the features) counts token slots.
        const std::string &term = x.eq.inputs[i];
        const std::string &wterm = x.eq.inputs[x.weight];
        auto shape = cast<RankedTensorType>(v.getType()).getShape();
        ExpertLayerEntry e;
        e.layer = nn::getNodeModulePath(x.op);
        e.experts = cast<RankedTensorType>(w.getType()).getDimSize(0);
        e.capacity = 1;
        for (size_t d = 0; d < term.size(); ++d)
          if (wterm.find(term[d]) == std::string::npos)
            e.capacity *= shape[d];
        e.dispatched.assign(shape.begin(), shape.end());
        report.expertLayers.push_back(std::move(e));
      }
    }
    if (keys.empty())
      return;
    report.expertBytesPerRank.assign(report.ranks, 0);
    func.walk([&](Operation *op) {
      std::string key;
      if (auto w = dyn_cast<nn::WeightOp>(op))
        key = nn::getPersistentKey(w);
      else if (auto of = op->getAttrOfType<StringAttr>(nn::kGradientOfAttr))
        key = of.str();
      else if (auto of = op->getAttrOfType<StringAttr>(nn::kStateOfAttr);
               of && isa<nn::VariableOp>(op))
        key = of.str();
      if (key.empty() || !keys.count(key))
        return;
      addLocalBytes(op, op, report.expertBytesPerRank);
    });
  });

  if (partitioned.empty())
    return report;
  ModuleOp rank0 = partitioned.front();

  // Collectives of rank 0, grouped by what they are and why.
  std::map<std::tuple<std::string, std::string, int64_t, std::string>, size_t>
      index;
  rank0.walk([&](Operation *op) {
    if (!isa<dist::DistDialect>(op->getDialect()))
      return;
    std::string kind = op->getName().stripDialect().str();
    if (kind == "mesh" || kind == "local_slice" || kind == "to_partial" ||
        kind == "piece_offset" || kind == "annotate" || kind == "reshard")
      return;
    std::vector<std::string> axes;
    if (auto arr = op->getAttrOfType<ArrayAttr>("axes"))
      for (Attribute a : arr)
        axes.push_back(cast<StringAttr>(a).str());
    if (auto axis = op->getAttrOfType<StringAttr>("axis"))
      axes.push_back(axis.str());
    std::optional<cost::Collective> collective = cost::collectiveNamed(kind);
    if (!collective)
      return;
    SmallVector<int64_t> axisIndices;
    for (const std::string &a : axes)
      if (mesh)
        axisIndices.push_back(mesh.getAxisIndex(a));
    int64_t k = links.groupSize(axisIndices);
    int64_t in =
        op->getNumOperands() ? nn::tensorBytes(op->getOperand(0).getType()) : 0;
    int64_t out =
        op->getNumResults() ? nn::tensorBytes(op->getResult(0).getType()) : 0;
    // What a member holds: the gathered output for an all-gather and what
    // a receive receives; the input otherwise.
    double held = *collective == cost::Collective::AllGather ||
                          *collective == cost::Collective::Recv
                      ? out
                      : in;
    double sent = cost::bytesSent(*collective, held, k);
    std::string reason;
    if (auto r = op->getAttrOfType<StringAttr>(dist::kReasonAttr))
      reason = inUserNames(op, r.str());
    if (isa<dist::AllToAllOp>(op)) {
      std::string moves = expertTraffic(reason);
      if (!moves.empty())
        reason = moves + ": " + reason;
    }
    std::string phase = report.training ? phaseOf(op) : "";
    std::string joined;
    for (const std::string &a : axes)
      joined += a + ",";
    std::string dtype =
        op->getNumOperands()
            ? dtypeName(getElementTypeOrSelf(op->getOperand(0).getType()))
            : "";
    auto key =
        std::make_tuple(kind, joined + phase + "/" + dtype,
                        static_cast<int64_t>(sent), normalizeReason(reason));
    auto it = index.find(key);
    if (it == index.end()) {
      CollectiveEntry e;
      e.kind = kind;
      e.axes = axes;
      e.bytes = static_cast<int64_t>(sent);
      e.tensorBytes = std::max(in, out);
      e.dtype = dtype;
      e.reason = reason;
      e.phase = phase;
      // Time: the slowest link of the axes involved.
      e.timeUs = links.collectiveUs(*collective, held, axisIndices);
      index[key] = report.collectives.size();
      report.collectives.push_back(e);
    }
    // Grouped collectives of several layers show the reason with the layer
    // numbers as * (h.*.mlp.c_fc.weight), not the first layer's.
    CollectiveEntry &entry = report.collectives[index[key]];
    if (entry.reason != reason)
      entry.reason = std::get<3>(key);
    entry.count += runsPerStep(op);
  });
  for (const CollectiveEntry &e : report.collectives) {
    report.communicationUs += e.timeUs * e.count;
    if (!e.phase.empty())
      report.usByPhase[e.phase] += e.timeUs * e.count;
  }

  // Compute of rank 0, and the bytes its program produces.
  for (auto func : rank0.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    func.walk([&](Operation *op) {
      if (op == func.getOperation() ||
          isa<nn::WeightOp, nn::ConstantOp, nn::VariableOp>(op))
        return;
      // The loop's own ops move values and compute nothing.
      if (isa<nn::NNDialect>(op->getDialect()) &&
          !isa<nn::MicrobatchLoopOp, nn::MicrobatchSelectOp,
               nn::MicrobatchYieldOp, nn::MicrobatchActionOp>(op)) {
        const double runs = static_cast<double>(runsPerStep(op));
        double flops = nn::estimateFlops(op) * runs;
        report.flopsPerRank += flops;
        // A body's bytes move once per microbatch, as its flops are counted.
        double us = cost::computeUs(*machine, opWork(op, flops, runs));
        report.computeUs += us;
        if (auto phase = op->getAttrOfType<StringAttr>(nn::kPhaseAttr))
          report.usByPhase[phase.getValue()] += us;
        else if (report.training)
          report.usByPhase["forward"] += us;
      }
      for (Value r : op->getResults())
        report.activationBytesTotal += nn::tensorBytes(r.getType());
    });
  }
  report.activationBytesPeak = activationPeak(rank0);
  return report;
}

/// "blocks.0 .. blocks.3": the layers a stage holds.
static std::string layersOfStage(const StageAssignment &stages, int64_t s) {
  std::string first, last;
  for (size_t l = 0; l < stages.layers.size(); ++l)
    if (stages.stageOfLayer[l] % stages.numStages == s) {
      if (first.empty())
        first = stages.layers[l];
      last = stages.layers[l];
    }
  return first == last ? first : first + " .. " + last;
}

static std::vector<OutputEntry> outputsOf(ModuleOp module) {
  std::vector<OutputEntry> out;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    Operation *ret = func.getBody().front().getTerminator();
    for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
      // A training step's parameter and state updates are not outputs a
      // user reads; the memory section counts them.
      if (func.getResultAttr(i, nn::kUpdatesAttr))
        continue;
      OutputEntry e;
      auto name = func.getResultAttrOfType<StringAttr>(i, nn::kNameAttr);
      e.name = name ? name.str() : "output_" + std::to_string(i);
      if (auto t = dyn_cast<RankedTensorType>(v.getType()))
        for (int64_t d : t.getShape())
          e.shape.push_back(ShapedType::isDynamic(d) ? -1 : d);
      dist::ShardingAttr s =
          func.getResultAttrOfType<dist::ShardingAttr>(i, dist::kShardingAttr);
      if (!s)
        s = dist::getValueSharding(v, {});
      e.sharding = s ? dist::placementsStr(s) : "[R]";
      out.push_back(std::move(e));
    }
    break;
  }
  return out;
}

llvm::StringMap<Type> distopt::storedGradientTypes(ModuleOp fused) {
  llvm::StringMap<Type> types;
  fused.walk([&](Operation *op) {
    if (auto of = op->getAttrOfType<StringAttr>(nn::kGradientOfAttr))
      if (op->getNumResults() == 1)
        if (auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType()))
          types[of.getValue()] = t.getElementType();
  });
  return types;
}

/// Whether some gradient is a cast of a narrower float (through the
/// identities that name it).
static bool hasWidenedGradients(ModuleOp module) {
  return module
      .walk([&](Operation *op) {
        if (!op->hasAttr(nn::kGradientOfAttr) || op->getNumOperands() == 0)
          return WalkResult::advance();
        Value v = op->getOperand(0);
        while (auto id = v.getDefiningOp<nn::IdentityOp>())
          v = id.getInput();
        auto c = v.getDefiningOp<nn::CastOp>();
        if (!c)
          return WalkResult::advance();
        auto from =
            dyn_cast<FloatType>(c.getInput().getType().getElementType());
        auto to = dyn_cast<FloatType>(c.getType().getElementType());
        return from && to && from.getWidth() < to.getWidth()
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

FailureOr<Report> distopt::buildReport(Compilation &c) {
  std::shared_ptr<const cost::MachineProfile> model = c.machine();
  ModuleOp module = c.module();
  const StageAssignment *stages = c.stageAssignment();
  // Costed as the target runs it: the fused program (dist-fuse-for-target),
  // one kernel per fused op, is what the runtime executes and holds (a
  // fused loss keeps none of the intermediates over the logits).
  auto rank0 = c.partitionForRank(0, CompilePhase::Partition);
  if (failed(rank0) || failed(c.fuse(**rank0, 0)))
    return failure();
  // A mixed-precision step's gradients widened to f32 for the optimizer:
  // the target may read them narrow instead, so ask its fused programs
  // (one rank's per pipeline stage: each stage holds its own gradients).
  // Each rank's stage, asked once (a thousand ranks).
  std::vector<int64_t> stageOf;
  if (stages)
    for (int64_t r = 0, n = c.numRanks(); r < n; ++r)
      stageOf.push_back(c.stageOfRank(r));
  std::optional<llvm::StringMap<Type>> storedGradients;
  if (hasWidenedGradients(module)) {
    storedGradients.emplace();
    llvm::SmallDenseSet<int64_t> stagesSeen;
    for (int64_t r = 0, n = c.numRanks(); r < n; ++r) {
      if (!stagesSeen.insert(stages ? stageOf[r] : 0).second)
        continue;
      // Rank 0's fused program is at hand.
      OwningOpRef<ModuleOp> other;
      if (r != 0) {
        auto fused = c.partitionForRank(r, CompilePhase::Partition);
        if (failed(fused) || failed(c.fuse(**fused, r)))
          return failure();
        other = std::move(*fused);
      }
      for (auto &[name, type] : storedGradientTypes(r ? *other : **rank0))
        (*storedGradients)[name] = type;
      if (!stages)
        break;
    }
  }
  std::function<bool(Operation *, int64_t)> stores;
  // Asked per weight and rank (a thousand ranks): each weight's storing
  // stages, once.
  DenseMap<Operation *, llvm::BitVector> storingStages;
  if (stages) {
    stores = [&](Operation *w, int64_t rank) {
      auto [it, inserted] = storingStages.try_emplace(w);
      if (inserted) {
        it->second.resize(stages->numStages);
        for (int64_t s = 0; s < stages->numStages; ++s)
          if (stages->storesWeight(w, s))
            it->second.set(s);
      }
      return it->second.test(stageOf[rank]);
    };
  }
  Report report = buildReport(module, {**rank0}, model, stores,
                              storedGradients ? &*storedGradients : nullptr);
  report.outputs = outputsOf(module);
  report.unmatchedPatterns = c.planFindings().unmatchedPatterns;
  report.planNotes = c.planFindings().notes;
  report.attentionChoices = c.planFindings().attention;
  if (!stages)
    return report;

  // Per stage: one representative rank's estimate for one microbatch.
  const PipelineSpec &pp = *c.pipeline();
  PipelineReport pr;
  pr.stages = stages->numStages;
  pr.microbatches = pp.microbatches;
  pr.schedule = pp.schedule;
  pr.stageParameterBytes = stages->stageParameterBytes;
  pr.virtualStages = stages->chunks;
  std::vector<std::vector<ScheduleAction>> schedule;
  for (int64_t s = 0; s < pr.stages; ++s) {
    // Rank 0's stage is costed above (what `stores` changes is memory).
    int64_t rank = c.representativeRank(s);
    Report stageReport;
    const Report *one = &report;
    if (rank != 0) {
      auto program = c.partitionForRank(rank, CompilePhase::Partition);
      if (failed(program) || failed(c.fuse(**program, rank)))
        return failure();
      stageReport = buildReport(module, {**program}, model);
      one = &stageReport;
    }
    if (c.isTraining()) {
      // The stage program holds every microbatch: per microbatch, its
      // forward (with the loss) and its backward.
      double m = static_cast<double>(pp.microbatches);
      pr.stageUs.push_back(
          (one->usByPhase.lookup("forward") + one->usByPhase.lookup("loss")) /
          m);
      pr.stageBackwardUs.push_back(one->usByPhase.lookup("backward") / m);
      pr.stageActivationPeakBytes.push_back(one->activationBytesPeak);
    } else {
      pr.stageUs.push_back(one->computeUs + one->communicationUs);
    }
    pr.layersPerStage.push_back(layersOfStage(*stages, s));
    schedule.push_back(c.schedule(s));
  }
  // Per virtual stage (chunks split a stage's time evenly); zero-bubble
  // weight passes take half a backward (the dW and dX matmuls match).
  int64_t v = pr.virtualStages;
  bool weights = pp.schedule == "zb-h1";
  std::vector<double> fwd, bwd, wgt;
  for (int64_t vs = 0; vs < pr.stages * v; ++vs) {
    int64_t s = vs % pr.stages;
    fwd.push_back(pr.stageUs[s] / v);
    double b = pr.stageBackwardUs.empty() ? 0 : pr.stageBackwardUs[s] / v;
    bwd.push_back(weights ? b / 2 : b);
    wgt.push_back(weights ? b / 2 : 0);
  }
  pr.timeline = simulateSchedule(schedule, fwd, bwd, 0.0, wgt);
  pr.makespanUs = pr.timeline.makespan;
  pr.bubbleFraction = pr.timeline.bubbleFraction;
  report.pipeline = std::move(pr);
  return report;
}

void distopt::printReportText(const Report &r, raw_ostream &os) {
  os << "== distopt report: " << r.ranks << " rank(s)";
  if (!r.meshAxes.empty()) {
    os << " on mesh ";
    for (size_t a = 0; a < r.meshAxes.size(); ++a)
      os << (a ? "," : "") << r.meshAxes[a] << "=" << r.meshSizes[a];
  }
  // Every estimate below assumes this machine.
  const MachineEntry &m = r.machine;
  os << "\nmachine profile: " << m.profile << (m.builtin ? " (built-in)" : "")
     << ", " << m.device << "\n";
  for (const AxisLinkEntry &l : m.axes)
    os << llvm::format("  axis %s: link %s%s, %.3g us + bytes / %.4g GB/s\n",
                       l.axis.c_str(), l.link.c_str(),
                       l.backend.empty() ? ""
                                         : (" (" + l.backend + ")").c_str(),
                       l.alphaUs, l.betaGBps);
  os << "\ncollectives (rank 0; bytes = sent per rank, ring algorithms):\n";
  if (r.collectives.empty())
    os << "  none\n";
  for (const CollectiveEntry &e : r.collectives) {
    std::string axes;
    for (const std::string &a : e.axes)
      axes += (axes.empty() ? "" : ",") + a;
    os << llvm::format("  %-18s %-8s x%-4lld %12s/each %-4s %8.1f us/each",
                       e.kind.c_str(), axes.c_str(), (long long)e.count,
                       humanBytes(e.bytes).c_str(), e.dtype.c_str(), e.timeUs);
    if (!e.phase.empty())
      os << "  " << e.phase;
    os << "\n";
    if (!e.reason.empty())
      os << "      why: " << e.reason << "\n";
  }
  int64_t maxParams = 0;
  for (int64_t b : r.parameterBytesPerRank)
    maxParams = std::max(maxParams, b);
  os << "\nmemory:\n"
     << "  parameters: " << humanBytes(r.parameterBytesTotal) << " in all, "
     << humanBytes(maxParams) << " on the busiest rank\n"
     << "  activations (rank 0): peak " << humanBytes(r.activationBytesPeak)
     << " live, " << humanBytes(r.activationBytesTotal) << " produced\n";
  if (r.training) {
    auto busiest = [](const std::vector<int64_t> &v) {
      return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
    };
    int64_t states = 0;
    for (int64_t k = 0; k < r.ranks; ++k)
      states = std::max(states, r.parameterBytesPerRank[k] +
                                    r.gradientBytesPerRank[k] +
                                    r.optimizerStateBytesPerRank[k]);
    if (!r.computeDtype.empty())
      os << "  parameters' " << r.computeDtype << " compute copies: "
         << humanBytes(busiest(r.computeCopyBytesPerRank))
         << " on the busiest rank (as stored; the parameters above are the "
            "f32 masters)\n";
    os << "  gradients: " << humanBytes(busiest(r.gradientBytesPerRank))
       << " on the busiest rank\n"
       << "  optimizer states: "
       << humanBytes(busiest(r.optimizerStateBytesPerRank))
       << " on the busiest rank, kept between steps\n"
       << "  model states (parameters + gradients + optimizer states): "
       << humanBytes(states) << " on the busiest rank\n";
    std::map<std::string, std::pair<int64_t, int64_t>> byPhase;
    for (const CollectiveEntry &e : r.collectives) {
      byPhase[e.phase].first += e.count;
      byPhase[e.phase].second += e.count * e.bytes;
    }
    os << "\ncollectives by phase (rank 0):\n";
    for (const char *phase : kTrainingPhases)
      os << llvm::format("  %-10s %5lld collective(s) %12s sent\n", phase,
                         (long long)byPhase[phase].first,
                         humanBytes(byPhase[phase].second).c_str());
  }
  if (!r.expertLayers.empty()) {
    os << "\nexperts:\n";
    for (const ExpertLayerEntry &e : r.expertLayers) {
      std::string shape;
      for (int64_t d : e.dispatched)
        shape += (shape.empty() ? "" : "x") + std::to_string(d);
      os << "  " << (e.layer.empty() ? std::string("(unnamed)") : e.layer)
         << ": " << e.experts << " experts, capacity " << e.capacity
         << " tokens per expert per microbatch (dispatched [" << shape
         << "])\n";
    }
    os << "  experts' weights" << (r.training ? ", gradients and optimizer "
                                                "states"
                                              : "")
       << " per rank:";
    for (int64_t k = 0; k < r.ranks; ++k) {
      if (k == 8 && r.ranks > 9) {
        os << " ... (" << r.ranks - 8 << " more)";
        break;
      }
      os << (k ? "," : "") << " " << k << ": "
         << humanBytes(r.expertBytesPerRank[k]);
    }
    os << "\n";
  }
  if (r.pipeline) {
    const PipelineReport &p = *r.pipeline;
    os << "\npipeline: " << p.stages << " stages, " << p.microbatches
       << " microbatch(es), " << p.schedule << " schedule\n";
    if (p.virtualStages > 1)
      os << "  " << p.virtualStages << " chunks per stage (interleaved)\n";
    for (int64_t s = 0; s < p.stages; ++s) {
      if (p.stageBackwardUs.empty()) {
        os << llvm::format(
            "  stage %lld: %-24s %10.1f us/microbatch  %s parameters\n",
            (long long)s, p.layersPerStage[s].c_str(), p.stageUs[s],
            humanBytes(p.stageParameterBytes[s]).c_str());
        continue;
      }
      os << llvm::format("  stage %lld: %-24s forward %8.1f us, backward "
                         "%8.1f us per microbatch; %s parameters, "
                         "activation peak %s\n",
                         (long long)s, p.layersPerStage[s].c_str(),
                         p.stageUs[s], p.stageBackwardUs[s],
                         humanBytes(p.stageParameterBytes[s]).c_str(),
                         humanBytes(p.stageActivationPeakBytes[s]).c_str());
    }
    os << llvm::format(
        "  predicted: %.1f us for all microbatches, bubble %.1f%%\n",
        p.makespanUs, 100.0 * p.bubbleFraction);
  }
  if (!r.outputs.empty()) {
    os << "\noutputs:\n";
    for (const OutputEntry &o : r.outputs) {
      std::string shape;
      for (int64_t d : o.shape)
        shape += (shape.empty() ? "" : "x") + (d < 0 ? "?" : std::to_string(d));
      os << "  " << o.name << " [" << shape << "] " << o.sharding << "\n";
    }
  }
  if (!r.unmatchedPatterns.empty() || !r.planNotes.empty()) {
    os << "\nplan:\n";
    for (const std::string &p : r.unmatchedPatterns)
      os << "  matches nothing: " << p << "\n";
    for (const std::string &n : r.planNotes)
      os << "  note: " << n << "\n";
  }
  if (!r.attentionChoices.empty()) {
    os << "\ncontext parallelism, attention by the cost model:\n";
    for (const AttentionDecision &d : r.attentionChoices) {
      os << "  " << d.layer << ": " << d.variant << " (" << d.axis << "="
         << d.ranks << ", machine " << d.machine;
      if (d.memoryBudget)
        os << ", budget " << humanBytes(static_cast<double>(*d.memoryBudget));
      os << ")\n";
      for (const AttentionDecision::Candidate &c : d.candidates) {
        os << llvm::format("    %-10s", c.variant.c_str());
        if (!c.rejected.empty() && !c.overBudget) {
          os << "not a candidate: " << c.rejected << "\n";
          continue;
        }
        os << llvm::format("%10.1f us  %lld collective(s)", c.us,
                           static_cast<long long>(c.collectives))
           << ", sends " << humanBytes(c.sentBytes) << ", holds "
           << humanBytes(c.heldBytes);
        if (c.overBudget)
          os << "; over the budget";
        os << "\n";
      }
    }
  }
  os << "\nestimate (rank 0, one step):\n"
     << llvm::format("  compute        %10.1f us (%.3g GFLOP)\n", r.computeUs,
                     r.flopsPerRank / 1e9)
     << llvm::format("  communication  %10.1f us\n", r.communicationUs)
     << llvm::format("  step           %10.1f us (no overlap)\n",
                     r.computeUs + r.communicationUs);
}

void distopt::printReportJson(const Report &r, raw_ostream &os) {
  llvm::json::Array collectives;
  for (const CollectiveEntry &e : r.collectives) {
    llvm::json::Array axes;
    for (const std::string &a : e.axes)
      axes.push_back(a);
    collectives.push_back(llvm::json::Object{{"kind", e.kind},
                                             {"mesh_axes", std::move(axes)},
                                             {"bytes", e.bytes},
                                             {"tensor_bytes", e.tensorBytes},
                                             {"dtype", e.dtype},
                                             {"count", e.count},
                                             {"reason", e.reason},
                                             {"time_us", e.timeUs}});
    if (!e.phase.empty())
      collectives.back().getAsObject()->try_emplace("phase", e.phase);
  }
  llvm::json::Array perRank;
  for (int64_t b : r.parameterBytesPerRank)
    perRank.push_back(b);
  llvm::json::Array meshAxes;
  for (size_t a = 0; a < r.meshAxes.size(); ++a)
    meshAxes.push_back(
        llvm::json::Object{{"name", r.meshAxes[a]}, {"size", r.meshSizes[a]}});
  llvm::json::Object memory{{"per_rank_parameter_bytes", std::move(perRank)},
                            {"parameter_bytes_total", r.parameterBytesTotal},
                            {"activation_bytes_peak", r.activationBytesPeak},
                            {"activation_bytes_total", r.activationBytesTotal}};
  if (r.training) {
    llvm::json::Array grads, states;
    for (int64_t b : r.gradientBytesPerRank)
      grads.push_back(b);
    for (int64_t b : r.optimizerStateBytesPerRank)
      states.push_back(b);
    memory["per_rank_gradient_bytes"] = std::move(grads);
    memory["per_rank_optimizer_state_bytes"] = std::move(states);
    if (!r.computeDtype.empty()) {
      llvm::json::Array copies;
      for (int64_t b : r.computeCopyBytesPerRank)
        copies.push_back(b);
      memory["per_rank_compute_copy_bytes"] = std::move(copies);
      memory["compute_dtype"] = r.computeDtype;
    }
  }
  llvm::json::Array links;
  for (const AxisLinkEntry &l : r.machine.axes)
    links.push_back(llvm::json::Object{{"axis", l.axis},
                                       {"link", l.link},
                                       {"backend", l.backend},
                                       {"alpha_us", l.alphaUs},
                                       {"beta_gbps", l.betaGBps}});
  llvm::json::Object root{
      {"ranks", r.ranks},
      {"machine", llvm::json::Object{{"profile", r.machine.profile},
                                     {"builtin", r.machine.builtin},
                                     {"device", r.machine.device},
                                     {"axes", std::move(links)}}},
      {"mesh", std::move(meshAxes)},
      {"collectives", std::move(collectives)},
      {"memory", std::move(memory)},
      {"estimate",
       llvm::json::Object{{"compute_us", r.computeUs},
                          {"communication_us", r.communicationUs},
                          {"step_us", r.computeUs + r.communicationUs},
                          {"flops_per_rank", r.flopsPerRank}}}};
  llvm::json::Array outputs;
  for (const OutputEntry &o : r.outputs) {
    llvm::json::Array shape;
    for (int64_t d : o.shape)
      shape.push_back(d < 0 ? llvm::json::Value(nullptr)
                            : llvm::json::Value(d));
    outputs.push_back(llvm::json::Object{{"name", o.name},
                                         {"shape", std::move(shape)},
                                         {"sharding", o.sharding}});
  }
  root["outputs"] = std::move(outputs);
  if (!r.expertLayers.empty()) {
    llvm::json::Array layers, perRankExperts;
    for (const ExpertLayerEntry &e : r.expertLayers) {
      llvm::json::Array shape;
      for (int64_t d : e.dispatched)
        shape.push_back(d);
      layers.push_back(llvm::json::Object{{"layer", e.layer},
                                          {"experts", e.experts},
                                          {"capacity", e.capacity},
                                          {"dispatched", std::move(shape)}});
    }
    for (int64_t b : r.expertBytesPerRank)
      perRankExperts.push_back(b);
    root["experts"] =
        llvm::json::Object{{"layers", std::move(layers)},
                           {"per_rank_bytes", std::move(perRankExperts)}};
  }
  llvm::json::Array unmatched, notes;
  for (const std::string &p : r.unmatchedPatterns)
    unmatched.push_back(p);
  for (const std::string &n : r.planNotes)
    notes.push_back(n);
  root["plan"] =
      llvm::json::Object{{"unmatched_patterns", std::move(unmatched)},
                         {"notes", std::move(notes)}};
  if (!r.attentionChoices.empty()) {
    llvm::json::Array attention;
    for (const AttentionDecision &d : r.attentionChoices) {
      llvm::json::Array candidates;
      for (const AttentionDecision::Candidate &c : d.candidates) {
        llvm::json::Object o{{"variant", c.variant}};
        if (c.rejected.empty() || c.overBudget) {
          o["time_us"] = c.us;
          o["collectives"] = c.collectives;
          o["sent_bytes"] = static_cast<int64_t>(std::llround(c.sentBytes));
          o["held_bytes"] = static_cast<int64_t>(std::llround(c.heldBytes));
        }
        if (!c.rejected.empty())
          o["rejected"] = c.rejected;
        candidates.push_back(std::move(o));
      }
      llvm::json::Object o{
          {"layer", d.layer},     {"variant", d.variant},
          {"axis", d.axis},       {"ranks", d.ranks},
          {"machine", d.machine}, {"candidates", std::move(candidates)}};
      if (d.memoryBudget)
        o["memory_budget_bytes"] = *d.memoryBudget;
      attention.push_back(std::move(o));
    }
    root["context_parallel"] =
        llvm::json::Object{{"attention", std::move(attention)}};
  }
  if (r.pipeline) {
    const PipelineReport &p = *r.pipeline;
    llvm::json::Array stages;
    for (int64_t s = 0; s < p.stages; ++s) {
      llvm::json::Object stage{{"layers", p.layersPerStage[s]},
                               {"time_us_per_microbatch", p.stageUs[s]},
                               {"parameter_bytes", p.stageParameterBytes[s]}};
      if (!p.stageBackwardUs.empty()) {
        stage["backward_us_per_microbatch"] = p.stageBackwardUs[s];
        stage["activation_bytes_peak"] = p.stageActivationPeakBytes[s];
      }
      stages.push_back(std::move(stage));
    }
    root["pipeline"] = llvm::json::Object{
        {"stages", std::move(stages)}, {"microbatches", p.microbatches},
        {"schedule", p.schedule},      {"virtual_stages", p.virtualStages},
        {"makespan_us", p.makespanUs}, {"bubble_fraction", p.bubbleFraction}};
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
