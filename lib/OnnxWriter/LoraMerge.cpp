//===- LoraMerge.cpp - fold LoRA adapters into their base weights ---------===//
#include "distopt/OnnxWriter/LoraMerge.h"

#include "onnx/onnx_pb.h"

#include <cstring>
#include <set>
#include <unordered_map>

using namespace distopt;
using llvm::Expected;

static llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(message.str());
}

namespace {

/// The graph's nodes by the values they produce.
class Producers {
public:
  explicit Producers(const onnx::GraphProto &g) {
    for (const onnx::NodeProto &n : g.node())
      for (const std::string &o : n.output())
        byOutput[o] = &n;
  }
  const onnx::NodeProto *of(const std::string &value, const char *op) const {
    auto it = byOutput.find(value);
    return it != byOutput.end() && it->second->op_type() == op ? it->second
                                                               : nullptr;
  }

private:
  std::unordered_map<std::string, const onnx::NodeProto *> byOutput;
};

/// A MatMul by the transpose of an initializer: its node, the transpose and
/// the initializer's name.
struct LinearOf {
  const onnx::NodeProto *matmul = nullptr, *transpose = nullptr;
  std::string weight;
};

std::optional<LinearOf> linear(const Producers &p, const std::string &value,
                               const std::set<std::string> &initializers) {
  LinearOf l;
  l.matmul = p.of(value, "MatMul");
  if (!l.matmul || l.matmul->input_size() != 2)
    return std::nullopt;
  l.transpose = p.of(l.matmul->input(1), "Transpose");
  if (!l.transpose || !initializers.count(l.transpose->input(0)))
    return std::nullopt;
  l.weight = l.transpose->input(0);
  return l;
}

/// A float scalar from a Constant node's `value` or an initializer.
std::optional<float> scalarOf(const onnx::GraphProto &g, const Producers &p,
                              const std::string &value) {
  const onnx::TensorProto *t = nullptr;
  if (const onnx::NodeProto *c = p.of(value, "Constant")) {
    for (const onnx::AttributeProto &a : c->attribute())
      if (a.name() == "value")
        t = &a.t();
  } else {
    for (const onnx::TensorProto &init : g.initializer())
      if (init.name() == value)
        t = &init;
  }
  if (!t || t->data_type() != onnx::TensorProto::FLOAT)
    return std::nullopt;
  int64_t n = 1;
  for (int64_t d : t->dims())
    n *= d;
  if (n != 1)
    return std::nullopt;
  if (t->float_data_size() == 1)
    return t->float_data(0);
  if (t->raw_data().size() == sizeof(float)) {
    float v;
    std::memcpy(&v, t->raw_data().data(), sizeof v);
    return v;
  }
  return std::nullopt;
}

} // namespace

