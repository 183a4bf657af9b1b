// The kernel registry, attribute access and helpers shared by kernels.
#include <algorithm>

#include "kernel.h"

namespace distrt {

// ---- AttrReader -------------------------------------------------------------

const proto::Attribute* AttrReader::Find(const std::string& name) const {
  auto it = inst_.attrs().find(name);
  return it == inst_.attrs().end() ? nullptr : &it->second;
}

bool AttrReader::Has(const std::string& name) const { return Find(name) != nullptr; }

Status AttrReader::GetInt(const std::string& name, int64_t* out) const {
  const proto::Attribute* a = Find(name);
  if (a == nullptr) return InvalidArgumentError("missing int attribute '", name, "'");
  if (a->value_case() != proto::Attribute::kI) {
    return InvalidArgumentError("attribute '", name, "' must be an int");
  }
  *out = a->i();
  return OkStatus();
}

Status AttrReader::GetInt(const std::string& name, int64_t default_value, int64_t* out) const {
  if (!Has(name)) {
    *out = default_value;
    return OkStatus();
  }
  return GetInt(name, out);
}

Status AttrReader::GetInts(const std::string& name, std::vector<int64_t>* out) const {
  bool present;
  DISTRT_RETURN_IF_ERROR(GetInts(name, out, &present));
  if (!present) return InvalidArgumentError("missing ints attribute '", name, "'");
  return OkStatus();
}

Status AttrReader::GetInts(const std::string& name, std::vector<int64_t>* out,
                           bool* present) const {
  const proto::Attribute* a = Find(name);
  *present = a != nullptr;
  out->clear();
  if (a == nullptr) return OkStatus();
  if (a->value_case() == proto::Attribute::kInts) {
    out->assign(a->ints().values().begin(), a->ints().values().end());
    return OkStatus();
  }
  if (a->value_case() == proto::Attribute::kI) {  // a single int is a 1-list
    out->push_back(a->i());
    return OkStatus();
  }
  if (a->value_case() == proto::Attribute::VALUE_NOT_SET) return OkStatus();  // empty list
  return InvalidArgumentError("attribute '", name, "' must be a list of ints");
}

Status AttrReader::GetFloat(const std::string& name, double* out) const {
  const proto::Attribute* a = Find(name);
  if (a == nullptr) return InvalidArgumentError("missing float attribute '", name, "'");
  if (a->value_case() == proto::Attribute::kF) {
    *out = a->f();
  } else if (a->value_case() == proto::Attribute::kI) {
    *out = static_cast<double>(a->i());
  } else {
    return InvalidArgumentError("attribute '", name, "' must be a float");
  }
  return OkStatus();
}

Status AttrReader::GetFloat(const std::string& name, double default_value, double* out) const {
  if (!Has(name)) {
    *out = default_value;
    return OkStatus();
  }
  return GetFloat(name, out);
}

Status AttrReader::GetString(const std::string& name, const std::string& default_value,
                             std::string* out) const {
  const proto::Attribute* a = Find(name);
  if (a == nullptr) {
    *out = default_value;
    return OkStatus();
  }
  if (a->value_case() != proto::Attribute::kS) {
    return InvalidArgumentError("attribute '", name, "' must be a string");
  }
  *out = a->s();
  return OkStatus();
}

// ---- KernelContext ------------------------------------------------------------

Status KernelContext::AllocateOutput(int i, Tensor** out) {
  return AllocateOutputOver(i, kAnyInput, out);
}

Status KernelContext::AllocateOutputOver(int i, int input, Tensor** out) {
  auto& slot = (*outputs)[static_cast<size_t>(i)];
  const TensorType& t = output_types[static_cast<size_t>(i)];
  if (static_cast<size_t>(i) < write_into.size() && write_into[static_cast<size_t>(i)]) {
    slot = *write_into[static_cast<size_t>(i)];
    *out = &slot;
    return OkStatus();
  }
  for (size_t k = 0; k < donatable.size() && k < inputs.size(); ++k) {
    if ((input == kAnyInput || static_cast<int>(k) == input) && donatable[k] &&
        inputs[k]->type() == t) {
      donatable[k] = false;
      slot = *inputs[k];  // in place: shares the dying input's buffer
      *out = &slot;
      return OkStatus();
    }
  }
  DISTRT_RETURN_IF_ERROR(Tensor::AllocateOn(device, t.dtype, t.shape, &slot, tracker, /*zero=*/false));
  *out = &slot;
  return OkStatus();
}

Status KernelContext::AllocateZeroedOutput(int i, Tensor** out) {
  auto& slot = (*outputs)[static_cast<size_t>(i)];
  const TensorType& t = output_types[static_cast<size_t>(i)];
  DISTRT_RETURN_IF_ERROR(Tensor::AllocateOn(device, t.dtype, t.shape, &slot, tracker, /*zero=*/true));
  *out = &slot;
  return OkStatus();
}

Status KernelContext::SetOutput(int i, const Tensor& t) {
  DISTRT_RETURN_IF_ERROR(CheckOutputType(output_types[static_cast<size_t>(i)], t.type()));
  (*outputs)[static_cast<size_t>(i)] = t;
  return OkStatus();
}

Status KernelContext::AllocateTemp(DType dtype, const Shape& shape, Tensor* out, bool zero) {
  return Tensor::AllocateOn(device, dtype, shape, out, tracker, zero);
}

// ---- registry -----------------------------------------------------------------

// Declared here, not in kernel.h: the loop's kernels are the executor's own.
void RegisterLoopKernels(KernelRegistry& r);
// kernels_einsum.cpp.
void RegisterEinsumKernels(KernelRegistry& r);
void RegisterResizeKernels(KernelRegistry& r);

KernelRegistry& KernelRegistry::Get() {
  static KernelRegistry* const kRegistry = [] {
    auto* r = new KernelRegistry();
    RegisterBinaryKernels(*r);
    RegisterUnaryKernels(*r);
    RegisterCastKernels(*r);
    RegisterReduceKernels(*r);
    RegisterNormKernels(*r);
    RegisterMatmulKernels(*r);
    RegisterShapeKernels(*r);
    RegisterIndexKernels(*r);
    RegisterEinsumKernels(*r);
    RegisterConvKernels(*r);
    RegisterPoolKernels(*r);
    RegisterResizeKernels(*r);
    RegisterOptimizerKernels(*r);
    RegisterCommKernels(*r);
    RegisterLoopKernels(*r);
    return r;
  }();
  return *kRegistry;
}

void KernelRegistry::Add(KernelDef def) {
  std::lock_guard<std::mutex> lock(mu_);
  defs_.push_back(std::make_unique<KernelDef>(std::move(def)));
}

const KernelDef* KernelRegistry::Find(const std::string& op, DeviceKind device, DType dtype) const {
  std::lock_guard<std::mutex> lock(mu_);
  const KernelDef* any = nullptr;
  for (const auto& d : defs_) {
    if (d->name != op || d->device != device) continue;
    if (dtype == DType::kUnspecified) return d.get();
    if (d->dtypes & DTypeMask({dtype})) return d.get();
    if (d->dtypes == 0 && any == nullptr) any = d.get();
  }
  return any;
}

std::vector<std::string> KernelRegistry::Names(DeviceKind device) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& d : defs_)
    if (d->device == device) names.push_back(d->name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

uint32_t DTypeMask(std::initializer_list<DType> dtypes) {
  uint32_t mask = 0;
  for (DType d : dtypes) mask |= uint32_t{1} << static_cast<int>(d);
  return mask;
}

DType ComputeDType(const std::vector<TensorType>& inputs, const std::vector<TensorType>& outputs) {
  for (const TensorType& t : inputs)
    if (IsFloat(t.dtype)) return t.dtype;
  if (!inputs.empty()) return inputs[0].dtype;
  if (!outputs.empty()) return outputs[0].dtype;
  return DType::kUnspecified;
}

// ---- helpers ------------------------------------------------------------------

Status BroadcastShapes(const Shape& a, const Shape& b, Shape* out) {
  size_t r = std::max(a.size(), b.size());
  Shape s(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) {
      s[i] = da;
    } else if (da == 1) {
      s[i] = db;
    } else {
      return InvalidArgumentError("shapes ", ShapeToString(a), " and ", ShapeToString(b),
                                  " do not broadcast");
    }
  }
  *out = std::move(s);
  return OkStatus();
}

Status CheckOutputType(const TensorType& declared, const TensorType& actual) {
  if (declared != actual) {
    return InvalidArgumentError("the result is ", actual.ToString(),
                                " but the program declares the output as ", declared.ToString());
  }
  return OkStatus();
}

Status NormalizeAxis(int64_t axis, int rank, int64_t* out) {
  if (axis < -rank || axis >= rank || (rank == 0 && axis != 0)) {
    return InvalidArgumentError("axis ", axis, " is out of range for rank ", rank);
  }
  *out = axis < 0 ? axis + rank : axis;
  return OkStatus();
}

std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

}  // namespace distrt
