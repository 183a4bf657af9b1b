// Index maps for bodies that read operands of other shapes than their
// output: numpy broadcasting (each operand's element strides aligned to the
// output's dims, 0 where it is broadcast).
#ifndef DISTRT_SRC_PORTABLE_INDEX_MAP_H_
#define DISTRT_SRC_PORTABLE_INDEX_MAP_H_

#include <cstdint>
#include <vector>

#include "portable/hd.h"

namespace distrt {
namespace portable {

constexpr int kMaxOperands = 3;

// How one operand's offset follows from the output index. The common
// forms take at most one division (64-bit division is dear on a GPU);
// kGeneral walks the dims.
enum class OperandForm : int {
  kSame,     // the output's shape: offset = i
  kScalar,   // one element: offset = 0
  kTrailing, // the output's trailing dims (a bias): offset = i % extent
  kLeading,  // the output's leading dims, then 1s (per-row values):
             // offset = i / extent
  kGeneral,
};

struct BroadcastMap {
  int rank = 0;
  int operands = 0;
  int64_t dims[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};
  OperandForm form[kMaxOperands] = {};
  int64_t extent[kMaxOperands] = {};  // kTrailing: its size; kLeading: the 1s' span
  // Every operand has the output's shape: offsets equal the index.
  bool identity = false;

  // off[k] = operand k's element offset for output element i. The loops
  // over operands run to the constant kMaxOperands, unrolled, so that
  // `off` stays in registers.
  DISTRT_HD void Offsets(int64_t i, int64_t* off) const {
    bool general = false;
    DISTRT_UNROLL
    for (int k = 0; k < kMaxOperands; ++k) {
      off[k] = 0;
      if (k >= operands) continue;
      switch (form[k]) {
        case OperandForm::kSame:
          off[k] = i;
          break;
        case OperandForm::kScalar:
          break;
        case OperandForm::kTrailing:
          off[k] = Mod(i, extent[k]);
          break;
        case OperandForm::kLeading:
          off[k] = Div(i, extent[k]);
          break;
        case OperandForm::kGeneral:
          general = true;
          break;
      }
    }
    if (!general) return;
    int64_t rest = i;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t idx;
      DivMod(rest, dims[d], &rest, &idx);
      DISTRT_UNROLL
      for (int k = 0; k < kMaxOperands; ++k)
        if (k < operands && form[k] == OperandForm::kGeneral) off[k] += idx * strides[k][d];
    }
  }
};

// For bodies that take kPack consecutive output elements at once (see
// Packable): operand k's elements for outputs i0 .. i0 + kPack - 1 are at
// base[k] + j * step[k] (step 1: consecutive and aligned; 0: one element).
struct PackOffsets {
  int64_t base[kMaxOperands];
  int step[kMaxOperands];
};

DISTRT_HD PackOffsets PackAt(const BroadcastMap& m, int64_t i0) {
  PackOffsets o;
  DISTRT_UNROLL
  for (int k = 0; k < kMaxOperands; ++k) {
    o.base[k] = 0;
    o.step[k] = 0;
    if (k >= m.operands) continue;
    switch (m.form[k]) {
      case OperandForm::kSame:
        o.base[k] = i0;
        o.step[k] = 1;
        break;
      case OperandForm::kTrailing:
        o.base[k] = Mod(i0, m.extent[k]);
        o.step[k] = 1;
        break;
      case OperandForm::kLeading:
        o.base[k] = Div(i0, m.extent[k]);
        break;
      default:  // kScalar (kGeneral never reaches a pack body)
        break;
    }
  }
  return o;
}

// Loads operand elements base + j * step, j < kPack: one aligned load when
// step is 1, the one element repeated when 0.
template <typename T>
DISTRT_HD Pack<T> LoadPack(const T* p, int64_t base, int step) {
  if (step == 1) return *reinterpret_cast<const Pack<T>*>(p + base);
  Pack<T> v;
  DISTRT_UNROLL
  for (int k = 0; k < kPack; ++k) v.v[k] = p[base];
  return v;
}

// Whether output elements can be taken kPack at a time with PackAt: no
// operand walks the dims, and the trailing and leading spans are multiples
// of kPack, so a pack never straddles one.
inline bool Packable(const BroadcastMap& m) {
  for (int k = 0; k < m.operands; ++k) {
    switch (m.form[k]) {
      case OperandForm::kSame:
      case OperandForm::kScalar:
        break;
      case OperandForm::kTrailing:
      case OperandForm::kLeading:
        if (m.extent[k] % kPack != 0) return false;
        break;
      case OperandForm::kGeneral:
        return false;
    }
  }
  return true;
}

// Which OperandForm `s` (broadcasting to `out`) has, and its extent.
inline OperandForm FormOf(const std::vector<int64_t>& s, const std::vector<int64_t>& out,
                          int64_t* extent) {
  int64_t n = 1, total = 1;
  for (int64_t d : s) n *= d;
  for (int64_t d : out) total *= d;
  *extent = 1;
  if (s == out) return OperandForm::kSame;
  if (n == 1) return OperandForm::kScalar;
  const size_t lead = out.size() - s.size();
  // Trailing: s's dims (after its leading 1s) equal the output's last dims.
  size_t first = 0;
  while (first < s.size() && s[first] == 1) ++first;
  bool trailing = true;
  for (size_t d = first; d < s.size(); ++d) trailing = trailing && s[d] == out[d + lead];
  if (trailing) {
    *extent = n;
    return OperandForm::kTrailing;
  }
  // Leading: as the output's first dims, then only 1s.
  size_t last = s.size();
  while (last > 0 && s[last - 1] == 1) --last;
  bool leading = lead == 0;
  for (size_t d = 0; leading && d < last; ++d) leading = s[d] == out[d];
  if (leading && n > 0) {
    *extent = total / n;
    return OperandForm::kLeading;
  }
  return OperandForm::kGeneral;
}

// The map of `operands` (each broadcasting to `out`) onto `out`. False when
// a shape does not broadcast or there are more dims or operands than the
// map holds.
inline bool MakeBroadcastMap(const std::vector<std::vector<int64_t>>& operands,
                             const std::vector<int64_t>& out, BroadcastMap* m) {
  if (out.size() > static_cast<size_t>(kMaxDims) ||
      operands.size() > static_cast<size_t>(kMaxOperands))
    return false;
  *m = BroadcastMap();
  m->rank = static_cast<int>(out.size());
  m->operands = static_cast<int>(operands.size());
  m->identity = true;
  for (size_t d = 0; d < out.size(); ++d) m->dims[d] = out[d];
  for (size_t k = 0; k < operands.size(); ++k) {
    const std::vector<int64_t>& s = operands[k];
    if (s.size() > out.size()) return false;
    m->identity = m->identity && s == out;
    const size_t lead = out.size() - s.size();
    int64_t acc = 1;
    for (size_t d = out.size(); d-- > 0;) {
      if (d < lead) {
        m->strides[k][d] = 0;
        continue;
      }
      const int64_t dim = s[d - lead];
      if (dim != out[d] && dim != 1) return false;
      m->strides[k][d] = (dim == 1 && out[d] != 1) ? 0 : acc;
      acc *= dim;
    }
    m->form[k] = FormOf(s, out, &m->extent[k]);
  }
  return true;
}

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_INDEX_MAP_H_
