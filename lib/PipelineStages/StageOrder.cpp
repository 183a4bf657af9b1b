//===- StageOrder.cpp - a training stage's actions and messages -*- C++ -*-===//
#include "distopt/PipelineStages/StageOrder.h"

#include "distopt/Dialect/Dist/IR/DistOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace distopt;

namespace {
using Task = std::pair<Pass, int64_t>; // pass, chunk

/// Where an action's ops sit in the body: forwards by ascending chunk,
/// then each chunk's backward and weight passes by descending chunk (the
/// order one microbatch's actions run in).
int64_t bodyRank(Task t, int64_t chunks) {
  auto [pass, chunk] = t;
  if (pass == Pass::Forward)
    return chunk;
  return chunks + 2 * (chunks - 1 - chunk) + (pass == Pass::Weight ? 1 : 0);
}
} // namespace

void distopt::scheduleLoopBody(nn::MicrobatchLoopOp loop,
                               ArrayRef<ScheduleAction> actions,
                               int64_t tagStride, TaskOfOp taskOf) {
  Block &body = loop.getBody().front();
  int64_t chunks = 1;
  for (const ScheduleAction &a : actions)
    chunks = std::max(chunks, a.chunk + 1);
  auto rank = [&](Task t) { return bodyRank(t, chunks); };
  std::vector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  llvm::DenseMap<Operation *, Task> task;
  for (Operation *op : ops)
    if (std::optional<ScheduleAction> a = taskOf(op))
      task[op] = {a->pass, a->chunk};
  // What belongs to no action by itself goes with the latest action it
  // reads from (a send, a reshard), or else the earliest that reads it (a
  // receive, an input).
  for (Operation *op : ops) {
    if (task.count(op))
      continue;
    std::optional<Task> latest;
    for (Value v : op->getOperands())
      if (auto it = task.find(v.getDefiningOp()); it != task.end())
        if (!latest || rank(it->second) > rank(*latest))
          latest = it->second;
    if (latest)
      task[op] = *latest;
  }
  for (Operation *op : llvm::reverse(ops)) {
    if (task.count(op))
      continue;
    std::optional<Task> earliest;
    for (Operation *user : op->getUsers())
      if (auto it = task.find(user); it != task.end())
        if (!earliest || rank(it->second) < rank(*earliest))
          earliest = it->second;
    task[op] = earliest.value_or(Task{Pass::Forward, 0});
  }

  // Zero-bubble: of a backward, only what a send needs (the input gradients
  // the previous stage waits for) stays; the weight gradients wait.
  bool splitWeights = llvm::any_of(
      actions, [](const ScheduleAction &a) { return a.pass == Pass::Weight; });
  if (splitWeights) {
    llvm::DenseSet<Operation *> needed;
    std::vector<Operation *> work;
    for (Operation *op : ops)
      if (isa<dist::SendOp>(op) && task[op].first == Pass::Backward) {
        needed.insert(op);
        work.push_back(op);
      }
    while (!work.empty()) {
      Operation *op = work.back();
      work.pop_back();
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        auto it = task.find(def);
        if (it == task.end() || it->second.first != Pass::Backward ||
            !needed.insert(def).second)
          continue;
        work.push_back(def);
      }
    }
    for (auto &[op, t] : task)
      if (t.first == Pass::Backward && !needed.contains(op))
        t.first = Pass::Weight;
  }

  // Each action's ops together behind its marker, in body order.
  std::map<int64_t, std::vector<Operation *>> byRank;
  for (Operation *op : ops)
    byRank[rank(task[op])].push_back(op);
  Operation *yield = body.getTerminator();
  OpBuilder b(loop.getContext());
  for (auto &[r, group] : byRank) {
    b.setInsertionPoint(yield);
    Task t = task[group.front()];
    nn::MicrobatchActionOp::create(b, loop.getLoc(),
                                   static_cast<int64_t>(t.first), t.second);
    for (Operation *op : group)
      op->moveBefore(yield);
  }
  SmallVector<int64_t> table;
  for (const ScheduleAction &a : actions)
    table.append({a.microbatch, static_cast<int64_t>(a.pass), a.chunk});
  loop.setSchedule(table);
  loop.setTagStride(tagStride);
}

