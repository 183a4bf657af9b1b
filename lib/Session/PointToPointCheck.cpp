//===- PointToPointCheck.cpp - every send has its receive -----------------===//
#include "distopt/Session/PointToPointCheck.h"

#include "llvm/ADT/Twine.h"

#include <map>
#include <set>

using namespace distopt;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

llvm::Error distopt::checkPointToPoint(const Programs &programs) {
  // (from, to) -> the tags and byte sizes in program order.
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int64_t>>> sent,
      received;
  for (const auto &p : programs) {
    const auto &proto = p->proto();
    for (const auto &inst : proto.instructions()) {
      bool send = inst.op() == "send", recv = inst.op() == "recv";
      if (!send && !recv)
        continue;
      int64_t peer =
          inst.attrs().count("peer") ? inst.attrs().at("peer").i() : -1;
      int64_t tag = inst.attrs().count("tag") ? inst.attrs().at("tag").i() : 0;
      int32_t value = send ? inst.inputs(0) : inst.outputs(0);
      const distrt::TensorType &type = p->value(p->ValueIndex(value)).type;
      int64_t bytes =
          distrt::NumElements(type.shape) * distrt::DTypeSize(type.dtype);
      if (send)
        sent[{proto.rank(), static_cast<int>(peer)}].push_back({tag, bytes});
      else
        received[{static_cast<int>(peer), proto.rank()}].push_back(
            {tag, bytes});
    }
  }
  std::set<std::pair<int, int>> pairs;
  for (auto &e : sent)
    pairs.insert(e.first);
  for (auto &e : received)
    pairs.insert(e.first);
  for (auto [from, to] : pairs) {
    const auto &s = sent[{from, to}];
    const auto &r = received[{from, to}];
    for (size_t i = 0; i < std::max(s.size(), r.size()); ++i) {
      if (i >= s.size())
        return fail("rank " + llvm::Twine(to) + " receives message " +
                    llvm::Twine(i) + " (tag " + llvm::Twine(r[i].first) +
                    ") from rank " + llvm::Twine(from) +
                    ", which never sends it");
      if (i >= r.size())
        return fail("rank " + llvm::Twine(from) + " sends message " +
                    llvm::Twine(i) + " (tag " + llvm::Twine(s[i].first) +
                    ") to rank " + llvm::Twine(to) +
                    ", which never receives it");
      if (s[i] != r[i])
        return fail("rank " + llvm::Twine(from) + " sends tag " +
                    llvm::Twine(s[i].first) + " (" + llvm::Twine(s[i].second) +
                    " bytes) as message " + llvm::Twine(i) + " to rank " +
                    llvm::Twine(to) + ", which expects tag " +
                    llvm::Twine(r[i].first) + " (" + llvm::Twine(r[i].second) +
                    " bytes) there");
    }
  }
  return llvm::Error::success();
}
