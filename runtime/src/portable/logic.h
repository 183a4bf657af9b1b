// Comparison, logic and selection bodies (host and device), with numpy
// broadcasting: equal/less/less_equal/greater/greater_equal (any numeric
// storage type -> bool), and/or/xor/not on bool, and where(cond, a, b) on
// elements of any type (moved as bits of their size). Semantics are the host
// kernels' (kernels_binary.cpp, kernels_unary.cpp): bool operands count as
// true when non-zero, results are 0/1, every comparison with NaN is false.
// bf16/f16 compare their f32 values, which are exact.
#ifndef DISTRT_SRC_PORTABLE_LOGIC_H_
#define DISTRT_SRC_PORTABLE_LOGIC_H_

#include "portable/hd.h"
#include "portable/index_map.h"

namespace distrt {
namespace portable {

enum class CompareOp : int { kEqual, kLess, kLessEqual, kGreater, kGreaterEqual };

template <typename C>
DISTRT_HD bool ApplyCompare(CompareOp op, C a, C b) {
  switch (op) {
    case CompareOp::kEqual:
      return a == b;
    case CompareOp::kLess:
      return a < b;
    case CompareOp::kLessEqual:
      return a <= b;
    case CompareOp::kGreater:
      return a > b;
    case CompareOp::kGreaterEqual:
      return a >= b;
  }
  return false;
}

// y = a op b (bool, stored as uint8_t 0/1); `map` has two operands.
template <typename T>
struct CompareBody {
  CompareOp op;
  const T* a;
  const T* b;
  uint8_t* y;
  BroadcastMap map;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t off[kMaxOperands];
    map.Offsets(i, off);
    y[i] = ApplyCompare(op, Load(a[off[0]]), Load(b[off[1]])) ? 1 : 0;
  }
};

enum class LogicOp : int { kAnd, kOr, kXor };

// y = a op b on bools; `map` has two operands.
struct LogicBody {
  LogicOp op;
  const uint8_t* a;
  const uint8_t* b;
  uint8_t* y;
  BroadcastMap map;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t off[kMaxOperands];
    map.Offsets(i, off);
    const uint8_t x = a[off[0]] != 0, z = b[off[1]] != 0;
    y[i] = op == LogicOp::kAnd ? (x & z) : (op == LogicOp::kOr ? (x | z) : (x ^ z));
  }
};

struct NotBody {
  const uint8_t* x;
  uint8_t* y;
  DISTRT_HD void operator()(int64_t i) const { y[i] = x[i] == 0 ? 1 : 0; }
};

// y = cond ? a : b, elements moved as U (an unsigned integer of the element's
// size); `map` has three operands: cond, a, b.
template <typename U>
struct WhereBody {
  const uint8_t* cond;
  const U* a;
  const U* b;
  U* y;
  BroadcastMap map;
  DISTRT_HD void operator()(int64_t i) const {
    int64_t off[kMaxOperands];
    map.Offsets(i, off);
    y[i] = cond[off[0]] != 0 ? a[off[1]] : b[off[2]];
  }
};

// WhereBody four elements at a time, for Packable maps (a mask over the
// last dims, a scalar branch): one load per operand pack.
template <typename U>
struct WherePackBody {
  const uint8_t* cond;
  const U* a;
  const U* b;
  U* y;
  BroadcastMap map;
  int64_t n;
  DISTRT_HD void operator()(int64_t p) const {
    const int64_t i0 = p * kPack;
    if (i0 + kPack <= n) {
      const PackOffsets o = PackAt(map, i0);
      const Pack<uint8_t> c = LoadPack(cond, o.base[0], o.step[0]);
      const Pack<U> va = LoadPack(a, o.base[1], o.step[1]);
      const Pack<U> vb = LoadPack(b, o.base[2], o.step[2]);
      Pack<U> out;
      DISTRT_UNROLL
      for (int k = 0; k < kPack; ++k) out.v[k] = c.v[k] != 0 ? va.v[k] : vb.v[k];
      reinterpret_cast<Pack<U>*>(y)[p] = out;
      return;
    }
    int64_t off[kMaxOperands];
    for (int64_t i = i0; i < n; ++i) {
      map.Offsets(i, off);
      y[i] = cond[off[0]] != 0 ? a[off[1]] : b[off[2]];
    }
  }
};

}  // namespace portable
}  // namespace distrt

#endif  // DISTRT_SRC_PORTABLE_LOGIC_H_