std::vector<StageMessage> distopt::stageMessages(ModuleOp stage) {
  std::vector<StageMessage> out;
  auto message = [](Operation *op, int64_t offset) {
    if (auto send = dyn_cast<dist::SendOp>(op))
      return std::optional<StageMessage>(
          {op, true, send.getPeer(), send.getTag() + offset});
    if (auto recv = dyn_cast<dist::RecvOp>(op))
      return std::optional<StageMessage>(
          {op, false, recv.getPeer(), recv.getTag() + offset});
    return std::optional<StageMessage>();
  };
  for (auto func : stage.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    for (Operation &op : func.getBody().front()) {
      auto loop = dyn_cast<nn::MicrobatchLoopOp>(op);
      if (!loop) {
        if (auto m = message(&op, 0))
          out.push_back(*m);
        continue;
      }
      // The body's messages per action; without a schedule, the whole body
      // per microbatch in order.
      std::map<std::pair<int64_t, int64_t>, std::vector<Operation *>> segment;
      std::pair<int64_t, int64_t> at{0, 0};
      for (Operation &inner : loop.getBody().front()) {
        if (auto marker = dyn_cast<nn::MicrobatchActionOp>(inner))
          at = {marker.getPass(), marker.getChunk()};
        else if (isa<dist::SendOp, dist::RecvOp>(inner))
          segment[at].push_back(&inner);
      }
      int64_t stride = loop.getTagStride().value_or(0);
      std::vector<std::tuple<int64_t, int64_t, int64_t>> runs;
      if (std::optional<ArrayRef<int64_t>> table = loop.getSchedule())
        for (size_t i = 0; i + 2 < table->size(); i += 3)
          runs.push_back({(*table)[i], (*table)[i + 1], (*table)[i + 2]});
      else
        for (int64_t j = 0; j < loop.getMicrobatches(); ++j)
          for (auto &entry : segment)
            runs.push_back({j, entry.first.first, entry.first.second});
      for (auto [j, pass, chunk] : runs)
        for (Operation *inner : segment[{pass, chunk}])
          out.push_back(*message(inner, j * stride));
    }
  }
  return out;
}

LogicalResult distopt::verifyStageProgress(ArrayRef<ModuleOp> stageModules) {
  int64_t n = stageModules.size();
  std::vector<std::vector<StageMessage>> programs(n);
  for (int64_t s = 0; s < n; ++s)
    programs[s] = stageMessages(stageModules[s]);
  // (from, to, tag) -> messages sent and not yet received.
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> waiting;
  std::vector<size_t> at(n, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int64_t s = 0; s < n; ++s)
      while (at[s] < programs[s].size()) {
        const StageMessage &m = programs[s][at[s]];
        if (m.isSend) {
          ++waiting[{s, m.peer, m.tag}];
        } else {
          int64_t &w = waiting[{m.peer, s, m.tag}];
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
      const StageMessage &m = programs[s][at[s]];
      InFlightDiagnostic diag =
          m.op->emitError("pipeline: the stage programs deadlock: stage ")
          << s << " waits here for a message from stage " << m.peer
          << " (tag " << m.tag << "), which is itself waiting";
      if (at[m.peer] < programs[m.peer].size()) {
        const StageMessage &other = programs[m.peer][at[m.peer]];
        diag.attachNote(other.op->getLoc())
            << "stage " << m.peer << " waits here for tag " << other.tag
            << " from stage " << other.peer;
      }
      return diag;
    }
  return success();
}

void distopt::alignReceives(ArrayRef<ModuleOp> stageModules) {
  // (from, to) -> tags in the sender's program order; the receiver's
  // receives by tag. Only messages outside loops: a loop body's order is its
  // actions'.
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> sent;
  std::map<std::pair<int64_t, int64_t>, std::map<int64_t, Operation *>>
      received;
  for (auto [s, m] : llvm::enumerate(stageModules)) {
    int64_t stage = s;
    ModuleOp module = m;
    module.walk([&](Operation *op) {
      if (!isa<func::FuncOp>(op->getParentOp()))
        return;
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
