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

struct BroadcastMap {
  int rank = 0;
  int operands = 0;
  int64_t dims[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};
  // Every operand has the output's shape: offsets equal the index.
  bool identity = false;

  // off[k] = operand k's element offset for output element i.
  DISTRT_HD void Offsets(int64_t i, int64_t* off) const {
    for (int k = 0; k < operands; ++k) off[k] = identity ? i : 0;
    if (identity) return;
    int64_t rest = i;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t idx = rest % dims[d];
      rest /= dims[d];
      for (int k = 0; k < operands; ++k) off[k] += idx * strides[k][d];
    }
  }
};

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
  }
  return true;
}

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_INDEX_MAP_H_