Expected<int> distopt::mergeLoraAdapters(
    onnx::ModelProto &model,
    std::map<std::string, const distrt::Tensor *> &values,
    std::deque<distrt::Tensor> &storage) {
  onnx::GraphProto &g = *model.mutable_graph();
  std::set<std::string> initializers;
  std::map<std::string, const onnx::TensorProto *> initByName;
  for (const onnx::TensorProto &t : g.initializer()) {
    initializers.insert(t.name());
    initByName[t.name()] = &t;
  }
  // A weight as floats [rows, cols]: trained value, else the initializer.
  auto matrix = [&](const std::string &name, const std::string &layer,
                    std::vector<float> *out, int64_t *rows,
                    int64_t *cols) -> llvm::Error {
    const onnx::TensorProto &init = *initByName[name];
    if (init.data_type() != onnx::TensorProto::FLOAT || init.dims_size() != 2)
      return fail("--merge-lora: '" + name + "' of layer '" + layer +
                  "' is not a float matrix");
    *rows = init.dims(0);
    *cols = init.dims(1);
    out->resize(*rows * *cols);
    if (auto it = values.find(name); it != values.end()) {
      std::memcpy(out->data(), it->second->raw(), out->size() * sizeof(float));
    } else if (init.raw_data().size() == out->size() * sizeof(float)) {
      std::memcpy(out->data(), init.raw_data().data(), init.raw_data().size());
    } else if (init.float_data_size() == static_cast<int>(out->size())) {
      std::copy(init.float_data().begin(), init.float_data().end(),
                out->begin());
    } else {
      return fail("--merge-lora: cannot read '" + name + "' of layer '" +
                  layer + "' (its data is external to the model file)");
    }
    return llvm::Error::success();
  };

  Producers p(g);
  std::set<const onnx::NodeProto *> doomed;
  std::set<std::string> doomedInits;
  std::map<std::string, std::string> rename; // Add output -> base output
  int merged = 0;
  for (const onnx::NodeProto &add : g.node()) {
    if (add.op_type() != "Add" || add.input_size() != 2)
      continue;
    for (int side = 0; side < 2; ++side) {
      std::optional<LinearOf> base = linear(p, add.input(side), initializers);
      const onnx::NodeProto *mul = p.of(add.input(1 - side), "Mul");
      if (!base || !mul ||
          !llvm::StringRef(base->weight).ends_with("base_layer.weight"))
        continue;
      std::optional<LinearOf> b, a;
      std::optional<float> scale;
      for (int k = 0; k < 2 && !b; ++k) {
        b = linear(p, mul->input(k), initializers);
        scale = scalarOf(g, p, mul->input(1 - k));
      }
      if (b)
        a = linear(p, b->matmul->input(0), initializers);
      if (!a || !scale ||
          !llvm::StringRef(a->weight).ends_with("lora_A.weight") ||
          !llvm::StringRef(b->weight).ends_with("lora_B.weight") ||
          a->matmul->input(0) != base->matmul->input(0))
        continue;
      std::string layer = base->weight.substr(
          0, base->weight.size() - std::strlen(".base_layer.weight"));
      std::vector<float> w, wa, wb;
      int64_t out = 0, in = 0, ra = 0, ina = 0, outb = 0, rb = 0;
      if (llvm::Error e = matrix(base->weight, layer, &w, &out, &in))
        return std::move(e);
      if (llvm::Error e = matrix(a->weight, layer, &wa, &ra, &ina))
        return std::move(e);
      if (llvm::Error e = matrix(b->weight, layer, &wb, &outb, &rb))
        return std::move(e);
      if (ina != in || outb != out || rb != ra)
        return fail("--merge-lora: layer '" + layer + "': lora_B " +
                    std::to_string(outb) + "x" + std::to_string(rb) +
                    " times lora_A " + std::to_string(ra) + "x" +
                    std::to_string(ina) + " does not fit the base weight " +
                    std::to_string(out) + "x" + std::to_string(in));
      // W' = W + s * B @ A, accumulated in double.
      distrt::Tensor &merged_w = storage.emplace_back();
      distrt::Status st = distrt::Tensor::Allocate(distrt::DType::kF32,
                                                       {out, in}, &merged_w);
      if (!st.ok())
        return fail(st.ToString());
      float *dst = merged_w.data<float>();
      for (int64_t o = 0; o < out; ++o)
        for (int64_t i = 0; i < in; ++i) {
          double acc = 0;
          for (int64_t r = 0; r < ra; ++r)
            acc += double(wb[o * rb + r]) * double(wa[r * in + i]);
          dst[o * in + i] = w[o * in + i] + *scale * static_cast<float>(acc);
        }
      values[base->weight] = &merged_w;
      doomed.insert(
          {&add, mul, a->matmul, a->transpose, b->matmul, b->transpose});
      if (const onnx::NodeProto *c = p.of(mul->input(0), "Constant"))
        doomed.insert(c);
      if (const onnx::NodeProto *c = p.of(mul->input(1), "Constant"))
        doomed.insert(c);
      doomedInits.insert({a->weight, b->weight});
      rename[add.output(0)] = add.input(side);
      ++merged;
      break;
    }
  }
  if (!merged)
    return 0;
  // Readers of a merged layer's sum read the base MatMul instead.
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (const onnx::NodeProto &n : g.node()) {
    if (doomed.count(&n))
      continue;
    onnx::NodeProto copy = n;
    for (std::string &in : *copy.mutable_input())
      if (auto it = rename.find(in); it != rename.end())
        in = it->second;
    *kept.Add() = std::move(copy);
  }
  g.mutable_node()->Swap(&kept);
  for (onnx::ValueInfoProto &o : *g.mutable_output())
    if (auto it = rename.find(o.name()); it != rename.end())
      o.set_name(it->second);
  google::protobuf::RepeatedPtrField<onnx::TensorProto> inits;
  for (onnx::TensorProto &t : *g.mutable_initializer())
    if (!doomedInits.count(t.name()))
      *inits.Add() = std::move(t);
  g.mutable_initializer()->Swap(&inits);
  for (const std::string &name : doomedInits)
    values.erase(name);
  return merged;
}
