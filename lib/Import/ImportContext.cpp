//===- ImportContext.cpp - what an ONNX op handler works with ---*- C++ -*-===//
#include "ImportContext.h"

#include "nn/IR/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

int64_t Known::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Known Known::ofInts(std::vector<int64_t> shape, std::vector<int64_t> values) {
  Known k;
  k.shape = std::move(shape);
  k.ints = std::move(values);
  return k;
}

Known Known::ofFloats(std::vector<int64_t> shape, std::vector<double> values) {
  Known k;
  k.shape = std::move(shape);
  k.isFloat = true;
  k.floats = std::move(values);
  return k;
}

Type distopt::onnximport::elementTypeOf(MLIRContext *ctx, int t) {
  Builder b(ctx);
  switch (t) {
  case onnx::TensorProto::FLOAT: return b.getF32Type();
  case onnx::TensorProto::FLOAT16: return b.getF16Type();
  case onnx::TensorProto::BFLOAT16: return b.getBF16Type();
  case onnx::TensorProto::DOUBLE: return b.getF64Type();
  case onnx::TensorProto::INT64: return b.getI64Type();
  case onnx::TensorProto::INT32: return b.getI32Type();
  case onnx::TensorProto::INT16: return b.getI16Type();
  case onnx::TensorProto::INT8: return b.getI8Type();
  case onnx::TensorProto::UINT8: return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case onnx::TensorProto::BOOL: return b.getI1Type();
  default: return {};
  }
}

std::optional<std::vector<int64_t>>
distopt::onnximport::broadcast(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

InFlightDiagnostic ImportContext::error() {
  InFlightDiagnostic d = emitError(loc);
  d << "node '" << node.name() << "' (" << node.op_type() << ", opset "
    << opset << "): ";
  return d;
}

FailureOr<Tensor *> ImportContext::input(unsigned i) {
  if (!hasInput(i))
    return error() << "input " << i << " is missing";
  auto it = values.find(node.input(i));
  if (it == values.end())
    return error() << "input " << i << " '" << node.input(i)
                   << "' is not produced by any earlier node, input or "
                      "initializer";
  return &it->second;
}

const Known *ImportContext::known(unsigned i) {
  if (!hasInput(i))
    return nullptr;
  auto it = values.find(node.input(i));
  if (it == values.end() || !it->second.known)
    return nullptr;
  return &*it->second.known;
}

FailureOr<std::vector<int64_t>> ImportContext::knownInts(unsigned i,
                                                         StringRef what) {
  FailureOr<Tensor *> t = input(i);
  if (failed(t))
    return failure();
  if (!(*t)->known)
    return error() << what << " (input " << i << " '" << node.input(i)
                   << "') must be known when importing: it is computed from "
                      "values only known at run time";
  std::vector<int64_t> out;
  for (int64_t k = 0, e = (*t)->known->numElements(); k < e; ++k)
    out.push_back((*t)->known->intAt(k));
  return out;
}

RankedTensorType ImportContext::type(unsigned i) {
  auto it = values.find(node.input(i));
  return it == values.end() ? RankedTensorType() : it->second.type;
}

Value ImportContext::materialize(const Known &k, Type et) {
  auto type = RankedTensorType::get(k.shape, et);
  SmallVector<Attribute> elements;
  for (int64_t i = 0, e = k.numElements(); i < e; ++i) {
    if (isa<FloatType>(et))
      elements.push_back(FloatAttr::get(et, k.at(i)));
    else if (et.isInteger(1))
      elements.push_back(b.getBoolAttr(k.intAt(i) != 0));
    else
      elements.push_back(IntegerAttr::get(et, k.intAt(i)));
  }
  return nn::ConstantOp::create(b, loc, type,
                                DenseElementsAttr::get(type, elements));
}

Value ImportContext::scalar(double v, Type et) {
  Known k = isa<FloatType>(et) ? Known::ofFloats({}, {v})
                               : Known::ofInts({}, {static_cast<int64_t>(v)});
  return materialize(k, et);
}

FailureOr<Value> ImportContext::value(unsigned i) {
  FailureOr<Tensor *> t = input(i);
  if (failed(t))
    return failure();
  if (!(*t)->value)
    (*t)->value = materialize(*(*t)->known, (*t)->type.getElementType());
  return (*t)->value;
}

const onnx::AttributeProto *ImportContext::attr(StringRef name) const {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

bool ImportContext::hasAttr(StringRef name) const { return attr(name); }

int64_t ImportContext::attrInt(StringRef name, int64_t dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->i() : dflt;
}

double ImportContext::attrFloat(StringRef name, double dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->f() : dflt;
}

std::string ImportContext::attrString(StringRef name, StringRef dflt) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->s() : dflt.str();
}

std::vector<int64_t> ImportContext::attrInts(StringRef name) const {
  const onnx::AttributeProto *a = attr(name);
  if (!a)
    return {};
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

void ImportContext::setOutput(unsigned i, Value v) {
  if (i >= static_cast<unsigned>(node.output_size()) || node.output(i).empty())
    return;
  Tensor t;
  t.value = v;
  t.type = cast<RankedTensorType>(v.getType());
  values[node.output(i)] = t;
}

void ImportContext::setKnownOutput(unsigned i, Known k, Type et) {
  if (i >= static_cast<unsigned>(node.output_size()) || node.output(i).empty())
    return;
  Tensor t;
  t.type = RankedTensorType::get(k.shape, et);
  t.known = std::move(k);
  values[node.output(i)] = t;
}

FailureOr<int64_t> ImportContext::axis(int64_t a, int64_t rank,
                                       StringRef what) {
  int64_t n = a < 0 ? a + rank : a;
  if (n < 0 || n >= rank)
    return error() << what << " " << a << " is out of range for rank " << rank;
  return n;
}
