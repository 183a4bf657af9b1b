//===- ImportContext.cpp - what an ONNX op handler works with ---*- C++ -*-===//
#include "ImportContext.h"

#include "distopt/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace mlir;
using namespace distopt;
using namespace distopt::onnximport;

//===----------------------------------------------------------------------===//
// Known values
//===----------------------------------------------------------------------===//

int64_t Known::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t Known::intAt(int64_t i) const {
  if (!isFloat)
    return ints[i];
  double v = floats[i];
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return INT64_MAX;
  if (v <= -9.2233720368547758e18)
    return INT64_MIN;
  return static_cast<int64_t>(v);
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

//===----------------------------------------------------------------------===//
// Element types and tensor data
//===----------------------------------------------------------------------===//

std::string distopt::onnximport::dataTypeName(int t) {
  if (onnx::TensorProto::DataType_IsValid(t))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(t));
  return "type " + std::to_string(t);
}

int64_t distopt::onnximport::storageBytes(Type et) {
  // Every element type the importer makes is a row of the dtype table.
  if (std::optional<distrt::DType> dtype = dtypeOf(et))
    return static_cast<int64_t>(distrt::DTypeSize(*dtype));
  return (et.getIntOrFloatBitWidth() + 7) / 8;
}

int64_t distopt::onnximport::checkedNumElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    int64_t r;
    if (llvm::MulOverflow(n, d, r))
      return -1;
    n = r;
  }
  return n;
}

DenseElementsAttr distopt::onnximport::denseFromRaw(RankedTensorType type,
                                                    ArrayRef<char> bytes) {
  Type et = type.getElementType();
  int64_t n = type.getNumElements();
  if (n == 0)
    return DenseElementsAttr::get(type, ArrayRef<Attribute>());
  if (et.isInteger(1)) {
    bool first = bytes[0] != 0, splat = true;
    for (char c : bytes)
      splat &= (c != 0) == first;
    if (splat)
      return DenseElementsAttr::get(type, first);
    SmallVector<bool> bits;
    bits.reserve(n);
    for (char c : bytes)
      bits.push_back(c != 0);
    return DenseElementsAttr::get(type, bits);
  }
  int64_t width = storageBytes(et);
  bool splat = true;
  for (int64_t i = 1; i < n && splat; ++i)
    splat = std::memcmp(bytes.data(), bytes.data() + i * width, width) == 0;
  if (splat)
    return DenseElementsAttr::getFromRawBuffer(type, bytes.take_front(width));
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}

template <typename T> static T load(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::optional<Known> distopt::onnximport::knownFromRaw(RankedTensorType type,
                                                       ArrayRef<char> bytes) {
  Type et = type.getElementType();
  int64_t n = type.getNumElements();
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  if (static_cast<int64_t>(bytes.size()) != n * storageBytes(et))
    return std::nullopt;
  const char *p = bytes.data();
  if (auto it = dyn_cast<IntegerType>(et)) {
    std::vector<int64_t> v(n);
    for (int64_t i = 0; i < n; ++i) {
      switch (it.getWidth()) {
      case 1:
        v[i] = p[i] != 0;
        break;
      case 8:
        v[i] = it.isUnsigned() ? int64_t(load<uint8_t>(p + i))
                               : int64_t(load<int8_t>(p + i));
        break;
      case 16:
        v[i] = it.isUnsigned() ? int64_t(load<uint16_t>(p + 2 * i))
                               : int64_t(load<int16_t>(p + 2 * i));
        break;
      case 32:
        v[i] = it.isUnsigned() ? int64_t(load<uint32_t>(p + 4 * i))
                               : int64_t(load<int32_t>(p + 4 * i));
        break;
      case 64:
        v[i] = load<int64_t>(p + 8 * i);
        break;
      default:
        return std::nullopt;
      }
    }
    return Known::ofInts(shape, std::move(v));
  }
  if (auto ft = dyn_cast<FloatType>(et)) {
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) {
      if (et.isF32()) {
        v[i] = load<float>(p + 4 * i);
      } else if (et.isF64()) {
        v[i] = load<double>(p + 8 * i);
      } else if (et.isF16() || et.isBF16()) {
        APFloat f(ft.getFloatSemantics(), APInt(16, load<uint16_t>(p + 2 * i)));
        v[i] = f.convertToDouble();
      } else {
        return std::nullopt;
      }
    }
    return Known::ofFloats(shape, std::move(v));
  }
  return std::nullopt;
}

