// The planning of einsum shared by the host kernel (kernels_einsum.cpp)
// and the CUDA one (cuda/kernels_einsum.cpp): the parsed equation, letter
// strides, and whether a two-operand equation is a batched matrix product.
#ifndef DISTRT_SRC_EINSUM_PLAN_H_
#define DISTRT_SRC_EINSUM_PLAN_H_

#include <map>
#include <string>
#include <vector>

#include "kernel.h"

namespace distrt {

struct EinsumSpec {
  std::vector<std::string> terms;
  std::string out;
  std::map<char, int64_t> extent;
};

// The equation ("bij,bjk->bik", attr `equation`) against the operands'
// shapes: terms, result letters, every letter's extent; the result shape.
Status ParseEinsum(const AttrReader& attrs, const std::vector<const Shape*>& shapes,
                   EinsumSpec* e, Shape* out_shape);

// Strides of `shape` (row-major) summed per letter of `term`, laid out in
// the order of `letters` (0 for a letter the term lacks): a repeated letter
// walks the diagonal.
std::vector<int64_t> LetterStrides(const std::string& term, const Shape& shape,
                                   const std::string& letters);

// The letters of a two-operand product that is a batched GEMM, or false.
bool MatmulLetters(const EinsumSpec& e, std::string* batch, std::string* m, std::string* n,
                   std::string* k);

// The letters of the general contraction loop, in loop order: the
// result's, then the summed ones alphabetically (the last varies fastest).
std::string LoopLetters(const EinsumSpec& e);

// The product of the letters' extents.
int64_t Extent(const EinsumSpec& e, const std::string& letters);

// The letters' extents.
std::vector<int64_t> SizesOf(const EinsumSpec& e, const std::string& letters);

}  // namespace distrt

#endif  // DISTRT_SRC_EINSUM_PLAN_H_
