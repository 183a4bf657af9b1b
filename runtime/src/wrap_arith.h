// Integer arithmetic that wraps instead of overflowing (numpy semantics);
// plain arithmetic for floating types. Shared by the kernels and the
// communicators' host reductions, so both round and wrap alike.
#ifndef DISTRT_SRC_WRAP_ARITH_H_
#define DISTRT_SRC_WRAP_ARITH_H_

#include <type_traits>

namespace distrt {

template <typename T>
inline T WrapAdd(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename T>
inline T WrapSub(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}
template <typename T>
inline T WrapMul(T a, T b) {
  if constexpr (std::is_integral<T>::value) {
    using U = std::make_unsigned_t<T>;
    // Promote below int's width: unsigned short * unsigned short is int
    // arithmetic, which may overflow.
    using W = std::conditional_t<(sizeof(U) < sizeof(unsigned)), unsigned, U>;
    return static_cast<T>(
        static_cast<W>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b))));
  } else {
    return a * b;
  }
}

}  // namespace distrt

#endif  // DISTRT_SRC_WRAP_ARITH_H_
