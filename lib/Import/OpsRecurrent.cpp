//===- OpsRecurrent.cpp - ONNX RNN, GRU and LSTM, unrolled ------*- C++ -*-===//
//
// A recurrent op over a sequence of static length becomes its time steps
// written out one after the other: per direction, the input projections of
// every step are one matmul up front, then each step is a small block of
// matmul, add, activation and gate arithmetic reading the previous step's
// hidden (and cell) state. The IR grows with the sequence length, but every
// op is an existing nn op with its gradient and sharding rule (the batch
// splits), and each step reads as the ONNX equations.
//
//===----------------------------------------------------------------------===//
#include "ImportContext.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

namespace {

enum class Cell { RNN, GRU, LSTM };

/// An activation by its ONNX name (those without alpha/beta parameters).
enum class Act { Tanh, Sigmoid, Relu, Unknown };

Act actOf(StringRef name) {
  return llvm::StringSwitch<Act>(name)
      .Case("Tanh", Act::Tanh)
      .Case("Sigmoid", Act::Sigmoid)
      .Case("Relu", Act::Relu)
      .Default(Act::Unknown);
}

Value apply(OpChain &c, Act act, Value x) {
  switch (act) {
  case Act::Tanh:
    return c.make<nn::TanhOp>(x);
  case Act::Sigmoid:
    return c.make<nn::SigmoidOp>(x);
  default:
    return c.make<nn::ReluOp>(x);
  }
}

/// The pieces of one direction: per gate, the input projection of every
/// step [seq, batch, H] (with both biases, except GRU's hidden gate keeps
/// its recurrence bias apart) and the transposed recurrence weight [H, H].
struct Direction {
  SmallVector<Value> projected, recurrenceT, recurrenceBias;
  SmallVector<Value> peephole; // LSTM: i, o, f as [1, H], or empty
  Value h, c;                  // the state, [batch, H]
};

} // namespace

