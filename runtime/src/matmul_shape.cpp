#include "matmul_shape.h"

namespace distrt {

Status MatmulShapes(const Shape& a, const Shape& b, MatmulShape* s) {
  if (a.empty() || b.empty()) return InvalidArgumentError("matmul operands must have rank >= 1");
  Shape a2 = a, b2 = b;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a2.insert(a2.begin(), 1);
  if (b_vec) b2.push_back(1);
  s->m = a2[a2.size() - 2];
  s->k = a2.back();
  s->n = b2.back();
  if (b2[b2.size() - 2] != s->k) {
    return InvalidArgumentError("matmul inner dimensions differ: ", ShapeToString(a), " x ",
                                ShapeToString(b));
  }
  s->a_batch.assign(a2.begin(), a2.end() - 2);
  s->b_batch.assign(b2.begin(), b2.end() - 2);
  DISTRT_RETURN_IF_ERROR(BroadcastShapes(s->a_batch, s->b_batch, &s->batch));
  s->out = s->batch;
  if (!a_vec) s->out.push_back(s->m);
  if (!b_vec) s->out.push_back(s->n);
  return OkStatus();
}

Status ReadFlags(const AttrReader& attrs, MatmulFlags* f) {
  int64_t ta = 0, tb = 0;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("transpose_lhs", 0, &ta));
  DISTRT_RETURN_IF_ERROR(attrs.GetInt("transpose_rhs", 0, &tb));
  f->ta = ta != 0;
  f->tb = tb != 0;
  return OkStatus();
}

Status LogicalShapes(const Shape& a, const Shape& b, const MatmulFlags& f, Shape* la, Shape* lb) {
  *la = a;
  *lb = b;
  if (f.ta) {
    if (a.size() != 2 || b.size() != 2)
      return InvalidArgumentError("transpose_lhs needs 2-D operands, got ", ShapeToString(a), " x ",
                                  ShapeToString(b));
    std::swap((*la)[0], (*la)[1]);
  }
  if (f.tb) {
    if (b.size() != 2)
      return InvalidArgumentError("transpose_rhs needs a 2-D rhs, got ", ShapeToString(b));
    std::swap((*lb)[0], (*lb)[1]);
  }
  return OkStatus();
}

Status ProductShape(const AttrReader& attrs, const Shape& a, const Shape& b, MatmulFlags* f,
                    MatmulShape* s) {
  DISTRT_RETURN_IF_ERROR(ReadFlags(attrs, f));
  Shape la, lb;
  DISTRT_RETURN_IF_ERROR(LogicalShapes(a, b, *f, &la, &lb));
  return MatmulShapes(la, lb, s);
}

Status CheckEpilogue(const AttrReader& attrs, const std::vector<TensorType>& inputs,
                     const MatmulShape& s, bool* gelu) {
  std::string epilogue;
  DISTRT_RETURN_IF_ERROR(attrs.GetString("epilogue", "", &epilogue));
  if (!epilogue.empty() && epilogue != "gelu")
    return InvalidArgumentError("matmul epilogue must be 'gelu' or absent, got '", epilogue, "'");
  *gelu = epilogue == "gelu";
  const DType dtype = inputs[0].dtype;
  if ((*gelu || inputs.size() > 2) && dtype != DType::kF32 && dtype != DType::kF64)
    return InvalidArgumentError("matmul bias and epilogue need f32 or f64 operands, got ",
                                DTypeName(dtype));
  if (inputs.size() > 2) {
    const TensorType& bias = inputs[2];
    if (bias.dtype != dtype || bias.shape != Shape{s.n} || s.out.empty() || s.out.back() != s.n)
      return InvalidArgumentError("matmul bias must be ", DTypeName(dtype), "[", s.n,
                                  "] (one value per column of a matrix product), got ",
                                  DTypeName(bias.dtype), ShapeToString(bias.shape));
  }
  return OkStatus();
}

int64_t MatmulFlops(const VerifyContext& ctx) {
  if (ctx.inputs.size() < 2) return 0;
  MatmulFlags f;
  MatmulShape s;
  if (!ProductShape(ctx.attrs(), ctx.inputs[0].shape, ctx.inputs[1].shape, &f, &s).ok()) return 0;
  int64_t batch = 1;
  for (int64_t d : s.batch) batch *= d;
  return 2 * batch * s.m * s.k * s.n;
}

}  // namespace distrt