std::optional<Known>
distopt::onnximport::knownFromDense(DenseElementsAttr dense) {
  auto type = cast<RankedTensorType>(dense.getType());
  Type et = type.getElementType();
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  if (auto it = dyn_cast<IntegerType>(et)) {
    std::vector<int64_t> v;
    v.reserve(type.getNumElements());
    for (APInt i : dense.getValues<APInt>())
      v.push_back(it.getWidth() == 1 || it.isUnsigned()
                      ? static_cast<int64_t>(i.getZExtValue())
                      : i.getSExtValue());
    return Known::ofInts(shape, std::move(v));
  }
  if (isa<FloatType>(et)) {
    std::vector<double> v;
    v.reserve(type.getNumElements());
    for (APFloat f : dense.getValues<APFloat>())
      v.push_back(f.convertToDouble());
    return Known::ofFloats(shape, std::move(v));
  }
  return std::nullopt;
}

/// Appends `v` to `raw` in the storage format of `et`.
static void appendElement(std::vector<char> &raw, Type et, double f, int64_t i,
                          bool isFloat) {
  auto put = [&](auto v) {
    const char *p = reinterpret_cast<const char *>(&v);
    raw.insert(raw.end(), p, p + sizeof(v));
  };
  if (auto ft = dyn_cast<FloatType>(et)) {
    double d = isFloat ? f : double(i);
    if (et.isF32()) {
      put(static_cast<float>(d));
    } else if (et.isF64()) {
      put(d);
    } else {
      bool lost;
      APFloat a(d);
      a.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      put(static_cast<uint16_t>(a.bitcastToAPInt().getZExtValue()));
    }
    return;
  }
  int64_t v = isFloat ? static_cast<int64_t>(f) : i;
  switch (et.getIntOrFloatBitWidth()) {
  case 1:
    put(static_cast<char>(v != 0));
    break;
  case 8:
    put(static_cast<uint8_t>(v));
    break;
  case 16:
    put(static_cast<uint16_t>(v));
    break;
  case 32:
    put(static_cast<uint32_t>(v));
    break;
  default:
    put(v);
    break;
  }
}

DenseElementsAttr distopt::onnximport::denseFromTensorProto(
    const onnx::TensorProto &t, RankedTensorType type, std::string &error) {
  Type et = type.getElementType();
  int64_t n = type.getNumElements();
  int64_t width = storageBytes(et);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    error = "its data is external, which is not supported here";
    return {};
  }
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != n * width) {
      error = "it holds " + std::to_string(t.raw_data().size()) +
              " bytes of raw data but its shape and type need " +
              std::to_string(n * width);
      return {};
    }
    return denseFromRaw(
        type, ArrayRef<char>(t.raw_data().data(), t.raw_data().size()));
  }
  std::vector<char> raw;
  // The declared shape may be huge or wrong: reserve for the values the
  // tensor really holds (the count checks below refuse a mismatch).
  int64_t held =
      std::max({t.float_data_size(), t.double_data_size(), t.int64_data_size(),
                t.int32_data_size(), t.uint64_data_size()});
  raw.reserve(std::min(n, static_cast<int64_t>(held)) * width);
  auto count = [&](int64_t have, const char *field) -> bool {
    if (have == n)
      return true;
    error = "it holds " + std::to_string(have) + " values in " + field +
            " but its shape needs " + std::to_string(n);
    return false;
  };
  if (et.isF32()) {
    if (!count(t.float_data_size(), "float_data"))
      return {};
    for (float f : t.float_data())
      appendElement(raw, et, f, 0, true);
  } else if (et.isF64()) {
    if (!count(t.double_data_size(), "double_data"))
      return {};
    for (double d : t.double_data())
      appendElement(raw, et, d, 0, true);
  } else if (et.isUnsignedInteger(32) || et.isUnsignedInteger(64)) {
    if (!count(t.uint64_data_size(), "uint64_data"))
      return {};
    for (uint64_t u : t.uint64_data())
      appendElement(raw, et, 0, static_cast<int64_t>(u), false);
  } else if (et.isInteger(64)) {
    if (!count(t.int64_data_size(), "int64_data"))
      return {};
    for (int64_t i : t.int64_data())
      appendElement(raw, et, 0, i, false);
  } else if (et.isF16() || et.isBF16()) {
    // int32_data holds the 16-bit patterns.
    if (!count(t.int32_data_size(), "int32_data"))
      return {};
    for (int32_t bits : t.int32_data()) {
      uint16_t v = static_cast<uint16_t>(bits);
      const char *p = reinterpret_cast<const char *>(&v);
      raw.insert(raw.end(), p, p + 2);
    }
  } else if (isa<IntegerType>(et)) {
    if (!count(t.int32_data_size(), "int32_data"))
      return {};
    for (int32_t i : t.int32_data())
      appendElement(raw, et, 0, i, false);
  } else {
    error = "its element type is not supported";
    return {};
  }
  return denseFromRaw(type, raw);
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