/// RNN, GRU and LSTM with a static sequence length, unrolled (see above).
LogicalResult distopt::onnximport::recurrentOp(ImportContext &ctx) {
  StringRef type = ctx.node.op_type();
  Cell cell = type == "RNN" ? Cell::RNN : type == "GRU" ? Cell::GRU : Cell::LSTM;
  int64_t gates = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 3 : 4;
  FailureOr<Value> xIn = ctx.value(0), w = ctx.value(1), r = ctx.value(2);
  if (failed(xIn) || failed(w) || failed(r))
    return failure();
  auto tx = cast<RankedTensorType>(xIn->getType());
  Type et = tx.getElementType();
  int64_t hidden = ctx.attrInt("hidden_size", 0);
  int64_t layout = ctx.attrInt("layout", 0);
  std::string direction = ctx.attrString("direction", "forward");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return ctx.error() << "direction '" << direction
                       << "' is not one of forward, reverse, bidirectional";
  if (layout != 0 && layout != 1)
    return ctx.error() << "layout must be 0 or 1, got " << layout;
  if (tx.getRank() != 3 || !tx.hasStaticShape() || !isa<FloatType>(et))
    return ctx.error() << "needs a static floating-point input of rank 3, "
                          "got "
                       << tx;
  int64_t seq = tx.getDimSize(layout == 0 ? 0 : 1),
          batch = tx.getDimSize(layout == 0 ? 1 : 0), in = tx.getDimSize(2);
  if (hidden < 1)
    return ctx.error() << "hidden_size must be positive, got " << hidden;
  auto expect = [&](Value v, ArrayRef<int64_t> shape,
                    StringRef what) -> LogicalResult {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getShape() != shape || t.getElementType() != et) {
      std::string s;
      llvm::raw_string_ostream os(s);
      llvm::interleave(shape, os, "x");
      return ctx.error() << what << " must be " << s << " of the input's "
                         << "element type, got " << t;
    }
    return success();
  };
  if (failed(expect(*w, {dirs, gates * hidden, in}, "W")) ||
      failed(expect(*r, {dirs, gates * hidden, hidden}, "R")))
    return failure();
  if (ctx.hasAttr("activation_alpha") || ctx.hasAttr("activation_beta"))
    return ctx.error() << "activations with parameters (activation_alpha, "
                          "activation_beta) are not supported";
  // Activations per direction: f for the gates, g (and h) for the values.
  std::vector<std::string> names;
  for (const std::string &s : ctx.attr("activations")
                                  ? std::vector<std::string>(
                                        ctx.attr("activations")->strings().begin(),
                                        ctx.attr("activations")->strings().end())
                                  : std::vector<std::string>{})
    names.push_back(s);
  int64_t perDir = cell == Cell::RNN ? 1 : cell == Cell::GRU ? 2 : 3;
  if (names.empty()) {
    for (int64_t d = 0; d < dirs; ++d) {
      if (cell == Cell::RNN)
        names.push_back("Tanh");
      else
        names.insert(names.end(), {"Sigmoid", "Tanh"});
      if (cell == Cell::LSTM)
        names.push_back("Tanh");
    }
  }
  if (static_cast<int64_t>(names.size()) != perDir * dirs)
    return ctx.error() << "activations has " << names.size()
                       << " names, expected " << perDir * dirs;
  SmallVector<Act> acts;
  for (const std::string &n : names) {
    acts.push_back(actOf(n));
    if (acts.back() == Act::Unknown)
      return ctx.error() << "activation '" << n
                         << "' is not supported (Tanh, Sigmoid, Relu)";
  }
  if (ctx.attrInt("input_forget", 0) != 0)
    return ctx.error() << "input_forget is not supported";
  bool linearBeforeReset = ctx.attrInt("linear_before_reset", 0) != 0;
  std::optional<double> clip;
  if (ctx.hasAttr("clip"))
    clip = ctx.attrFloat("clip", 0);
  // Sequence lengths shorter than the input would need masking.
  if (ctx.hasInput(4)) {
    FailureOr<std::vector<int64_t>> lens = ctx.knownInts(4, "sequence_lens");
    if (failed(lens))
      return failure();
    for (int64_t l : *lens)
      if (l != seq)
        return ctx.error() << "sequence_lens " << l << " differs from the "
                           << "sequence length " << seq
                           << " (masking is not supported)";
  }
  FailureOr<Value> b = ctx.optionalValue(3), h0 = ctx.optionalValue(5),
                   c0 = cell == Cell::LSTM ? ctx.optionalValue(6)
                                           : FailureOr<Value>(Value()),
                   p = cell == Cell::LSTM ? ctx.optionalValue(7)
                                          : FailureOr<Value>(Value());
  if (failed(b) || failed(h0) || failed(c0) || failed(p))
    return failure();
  SmallVector<int64_t> stateShape =
      layout == 0 ? SmallVector<int64_t>{dirs, batch, hidden}
                  : SmallVector<int64_t>{batch, dirs, hidden};
  if ((*b && failed(expect(*b, {dirs, 2 * gates * hidden}, "B"))) ||
      (*h0 && failed(expect(*h0, stateShape, "initial_h"))) ||
      (*c0 && failed(expect(*c0, stateShape, "initial_c"))) ||
      (*p && failed(expect(*p, {dirs, 3 * hidden}, "P"))))
    return failure();

  OpChain c(ctx);
  auto perm = [&](ArrayRef<int64_t> p) { return ctx.b.getDenseI64ArrayAttr(p); };
  // Time major: X [seq, batch, in], states [dirs, batch, H].
  Value x = layout == 0 ? *xIn : c.make<nn::TransposeOp>(*xIn, perm({1, 0, 2}));
  auto stateOf = [&](Value v) {
    return layout == 0 || !v ? v : c.make<nn::TransposeOp>(v, perm({1, 0, 2}));
  };
  Value initH = stateOf(*h0), initC = stateOf(*c0);
  Value xFlat = c.reshape(x, {seq * batch, in});
  auto row = [&](Value v, int64_t d, int64_t from, int64_t n, int64_t cols) {
    // v[d, from:from+n, :] as [n, cols] (or a bias slice as [n]).
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getRank() == 2)
      return c.reshape(c.slice(v, {d, from}, {d + 1, from + n}, {1, 1}), {n});
    return c.reshape(c.slice(v, {d, from, 0}, {d + 1, from + n, cols}, {1, 1, 1}),
                     {n, cols});
  };
  auto gateAct = [&](Value v, Act act) {
    if (clip)
      v = c.make<nn::ClipOp>(v, ctx.b.getF64FloatAttr(-*clip),
                             ctx.b.getF64FloatAttr(*clip));
    return apply(c, act, v);
  };
  auto zeros = [&]() {
    return c.typed<nn::ExpandOp>(RankedTensorType::get({batch, hidden}, et),
                                 ctx.scalar(0.0, et));
  };
  // ONNX's gate order in W, R and B.
  enum { I = 0, O = 1, F = 2, C = 3 };        // LSTM: i, o, f, c
  enum { Z = 0, R = 1, Hg = 2 };              // GRU: z, r, h

  SmallVector<Value> ys(dirs), hs(dirs), cs(dirs);
  for (int64_t d = 0; d < dirs; ++d) {
    bool backward = direction == "reverse" || d == 1;
    Act f = acts[d * perDir], g = perDir > 1 ? acts[d * perDir + 1] : f,
        hAct = perDir > 2 ? acts[d * perDir + 2] : g;
    Direction dir;
    for (int64_t k = 0; k < gates; ++k) {
      Value wk = row(*w, d, k * hidden, hidden, in);
      Value proj = c.make<nn::MatMulOp>(
          xFlat, c.make<nn::TransposeOp>(wk, perm({1, 0})));
      Value rb = *b ? row(*b, d, (gates + k) * hidden, hidden, 0) : Value();
      if (*b) {
        proj = c.make<nn::AddOp>(proj, row(*b, d, k * hidden, hidden, 0));
        // GRU's hidden gate applies its recurrence bias inside the reset.
        if (!(cell == Cell::GRU && k == Hg))
          proj = c.make<nn::AddOp>(proj, rb);
      }
      dir.projected.push_back(c.reshape(proj, {seq, batch, hidden}));
      dir.recurrenceT.push_back(c.make<nn::TransposeOp>(
          row(*r, d, k * hidden, hidden, hidden), perm({1, 0})));
      dir.recurrenceBias.push_back(rb);
    }
    if (*p)
      for (int64_t k = 0; k < 3; ++k)
        dir.peephole.push_back(
            c.reshape(row(*p, d, k * hidden, hidden, 0), {1, hidden}));
    dir.h = initH ? c.reshape(c.slice(initH, {d, 0, 0}, {d + 1, batch, hidden},
                                      {1, 1, 1}),
                              {batch, hidden})
                  : zeros();
    if (cell == Cell::LSTM)
      dir.c = initC ? c.reshape(c.slice(initC, {d, 0, 0},
                                        {d + 1, batch, hidden}, {1, 1, 1}),
                                {batch, hidden})
                    : zeros();
    SmallVector<Value> outs(seq);
    for (int64_t step = 0; step < seq; ++step) {
      int64_t t = backward ? seq - 1 - step : step;
      auto input = [&](int64_t k) {
        return c.reshape(c.slice(dir.projected[k], {t, 0, 0},
                                 {t + 1, batch, hidden}, {1, 1, 1}),
                         {batch, hidden});
      };
      auto recur = [&](int64_t k, Value h) {
        return c.make<nn::MatMulOp>(h, dir.recurrenceT[k]);
      };
      if (cell == Cell::RNN) {
        dir.h = gateAct(c.make<nn::AddOp>(input(0), recur(0, dir.h)), f);
      } else if (cell == Cell::GRU) {
        Value z = gateAct(c.make<nn::AddOp>(input(Z), recur(Z, dir.h)), f);
        Value rg = gateAct(c.make<nn::AddOp>(input(R), recur(R, dir.h)), f);
        Value rb = dir.recurrenceBias[Hg];
        Value hr;
        if (linearBeforeReset) {
          Value lin = recur(Hg, dir.h);
          if (rb)
            lin = c.make<nn::AddOp>(lin, rb);
          hr = c.make<nn::MulOp>(rg, lin);
        } else {
          hr = recur(Hg, c.make<nn::MulOp>(rg, dir.h));
          if (rb)
            hr = c.make<nn::AddOp>(hr, rb);
        }
        Value hCand = gateAct(c.make<nn::AddOp>(input(Hg), hr), g);
        // H = (1 - z) * h~ + z * H = h~ + z * (H - h~).
        dir.h = c.make<nn::AddOp>(
            hCand, c.make<nn::MulOp>(z, c.make<nn::SubOp>(dir.h, hCand)));
      } else {
        auto peep = [&](Value pre, int64_t k, Value state) {
          return dir.peephole.empty()
                     ? pre
                     : c.make<nn::AddOp>(
                           pre, c.make<nn::MulOp>(dir.peephole[k], state));
        };
        // P holds i, o, f.
        Value ig = gateAct(
            peep(c.make<nn::AddOp>(input(I), recur(I, dir.h)), 0, dir.c), f);
        Value fg = gateAct(
            peep(c.make<nn::AddOp>(input(F), recur(F, dir.h)), 2, dir.c), f);
        Value cand = gateAct(c.make<nn::AddOp>(input(C), recur(C, dir.h)), g);
        dir.c = c.make<nn::AddOp>(c.make<nn::MulOp>(fg, dir.c),
                                  c.make<nn::MulOp>(ig, cand));
        Value og = gateAct(
            peep(c.make<nn::AddOp>(input(O), recur(O, dir.h)), 1, dir.c), f);
        dir.h = c.make<nn::MulOp>(og, apply(c, hAct, dir.c));
      }
      outs[t] = c.reshape(dir.h, {1, 1, batch, hidden});
    }
    ys[d] = seq == 1 ? outs[0]
                     : c.make<nn::ConcatOp>(outs, ctx.b.getI64IntegerAttr(0));
    hs[d] = c.reshape(dir.h, {1, batch, hidden});
    if (cell == Cell::LSTM)
      cs[d] = c.reshape(dir.c, {1, batch, hidden});
  }
  auto join = [&](ArrayRef<Value> parts, int64_t axis) {
    return parts.size() == 1
               ? parts[0]
               : c.make<nn::ConcatOp>(parts, ctx.b.getI64IntegerAttr(axis));
  };
  // Y [seq, dirs, batch, H]; layout 1: [batch, seq, dirs, H].
  Value y = join(ys, 1);
  if (layout == 1)
    y = c.make<nn::TransposeOp>(y, perm({2, 0, 1, 3}));
  Value yh = stateOf(join(hs, 0));
  Value yc = cell == Cell::LSTM ? stateOf(join(cs, 0)) : Value();
  if (c.failed())
    return failure();
  if (ctx.wantsOutput(0))
    ctx.setOutput(0, y);
  if (ctx.wantsOutput(1))
    ctx.setOutput(1, yh);
  if (ctx.wantsOutput(2))
    ctx.setOutput(2, yc);
  return success();
}
