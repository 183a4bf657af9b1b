//===- OpsTransformer.cpp - opset 23's transformer building blocks --------===//
//
// RMSNormalization, RotaryEmbedding and Attention (opset 23), as recent
// exporters write them. Each becomes the chain of nn ops the ONNX function
// body describes, so sharding rules, gradients and kernels are the existing
// ones: nothing downstream needs to know these ops.
//
//===----------------------------------------------------------------------===//
#include "ImportContext.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "llvm/ADT/Sequence.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Fails with a diagnostic unless every dimension of `t` is known: the
/// decompositions reshape by value.
LogicalResult requireStatic(ImportContext &ctx, RankedTensorType t,
                            StringRef what) {
  if (t.hasStaticShape())
    return success();
  return ctx.error() << what << " needs a static shape, got " << t
                     << " (bind dimensions with --dim NAME=SIZE)";
}

/// x[..., from:to:step] on the last dimension.
Value sliceLast(OpChain &c, Value x, int64_t from, int64_t to,
                int64_t step = 1) {
  RankedTensorType t = typeOf(x);
  int64_t rank = t.getRank();
  SmallVector<int64_t> starts(rank, 0), ends(t.getShape()), steps(rank, 1);
  starts.back() = from;
  ends.back() = to;
  steps.back() = step;
  return c.slice(x, starts, ends, steps);
}

Value concat(OpChain &c, ValueRange parts, int64_t axis) {
  return c.make<nn::ConcatOp>(parts, c.ctx.b.getI64IntegerAttr(axis));
}

Value transpose(OpChain &c, Value x, ArrayRef<int64_t> perm) {
  return c.make<nn::TransposeOp>(x, c.ctx.b.getDenseI64ArrayAttr(perm));
}

} // namespace

/// RMSNormalization: X / sqrt(mean(X^2 over axis..) + epsilon) * scale,
/// computed in f32 (stash_type 1) and cast back before the scale.
LogicalResult distopt::onnximport::rmsNormOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.floatValue(0), scale = ctx.value(1);
  if (failed(x) || failed(scale))
    return failure();
  RankedTensorType t = typeOf(*x);
  FailureOr<int64_t> axis = ctx.normalizationAxis(t.getRank());
  if (failed(axis))
    return failure();
  OpChain c(ctx);
  Type f32 = ctx.b.getF32Type();
  Value xs = *x;
  if (t.getElementType() != f32)
    xs = c.typed<nn::CastOp>(t.clone(f32), xs);
  auto axes = ctx.b.getDenseI64ArrayAttr(
      llvm::to_vector(llvm::seq<int64_t>(*axis, t.getRank())));
  Value meanSquare = c.make<nn::ReduceMeanOp>(c.make<nn::MulOp>(xs, xs), axes,
                                              ctx.b.getUnitAttr());
  Value rms = c.make<nn::SqrtOp>(c.make<nn::AddOp>(
      meanSquare, c.scalarLike(ctx.attrFloat("epsilon", 1e-5), meanSquare)));
  Value normalized = c.make<nn::DivOp>(xs, rms);
  if (t.getElementType() != f32)
    normalized = c.typed<nn::CastOp>(t, normalized);
  return c.output(0, c.make<nn::MulOp>(normalized, *scale));
}

