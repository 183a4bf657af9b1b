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
  // (from, to) -> tag -> bytes. Messages are matched by peer and tag, so
  // the order does not matter; a pipeline stage's loop body sends its tags
  // once per microbatch, offset alike on both sides.
  std::map<std::pair<int, int>, std::map<int64_t, int64_t>> sent, received;
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
        sent[{proto.rank(), static_cast<int>(peer)}][tag] = bytes;
      else
        received[{static_cast<int>(peer), proto.rank()}][tag] = bytes;
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
    for (auto [tag, bytes] : r)
      if (!s.count(tag))
        return fail("rank " + llvm::Twine(to) + " receives tag " +
                    llvm::Twine(tag) + " from rank " + llvm::Twine(from) +
                    ", which never sends it");
    for (auto [tag, bytes] : s) {
      auto it = r.find(tag);
      if (it == r.end())
        return fail("rank " + llvm::Twine(from) + " sends tag " +
                    llvm::Twine(tag) + " to rank " + llvm::Twine(to) +
                    ", which never receives it");
      if (it->second != bytes)
        return fail("rank " + llvm::Twine(from) + " sends tag " +
                    llvm::Twine(tag) + " (" + llvm::Twine(bytes) +
                    " bytes) to rank " + llvm::Twine(to) +
                    ", which expects " + llvm::Twine(it->second) +
                    " bytes there");
    }
  }
  return llvm::Error::success();
}