//===----------------------------------------------------------------------===//
// ImportContext
//===----------------------------------------------------------------------===//

InFlightDiagnostic ImportContext::error() {
  InFlightDiagnostic d = emitError(loc);
  d << "node '" << name << "' (" << node.op_type() << ", opset " << opset
    << "): ";
  return d;
}

FailureOr<Tensor *> ImportContext::input(unsigned i) {
  if (!hasInput(i))
    return error() << "input " << i << " is missing";
  auto it = values.find(node.input(i));
  if (it == values.end())
    return error() << "input " << i << " '" << node.input(i)
                   << "' is not produced by any earlier node, graph input or "
                      "initializer";
  return &it->second;
}

RankedTensorType ImportContext::type(unsigned i) {
  if (!hasInput(i))
    return {};
  auto it = values.find(node.input(i));
  return it == values.end() ? RankedTensorType() : it->second.type;
}

FailureOr<Value> ImportContext::floatValue(unsigned i) {
  FailureOr<Value> x = value(i);
  if (failed(x))
    return failure();
  if (!isa<FloatType>(cast<RankedTensorType>(x->getType()).getElementType()))
    return error() << "needs a floating-point input, got " << x->getType();
  return x;
}

FailureOr<Value> ImportContext::value(unsigned i) {
  FailureOr<Tensor *> t = input(i);
  if (failed(t))
    return failure();
  if (!(*t)->value)
    (*t)->value = materialize(*(*t)->known, (*t)->type.getElementType());
  return (*t)->value;
}

const Known *ImportContext::known(unsigned i) {
  if (!hasInput(i))
    return nullptr;
  auto it = values.find(node.input(i));
  if (it == values.end())
    return nullptr;
  Tensor &t = it->second;
  if (t.known)
    return &*t.known;
  // Small integer initializers often feed shape arithmetic: read them. Float
  // weights stay references so that no weight is folded into the IR.
  if (!t.bytes.empty() && isa<IntegerType>(t.type.getElementType()) &&
      t.type.getNumElements() <= kMaxWeightKnownElements) {
    t.known = knownFromRaw(t.type, t.bytes);
    if (t.known)
      return &*t.known;
  }
  return nullptr;
}

FailureOr<const Known *> ImportContext::requireKnown(unsigned i,
                                                     StringRef what) {
  FailureOr<Tensor *> t = input(i);
  if (failed(t))
    return failure();
  if (const Known *k = known(i))
    return k;
  if ((*t)->hint)
    return &*(*t)->hint;
  if ((*t)->type.getNumElements() <= kMaxFoldElements) {
    // A small initializer or constant the op needs at import (a pad value,
    // say): read it without making it foldable.
    std::optional<Known> fromConstant;
    if (auto c = dyn_cast_if_present<nn::ConstantOp>(
            (*t)->value ? (*t)->value.getDefiningOp() : nullptr))
      if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue()))
        fromConstant = knownFromDense(dense);
    if (fromConstant) {
      scratch.push_back(std::make_unique<Known>(std::move(*fromConstant)));
      return static_cast<const Known *>(scratch.back().get());
    }
    if ((*t)->isWeight && !(*t)->bytes.empty())
      if (std::optional<Known> k = knownFromRaw((*t)->type, (*t)->bytes)) {
        scratch.push_back(std::make_unique<Known>(std::move(*k)));
        return static_cast<const Known *>(scratch.back().get());
      }
  }
  return error() << what << " (input " << i << " '" << node.input(i)
                 << "') must be known when importing, but it is computed "
                    "from values only known at run time";
}

FailureOr<std::vector<int64_t>> ImportContext::knownInts(unsigned i,
                                                         StringRef what) {
  FailureOr<const Known *> k = requireKnown(i, what);
  if (failed(k))
    return failure();
  if ((*k)->isFloat)
    return error() << what << " (input " << i << " '" << node.input(i)
                   << "') must have an integer type, not "
                   << type(i).getElementType();
  return (*k)->ints;
}

