//===- StageOrder.cpp - a training stage's ops in schedule order -*- C++
//-*-===//
#include "distopt/PipelineStages/StageOrder.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"
#include "distopt/Dialect/NN/IR/NNAttrNames.h"

#include "llvm/ADT/DenseSet.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace distopt;

namespace {
using TaskKey = std::tuple<int64_t, int64_t, Pass>; // chunk, microbatch, pass

TaskKey keyOf(const ScheduleAction &a) {
  return {a.chunk, a.microbatch, a.pass};
}
} // namespace

void distopt::orderStageOps(func::FuncOp func, ArrayRef<ScheduleAction> actions,
                            TaskOfOp taskOf) {
  Block &body = func.getBody().front();
  std::vector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  llvm::DenseMap<Operation *, TaskKey> task;
  for (Operation *op : ops)
    if (std::optional<ScheduleAction> a = taskOf(op))
      task[op] = keyOf(*a);

  // What the partitioner inserted on the way (reshards of a microbatch's
  // activations) belongs to the action of what it reads, when that is one
  // action; what reads several (the loss sum, the optimizer) runs after all
  // actions.
  for (Operation *op : ops) {
    if (task.count(op) || isa<dist::SendOp, dist::RecvOp>(op))
      continue;
    auto phase = op->getAttrOfType<StringAttr>(nn::kPhaseAttr);
    if (phase && phase.getValue() == "optimizer")
      continue;
    std::optional<TaskKey> inherited;
    bool mixed = false;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp())
        if (auto it = task.find(def); it != task.end()) {
          mixed |= inherited && *inherited != it->second;
          inherited = it->second;
        }
    if (inherited && !mixed)
      task[op] = *inherited;
  }

  // Zero-bubble: of a backward, only what a send needs (the input gradients
  // the previous stage waits for) stays; the weight gradients wait.
  bool splitWeights = llvm::any_of(
      actions, [](const ScheduleAction &a) { return a.pass == Pass::Weight; });
  if (splitWeights) {
    // Walk back from every send through backward ops and ops of no action,
    // never into forward ops (done already) or the optimizer (which sends
    // what every gradient feeds: the clipping norm).
    llvm::DenseSet<Operation *> needed;
    std::vector<Operation *> work;
    for (Operation *op : ops)
      if (isa<dist::SendOp>(op))
        work.push_back(op);
    while (!work.empty()) {
      Operation *op = work.back();
      work.pop_back();
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || def->getBlock() != &body || needed.contains(def))
          continue;
        auto phase = def->getAttrOfType<StringAttr>(nn::kPhaseAttr);
        if (phase && phase.getValue() == "optimizer")
          continue;
        auto it = task.find(def);
        if (it != task.end() && std::get<2>(it->second) != Pass::Backward)
          continue;
        needed.insert(def);
        work.push_back(def);
      }
    }
    for (auto &[op, key] : task)
      if (std::get<2>(key) == Pass::Backward && !needed.contains(op))
        std::get<2>(key) = Pass::Weight;
  }
  std::map<TaskKey, std::vector<Operation *>> groups;
  for (Operation *op : ops)
    if (auto it = task.find(op); it != task.end())
      groups[it->second].push_back(op);

  // Place an op after what it reads (iteratively: chains are long), and a
  // send right after the value it sends.
  std::vector<Operation *> order;
  llvm::DenseSet<Operation *> placed;
  auto place = [&](Operation *root) {
    std::vector<std::pair<Operation *, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [op, operandsDone] = stack.back();
      stack.pop_back();
      if (placed.contains(op))
        continue;
      if (!operandsDone) {
        stack.push_back({op, true});
        for (Value v : llvm::reverse(op->getOperands()))
          if (Operation *def = v.getDefiningOp();
              def && def->getBlock() == &body && !placed.contains(def))
            stack.push_back({def, false});
        continue;
      }
      placed.insert(op);
      order.push_back(op);
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (isa<dist::SendOp>(user) && !placed.contains(user))
            stack.push_back({user, false});
    }
  };
  for (const ScheduleAction &a : actions)
    if (auto it = groups.find(keyOf(a)); it != groups.end())
      for (Operation *op : it->second)
        place(op);
  for (Operation *op : ops)
    place(op);
  Operation *terminator = body.getTerminator();
  for (Operation *op : order)
    op->moveBefore(terminator);
}

LogicalResult distopt::verifyStageProgress(ArrayRef<ModuleOp> stageModules) {
  struct Step {
    Operation *op;
    bool isSend;
    int64_t peer;
  };
  int64_t n = stageModules.size();
  std::vector<std::vector<Step>> programs(n);
  for (int64_t s = 0; s < n; ++s)
    ModuleOp(stageModules[s]).walk([&](Operation *op) {
      if (auto send = dyn_cast<dist::SendOp>(op))
        programs[s].push_back({op, true, send.getPeer()});
      else if (auto recv = dyn_cast<dist::RecvOp>(op))
        programs[s].push_back({op, false, recv.getPeer()});
    });
  // sent[from][to] - received[from][to]: messages waiting.
  std::map<std::pair<int64_t, int64_t>, int64_t> waiting;
  std::vector<size_t> at(n, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t s = 0; s < n; ++s)
      while (at[s] < programs[s].size()) {
        const Step &step = programs[s][at[s]];
        if (step.isSend) {
          ++waiting[{s, step.peer}];
        } else {
          int64_t &w = waiting[{step.peer, s}];
          if (w == 0)
            break;
          --w;
        }
        ++at[s];
        progress = true;
      }
  }
  for (int64_t s = 0; s < n; ++s)
    if (at[s] < programs[s].size()) {
      const Step &step = programs[s][at[s]];
      return step.op->emitError("pipeline: the stage programs deadlock: stage ")
             << s << " waits here for a message from stage " << step.peer
             << ", which is itself waiting";
    }
  return success();
}

void distopt::alignReceives(ArrayRef<ModuleOp> stageModules) {
  // (from, to) -> tags in the sender's program order; the receiver's
  // receives by tag.
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> sent;
  std::map<std::pair<int64_t, int64_t>, std::map<int64_t, Operation *>>
      received;
  for (auto [s, m] : llvm::enumerate(stageModules)) {
    int64_t stage = s;
    ModuleOp module = m;
    module.walk([&](Operation *op) {
      if (auto send = dyn_cast<dist::SendOp>(op))
        sent[{stage, send.getPeer()}].push_back(send.getTag());
      if (auto recv = dyn_cast<dist::RecvOp>(op))
        received[{recv.getPeer(), stage}][recv.getTag()] = op;
    });
  }
  for (auto &[channel, tags] : sent) {
    auto &recvs = received[channel];
    Operation *limit = nullptr;
    for (int64_t tag : llvm::reverse(tags)) {
      auto it = recvs.find(tag);
      if (it == recvs.end())
        continue; // verifyStagePairing names it
      if (limit && !it->second->isBeforeInBlock(limit))
        it->second->moveBefore(limit);
      limit = it->second;
    }
  }
}