/// RotaryEmbedding: rotates the first rotary_embedding_dim channels of each
/// head by the position's angles, as halves (GPT-NeoX) or interleaved pairs
/// (GPT-J). Input [B, H, S, D] or [B, S, H*D] (num_heads given); caches
/// [max_position, rot/2] read at position_ids, or [B, S, rot/2] without.
LogicalResult distopt::onnximport::rotaryEmbeddingOp(ImportContext &ctx) {
  FailureOr<Value> x = ctx.value(0), cosCache = ctx.value(1),
                   sinCache = ctx.value(2), positions = ctx.optionalValue(3);
  if (failed(x) || failed(cosCache) || failed(sinCache) || failed(positions))
    return failure();
  RankedTensorType t = typeOf(*x);
  if (failed(requireStatic(ctx, t, "the input")))
    return failure();
  if (t.getRank() != 3 && t.getRank() != 4)
    return ctx.error() << "needs a 3-D [batch, seq, hidden] or 4-D [batch, "
                          "heads, seq, head_size] input, got "
                       << t;
  int64_t batch = t.getDimSize(0);
  int64_t heads, seq, headSize;
  if (t.getRank() == 4) {
    heads = t.getDimSize(1);
    seq = t.getDimSize(2);
    headSize = t.getDimSize(3);
  } else {
    heads = ctx.attrInt("num_heads", 0);
    seq = t.getDimSize(1);
    if (heads <= 0 || t.getDimSize(2) % heads)
      return ctx.error() << "a 3-D input needs num_heads dividing its hidden "
                            "size "
                         << t.getDimSize(2) << ", got num_heads " << heads;
    headSize = t.getDimSize(2) / heads;
  }
  int64_t rot = ctx.attrInt("rotary_embedding_dim", 0);
  if (rot == 0)
    rot = headSize;
  if (rot < 2 || rot > headSize || rot % 2)
    return ctx.error() << "rotary_embedding_dim " << rot
                       << " must be even and at most the head size "
                       << headSize;
  bool interleaved = ctx.attrInt("interleaved", 0) != 0;

  OpChain c(ctx);
  // [batch, seq, heads, head_size], the layout the rotation works in.
  Value bshd = t.getRank() == 4 ? transpose(c, *x, {0, 2, 1, 3})
                                : c.reshape(*x, {batch, seq, heads, headSize});
  // cos and sin as [batch, seq, 1, rot/2].
  auto angles = [&](Value cache) -> Value {
    Value v = cache;
    if (*positions)
      v = c.make<nn::GatherOp>(cache, *positions, ctx.b.getI64IntegerAttr(0));
    if (c.failed())
      return {};
    RankedTensorType vt = typeOf(v);
    if (vt.getRank() != 3 || vt.getDimSize(0) != batch ||
        vt.getDimSize(1) != seq || vt.getDimSize(2) != rot / 2) {
      ctx.error() << "the cos/sin caches" << (*positions ? " at position_ids" : "")
                  << " must be [" << batch << ", " << seq << ", " << rot / 2
                  << "], got " << vt;
      return {};
    }
    return c.reshape(v, {batch, seq, 1, rot / 2});
  };
  Value cos = angles(*cosCache);
  if (!cos)
    return failure();
  Value sin = angles(*sinCache);
  if (!sin)
    return failure();
  Value rotated = rot == headSize ? bshd : sliceLast(c, bshd, 0, rot);
  Value x1 = interleaved ? sliceLast(c, rotated, 0, rot, 2)
                         : sliceLast(c, rotated, 0, rot / 2);
  Value x2 = interleaved ? sliceLast(c, rotated, 1, rot, 2)
                         : sliceLast(c, rotated, rot / 2, rot);
  Value real = c.make<nn::SubOp>(c.make<nn::MulOp>(cos, x1),
                                 c.make<nn::MulOp>(sin, x2));
  Value imag = c.make<nn::AddOp>(c.make<nn::MulOp>(sin, x1),
                                 c.make<nn::MulOp>(cos, x2));
  Value out;
  if (interleaved) {
    // Pairs back in place: [.., rot/2, 2] flattened.
    SmallVector<int64_t> pairShape{batch, seq, heads, rot / 2, 1};
    Value pairs = concat(c, {c.reshape(real, pairShape), c.reshape(imag, pairShape)},
                         4);
    out = c.reshape(pairs, {batch, seq, heads, rot});
  } else {
    out = concat(c, {real, imag}, 3);
  }
  if (rot < headSize)
    out = concat(c, {out, sliceLast(c, bshd, rot, headSize)}, 3);
  out = t.getRank() == 4 ? transpose(c, out, {0, 2, 1, 3})
                         : c.reshape(out, t.getShape());
  return c.output(0, out);
}

