//===- CheckpointState.cpp - what a save and a load share -----------------===//
#include "CheckpointState.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <cstdio>
#include <set>

using namespace distopt;
using namespace distopt::checkpoint;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
using llvm::Twine;

Error checkpoint::fail(const Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

Expected<std::vector<Slot>> checkpoint::stateSlots(const Programs &programs) {
  std::vector<Slot> slots;
  std::set<std::tuple<std::string, std::vector<int64_t>, std::vector<int64_t>>>
      seen;
  for (size_t r = 0; r < programs.size(); ++r) {
    const distrt::Program &p = *programs[r];
    for (const distrt::proto::Weight &w : p.proto().weights()) {
      if (!w.has_update() && !w.zeros())
        continue;
      const distrt::TensorType &type = p.value(p.ValueIndex(w.value())).type;
      distrt::SliceInfo s;
      distrt::Status st = distrt::ResolveSlice(w.slice(), type.shape, &s);
      if (!st.ok())
        return fail("rank " + Twine(r) + ", '" + w.name() +
                    "': " + st.ToString());
      Slot slot;
      slot.rank = static_cast<int>(r);
      slot.weight = &w;
      slot.dtype = type.dtype;
      slot.global.assign(s.global_shape.begin(), s.global_shape.end());
      slot.offsets.assign(s.offsets.begin(), s.offsets.end());
      slot.sizes.assign(s.sizes.begin(), s.sizes.end());
      slot.copy = !w.copy_of().empty();
      slot.writes = !slot.copy &&
                    seen.insert({w.name(), slot.offsets, slot.sizes}).second;
      slots.push_back(std::move(slot));
    }
  }
  return slots;
}

std::map<std::string, std::pair<distrt::DType, std::vector<int64_t>>>
checkpoint::stateTensors(const std::vector<Slot> &slots, std::string *fp) {
  std::map<std::string, std::pair<distrt::DType, std::vector<int64_t>>> out;
  for (const Slot &s : slots)
    if (!s.copy)
      out.emplace(s.weight->name(), std::make_pair(s.dtype, s.global));
  std::vector<std::tuple<std::string, distrt::DType, std::vector<int64_t>>>
      list;
  for (const auto &[name, t] : out)
    list.emplace_back(name, t.first, t.second);
  *fp = fingerprint(std::move(list));
  return out;
}

std::string checkpoint::rankFileName(int rank) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "rank-%05d.safetensors", rank);
  return buf;
}

std::string checkpoint::joinPath(StringRef dir, StringRef name) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return p.str().str();
}

Error checkpoint::agree(Session &session, Error mine, StringRef what) {
  std::string text = mine ? llvm::toString(std::move(mine)) : std::string();
  auto all = session.allGather(text);
  if (!all)
    return all.takeError();
  if (!text.empty())
    return fail(text);
  for (size_t p = 0; p < all->size(); ++p)
    if (!(*all)[p].empty())
      return fail(what + ": process " + Twine(p) + " failed: " + (*all)[p]);
  return Error::success();
}
