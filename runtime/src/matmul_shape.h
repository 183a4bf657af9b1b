// A matmul's shapes from its operands and attributes (numpy semantics:
// 1-D promotion, broadcast batch dims; operands stored transposed; a bias
// and epilogue): shared by the host and device matmul kernels.
#ifndef DISTRT_SRC_MATMUL_SHAPE_H_
#define DISTRT_SRC_MATMUL_SHAPE_H_

#include <vector>

#include "kernel.h"

namespace distrt {

struct MatmulShape {
  Shape batch;  // broadcast batch dims
  Shape a_batch, b_batch;
  int64_t m = 1, k = 1, n = 1;
  Shape out;
};

Status MatmulShapes(const Shape& a, const Shape& b, MatmulShape* s);

// Operands stored transposed (`transpose_lhs` / `transpose_rhs`, set by the
// compiler where a transpose fed only this matmul): a 2-D operand read as its
// transpose by the GEMM, with no copy.
struct MatmulFlags {
  bool ta = false, tb = false;
};

Status ReadFlags(const AttrReader& attrs, MatmulFlags* f);

// The shapes the product sees: a transposed operand must be a matrix, and a
// transposed lhs needs a matrix rhs (the one GEMM such products are).
Status LogicalShapes(const Shape& a, const Shape& b, const MatmulFlags& f, Shape* la, Shape* lb);

// The flags and the product's shapes of a matmul of stored operand shapes
// a and b.
Status ProductShape(const AttrReader& attrs, const Shape& a, const Shape& b, MatmulFlags* f,
                    MatmulShape* s);

// What the kernel applies to the product on its way out: a bias (third
// input, one value per column) added to every row, then `epilogue` ("gelu":
// the exact GELU). The exporter folds a linear layer's bias add and GELU
// into the matmul when nothing else reads the values in between.
Status CheckEpilogue(const AttrReader& attrs, const std::vector<TensorType>& inputs,
                     const MatmulShape& s, bool* gelu);

// 2 * m * k * n per batch, from the instruction's operand types (0 if the
// shapes do not make a product).
int64_t MatmulFlops(const VerifyContext& ctx);

}  // namespace distrt

#endif  // DISTRT_SRC_MATMUL_SHAPE_H_
