//===- CostModel.cpp - time of compute and communication --------*- C++ -*-===//
#include "distopt/CostModel/CostModel.h"

#include "llvm/ADT/StringSwitch.h"

#include <algorithm>

using namespace distopt::cost;
using llvm::ArrayRef;
using llvm::StringRef;

std::optional<Collective> distopt::cost::collectiveNamed(StringRef name) {
  return llvm::StringSwitch<std::optional<Collective>>(name)
      .Case("all_reduce", Collective::AllReduce)
      .Case("all_gather", Collective::AllGather)
      .Case("reduce_scatter", Collective::ReduceScatter)
      .Case("all_to_all", Collective::AllToAll)
      .Case("collective_permute", Collective::Permute)
      .Case("send", Collective::Send)
      .Case("recv", Collective::Recv)
      .Default(std::nullopt);
}

double distopt::cost::bytesSent(Collective kind, double bytes, int64_t n) {
  double k = static_cast<double>(std::max<int64_t>(n, 1));
  switch (kind) {
  case Collective::AllReduce:
    return 2 * bytes * (k - 1) / k;
  case Collective::AllGather:
  case Collective::ReduceScatter:
  case Collective::AllToAll:
    return bytes * (k - 1) / k;
  case Collective::Permute:
  case Collective::Send:
    return bytes;
  case Collective::Recv:
    return 0;
  }
  return 0;
}

double distopt::cost::collectiveUs(Collective kind, double bytes, int64_t n,
                                   const AlphaBeta &link) {
  double wire = kind == Collective::Recv ? bytes : bytesSent(kind, bytes, n);
  return link.alphaUs + transferUs(wire, link.betaGBps);
}

double distopt::cost::computeUs(const MachineProfile &machine,
                                const OpWork &work) {
  if (work.view)
    return 0;
  if (!work.gemm && work.dtype == "f32") {
    auto measured = machine.kernelNsPerElement.find(work.kernel);
    if (measured != machine.kernelNsPerElement.end())
      return work.elements * measured->second * 1e-3;
  }
  double memory = transferUs(work.bytes, machine.memoryGBps);
  if (!work.gemm)
    return memory;
  double rate = machine.gemmRate(work.dtype, work.gemmClass);
  double math = rate > 0 ? work.flops / (rate * 1e6) : 0;
  return std::max(math, memory);
}

MeshCost::MeshCost(std::shared_ptr<const MachineProfile> machine,
                   ArrayRef<std::string> axisNames, ArrayRef<int64_t> axisSizes)
    : profile(std::move(machine)), sizes(axisSizes.begin(), axisSizes.end()) {
  for (int64_t a = 0, e = sizes.size(); a < e; ++a) {
    StringRef kind = profile->linkKindFor(axisNames, axisSizes, a);
    kinds.push_back(kind.str());
    links.push_back(profile->links.at(kinds.back()).at(sizes[a]));
  }
}

int64_t MeshCost::groupSize(ArrayRef<int64_t> axes) const {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= sizes[a];
  return n;
}

AlphaBeta MeshCost::groupLink(ArrayRef<int64_t> axes) const {
  if (axes.size() == 1)
    return links[axes.front()];
  int64_t n = groupSize(axes);
  AlphaBeta slowest{n, 0, 0};
  bool first = true;
  for (int64_t a : axes) {
    const AlphaBeta &l = profile->links.at(kinds[a]).at(n);
    slowest.alphaUs = std::max(slowest.alphaUs, l.alphaUs);
    slowest.betaGBps = first ? l.betaGBps : std::min(slowest.betaGBps, l.betaGBps);
    first = false;
  }
  return slowest;
}

double MeshCost::collectiveUs(Collective kind, double bytes,
                              ArrayRef<int64_t> axes) const {
  if (axes.empty())
    return 0;
  return cost::collectiveUs(kind, bytes, groupSize(axes), groupLink(axes));
}

bool MeshCost::uniform() const {
  return llvm::all_of(links, [&](const AlphaBeta &l) {
    return l.alphaUs == links.front().alphaUs &&
           l.betaGBps == links.front().betaGBps;
  });
}