/// Attention (opset 23): softmax(Q K^T * scale [softcapped] + bias) V with
/// grouped-query heads, a causal and/or given mask, and a key/value cache
/// (past_key/past_value in, present_key/present_value out). Q, K, V are
/// [B, heads, S, D], or [B, S, heads * D] with q_num_heads/kv_num_heads.
LogicalResult distopt::onnximport::attentionOp(ImportContext &ctx) {
  if (ctx.wantsOutput(3))
    return ctx.error() << "the qk_matmul_output output is not supported";
  FailureOr<Value> q = ctx.value(0), k = ctx.value(1), v = ctx.value(2),
                   mask = ctx.optionalValue(3), pastKey = ctx.optionalValue(4),
                   pastValue = ctx.optionalValue(5);
  if (failed(q) || failed(k) || failed(v) || failed(mask) ||
      failed(pastKey) || failed(pastValue))
    return failure();
  if (!*pastKey != !*pastValue)
    return ctx.error() << "past_key and past_value come together";
  RankedTensorType qt = typeOf(*q), kt = typeOf(*k), vt = typeOf(*v);
  for (auto [tt, what] : {std::pair{qt, "Q"}, {kt, "K"}, {vt, "V"}})
    if (failed(requireStatic(ctx, tt, what)))
      return failure();
  int64_t rank = qt.getRank();
  if ((rank != 3 && rank != 4) || kt.getRank() != rank ||
      vt.getRank() != rank)
    return ctx.error() << "needs Q, K and V all 3-D or all 4-D, got " << qt
                       << ", " << kt << ", " << vt;
  if (!isa<FloatType>(qt.getElementType()))
    return ctx.error() << "needs floating-point Q, K and V, got " << qt;
  OpChain c(ctx);
  int64_t batch = qt.getDimSize(0);
  // To [batch, heads, seq, head_size].
  auto heads4 = [&](Value x, RankedTensorType xt, const char *attr) -> Value {
    if (rank == 4)
      return x;
    int64_t n = ctx.attrInt(attr, 0);
    if (n <= 0 || xt.getDimSize(2) % n) {
      ctx.error() << "3-D inputs need " << attr << " dividing the hidden size "
                  << xt.getDimSize(2) << ", got " << n;
      return {};
    }
    Value split = c.reshape(x, {batch, xt.getDimSize(1), n, xt.getDimSize(2) / n});
    return transpose(c, split, {0, 2, 1, 3});
  };
  Value Q = heads4(*q, qt, "q_num_heads");
  if (!Q)
    return failure();
  Value K = heads4(*k, kt, "kv_num_heads");
  if (!K)
    return failure();
  Value V = heads4(*v, vt, "kv_num_heads");
  if (!V || c.failed())
    return failure();
  int64_t qHeads = typeOf(Q).getDimSize(1), kvHeads = typeOf(K).getDimSize(1);
  int64_t qLen = typeOf(Q).getDimSize(2), headSize = typeOf(Q).getDimSize(3);
  if (typeOf(K).getDimSize(3) != headSize || typeOf(V).getDimSize(1) != kvHeads ||
      typeOf(V).getDimSize(2) != typeOf(K).getDimSize(2))
    return ctx.error() << "K must have Q's head size and V K's heads and "
                          "length, got Q "
                       << typeOf(Q) << ", K " << typeOf(K) << ", V "
                       << typeOf(V);
  if (qHeads % kvHeads)
    return ctx.error() << "q heads (" << qHeads
                       << ") must be a multiple of the key/value heads ("
                       << kvHeads << ")";
  int64_t pastLen = 0;
  if (*pastKey) {
    pastLen = typeOf(*pastKey).getDimSize(2);
    K = concat(c, {*pastKey, K}, 2);
    V = concat(c, {*pastValue, V}, 2);
    if (c.failed())
      return failure();
  }
  // The cache outputs are the concatenated keys and values.
  if (ctx.wantsOutput(1) && failed(c.output(1, K)))
    return failure();
  if (ctx.wantsOutput(2) && failed(c.output(2, V)))
    return failure();
  int64_t kvLen = typeOf(K).getDimSize(2);
  // Grouped-query attention: each key/value head serves qHeads / kvHeads
  // consecutive query heads (h0 h0 h1 h1 ...).
  if (qHeads != kvHeads) {
    int64_t rep = qHeads / kvHeads;
    auto repeat = [&](Value x) {
      RankedTensorType xt = typeOf(x);
      SmallVector<int64_t> one{batch, kvHeads, 1, kvLen, xt.getDimSize(3)};
      SmallVector<int64_t> many{batch, kvHeads, rep, kvLen, xt.getDimSize(3)};
      Value grouped = c.reshape(x, one);
      if (c.failed())
        return Value();
      Value wide = c.typed<nn::ExpandOp>(xt.clone(many), grouped);
      return c.reshape(wide, {batch, qHeads, kvLen, xt.getDimSize(3)});
    };
    K = repeat(K);
    V = repeat(V);
  }
  double scale = ctx.hasAttr("scale") ? ctx.attrFloat("scale", 1.0)
                                      : 1.0 / std::sqrt(double(headSize));
  Value scores = c.make<nn::MatMulOp>(c.make<nn::MulOp>(Q, c.scalarLike(scale, Q)),
                                      transpose(c, K, {0, 1, 3, 2}));
  if (c.failed())
    return failure();
  double softcap = ctx.attrFloat("softcap", 0.0);
  if (softcap > 0) {
    Value capped = c.make<nn::TanhOp>(
        c.make<nn::DivOp>(scores, c.scalarLike(softcap, scores)));
    scores = c.make<nn::MulOp>(capped, c.scalarLike(softcap, scores));
  }
  Type et = qt.getElementType();
  const double inf = std::numeric_limits<double>::infinity();
  if (*mask) {
    RankedTensorType mt = typeOf(*mask);
    if (mt.getRank() < 2 || mt.getDimSize(mt.getRank() - 1) != kvLen)
      return ctx.error() << "attn_mask must cover all " << kvLen
                         << " keys in its last dimension, got " << mt;
    Value bias = *mask;
    if (mt.getElementType().isInteger(1))
      // true: attend (add 0); false: masked out (add -inf).
      bias = c.make<nn::WhereOp>(*mask, ctx.scalar(0.0, et), ctx.scalar(-inf, et));
    scores = c.make<nn::AddOp>(scores, bias);
  }
  if (ctx.attrInt("is_causal", 0)) {
    // Query i (after pastLen cached keys) sees keys j <= pastLen + i.
    Known causal;
    causal.shape = {qLen, kvLen};
    causal.isFloat = true;
    causal.floats.resize(qLen * kvLen);
    for (int64_t i = 0; i < qLen; ++i)
      for (int64_t j = 0; j < kvLen; ++j)
        causal.floats[i * kvLen + j] = j <= pastLen + i ? 0.0 : -inf;
    scores = c.make<nn::AddOp>(scores, ctx.materialize(causal, et));
  }
  Value probs = c.make<nn::SoftmaxOp>(scores, ctx.b.getI64IntegerAttr(3));
  Value y = c.make<nn::MatMulOp>(probs, V);
  if (rank == 3) {
    int64_t vHead = typeOf(V).getDimSize(3);
    y = c.reshape(transpose(c, y, {0, 2, 1, 3}), {batch, qLen, qHeads * vHead});
  }
  return c.output(0, y);
}