const onnx::AttributeProto *ImportContext::attr(StringRef attrName) const {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == attrName)
      return &a;
  return nullptr;
}

int64_t ImportContext::attrInt(StringRef attrName, int64_t dflt) const {
  const onnx::AttributeProto *a = attr(attrName);
  return a ? a->i() : dflt;
}

double ImportContext::attrFloat(StringRef attrName, double dflt) const {
  const onnx::AttributeProto *a = attr(attrName);
  return a ? a->f() : dflt;
}

std::string ImportContext::attrString(StringRef attrName,
                                      StringRef dflt) const {
  const onnx::AttributeProto *a = attr(attrName);
  return a ? a->s() : dflt.str();
}

std::vector<int64_t> ImportContext::attrInts(StringRef attrName) const {
  const onnx::AttributeProto *a = attr(attrName);
  if (!a)
    return {};
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

void ImportContext::setOutput(unsigned i, Value v) {
  if (!wantsOutput(i))
    return;
  Tensor t;
  t.value = v;
  t.type = cast<RankedTensorType>(v.getType());
  values[node.output(i)] = t;
}

void ImportContext::setKnownOutput(unsigned i, Known k, Type et) {
  if (!wantsOutput(i))
    return;
  Tensor t;
  t.type = RankedTensorType::get(k.shape, et);
  t.known = std::move(k);
  values[node.output(i)] = t;
}

Value ImportContext::materialize(const Known &k, Type et) {
  auto type = RankedTensorType::get(k.shape, et);
  std::vector<char> raw;
  int64_t n = k.numElements();
  raw.reserve(n * storageBytes(et));
  for (int64_t i = 0; i < n; ++i)
    appendElement(raw, et, k.isFloat ? k.floats[i] : 0,
                  k.isFloat ? 0 : k.ints[i], k.isFloat);
  return nn::ConstantOp::create(b, loc, type, denseFromRaw(type, raw));
}

Value ImportContext::scalar(double v, Type et) {
  Known k = isa<FloatType>(et) ? Known::ofFloats({}, {v})
                               : Known::ofInts({}, {static_cast<int64_t>(v)});
  return materialize(k, et);
}

FailureOr<Value> ImportContext::reshape(Value x, ArrayRef<int64_t> shape) {
  auto t = cast<RankedTensorType>(x.getType());
  if (t.getShape() == shape)
    return x;
  // A reshape of a reshape is one reshape (of the first one's input).
  if (auto inner = x.getDefiningOp<nn::ReshapeOp>()) {
    x = inner.getInput();
    if (cast<RankedTensorType>(x.getType()).getShape() == shape)
      return x;
  }
  return createTyped<nn::ReshapeOp>(t.clone(shape), x);
}

Value OpChain::slice(Value x, ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
                     ArrayRef<int64_t> steps) {
  return make<nn::SliceOp>(x, ctx.b.getDenseI64ArrayAttr(starts),
                           ctx.b.getDenseI64ArrayAttr(ends),
                           ctx.b.getDenseI64ArrayAttr(steps));
}

FailureOr<int64_t> ImportContext::axis(int64_t a, int64_t rank,
                                       StringRef what) {
  int64_t n = a < 0 ? a + rank : a;
  if (n < 0 || n >= rank)
    return error() << what << " " << a << " is out of range for rank " << rank;
  return n;
}

FailureOr<int64_t> ImportContext::normalizationAxis(int64_t rank) {
  FailureOr<int64_t> a = axis(attrInt("axis", -1), rank, "axis");
  if (failed(a))
    return failure();
  if (attrInt("stash_type", 1) != 1)
    return error() << "stash_type " << attrInt("stash_type", 1)
                   << " is not supported (only 1, float)";
  return a;
}

FailureOr<Value> ImportContext::verified(Operation *op) {
  std::string message;
  LogicalResult ok = failure();
  {
    ScopedDiagnosticHandler capture(b.getContext(), [&](Diagnostic &d) {
      if (message.empty())
        message = d.str();
      return success();
    });
    ok = mlir::verify(op, /*verifyRecursively=*/false);
  }
  if (failed(ok))
    return discard(op, message);
  return op->getResult(0);
}

FailureOr<Value> ImportContext::discard(Operation *op, StringRef message) {
  std::string opName = op->getName().getStringRef().str();
  op->erase();
  return error() << "cannot be expressed as " << opName << ": " << message;
}
