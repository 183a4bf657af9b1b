// Communicator helpers shared by backends: names and host-side reductions.
#include "distrt/communicator.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "wrap_arith.h"

namespace distrt {

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kProd:
      return "prod";
  }
  return "?";
}

Status ParseReduceOp(const std::string& name, ReduceOp* out) {
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin, ReduceOp::kAvg, ReduceOp::kProd}) {
    if (name == ReduceOpName(op)) {
      *out = op;
      return OkStatus();
    }
  }
  return InvalidArgumentError("unknown reduction '", name, "' (sum, max, min, avg, prod)");
}

std::string GroupToString(const Group& group) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < group.size(); ++i) os << (i ? ", " : "") << group[i];
  os << "]";
  return os.str();
}

int64_t CollectiveCall::SendElements(int rank) const {
  int me = -1;
  for (size_t i = 0; i < group.size(); ++i)
    if (group[i] == rank) me = static_cast<int>(i);
  if (me < 0) return -1;
  int64_t total = 0;
  switch (kind) {
    case Kind::kAllReduce:
      return count;
    case Kind::kAllGather:
      return me < static_cast<int>(counts.size()) ? counts[static_cast<size_t>(me)] : -1;
    case Kind::kReduceScatter:
    case Kind::kAllToAll:
      for (int64_t c : counts) total += c;
      return total;
    case Kind::kCollectivePermute:
      return send_count;
  }
  return -1;
}

int64_t CollectiveCall::RecvElements(int rank) const {
  int me = -1;
  for (size_t i = 0; i < group.size(); ++i)
    if (group[i] == rank) me = static_cast<int>(i);
  if (me < 0) return -1;
  int64_t total = 0;
  switch (kind) {
    case Kind::kAllReduce:
      return count;
    case Kind::kAllGather:
      for (int64_t c : counts) total += c;
      return total;
    case Kind::kReduceScatter:
      return me < static_cast<int>(counts.size()) ? counts[static_cast<size_t>(me)] : -1;
    case Kind::kAllToAll:
      for (int64_t c : recv_counts) total += c;
      return total;
    case Kind::kCollectivePermute:
      return recv_count;
  }
  return -1;
}

Status Communicator::Run(const CollectiveCall& c) {
  switch (c.kind) {
    case CollectiveCall::Kind::kAllReduce:
      return AllReduce(c.group, c.send, c.recv, c.count, c.dtype, c.op);
    case CollectiveCall::Kind::kAllGather:
      return AllGather(c.group, c.send, c.recv, c.counts, c.dtype);
    case CollectiveCall::Kind::kReduceScatter:
      return ReduceScatter(c.group, c.send, c.recv, c.counts, c.dtype, c.op);
    case CollectiveCall::Kind::kAllToAll:
      return AllToAll(c.group, c.send, c.counts, c.recv, c.recv_counts, c.dtype);
    case CollectiveCall::Kind::kCollectivePermute:
      return CollectivePermute(c.group, c.send, c.send_count, c.target, c.recv, c.recv_count,
                               c.source, c.dtype);
  }
  return InvalidArgumentError("unknown collective kind");
}

namespace {

// What a blocking backend's Start hands back: the call is already done.
class DoneCollective : public PendingCollective {
 public:
  Status Wait() override { return OkStatus(); }
};

}  // namespace

Status Communicator::Start(const CollectiveCall& call, void* stream,
                           std::unique_ptr<PendingCollective>* pending) {
  DISTRT_RETURN_IF_ERROR(Run(call));
  *pending = std::make_unique<DoneCollective>();
  return OkStatus();
}

namespace {

template <typename T>
T Combine(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kMax:
      if constexpr (std::is_floating_point<T>::value) {
        if (std::isnan(a) || std::isnan(b)) return a + b;  // NaN propagates
      }
      return a < b ? b : a;
    case ReduceOp::kMin:
      if constexpr (std::is_floating_point<T>::value) {
        if (std::isnan(a) || std::isnan(b)) return a + b;
      }
      return b < a ? b : a;
    case ReduceOp::kProd:
      return WrapMul(a, b);
    default:  // sum, avg
      return WrapAdd(a, b);
  }
}

template <typename T>
void ReduceLoop(T* acc, const T* x, int64_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      for (int64_t i = 0; i < n; ++i) acc[i] = Combine(acc[i], x[i], ReduceOp::kSum);
      break;
    default:
      for (int64_t i = 0; i < n; ++i) acc[i] = Combine(acc[i], x[i], op);
  }
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void Reduce16(uint16_t* acc, const uint16_t* x, int64_t n, ReduceOp op) {
  for (int64_t i = 0; i < n; ++i) acc[i] = FromF(Combine(ToF(acc[i]), ToF(x[i]), op));
}

}  // namespace

Status ReduceInto(void* acc, const void* x, int64_t n, DType dtype, ReduceOp op) {
  switch (dtype) {
    case DType::kF32:
      ReduceLoop(static_cast<float*>(acc), static_cast<const float*>(x), n, op);
      break;
    case DType::kF64:
      ReduceLoop(static_cast<double*>(acc), static_cast<const double*>(x), n, op);
      break;
    case DType::kI64:
      ReduceLoop(static_cast<int64_t*>(acc), static_cast<const int64_t*>(x), n, op);
      break;
    case DType::kI32:
      ReduceLoop(static_cast<int32_t*>(acc), static_cast<const int32_t*>(x), n, op);
      break;
    case DType::kI16:
      ReduceLoop(static_cast<int16_t*>(acc), static_cast<const int16_t*>(x), n, op);
      break;
    case DType::kI8:
      ReduceLoop(static_cast<int8_t*>(acc), static_cast<const int8_t*>(x), n, op);
      break;
    case DType::kU8:
      ReduceLoop(static_cast<uint8_t*>(acc), static_cast<const uint8_t*>(x), n, op);
      break;
    case DType::kU16:
      ReduceLoop(static_cast<uint16_t*>(acc), static_cast<const uint16_t*>(x), n, op);
      break;
    case DType::kU32:
      ReduceLoop(static_cast<uint32_t*>(acc), static_cast<const uint32_t*>(x), n, op);
      break;
    case DType::kU64:
      ReduceLoop(static_cast<uint64_t*>(acc), static_cast<const uint64_t*>(x), n, op);
      break;
    case DType::kF16:
      Reduce16<HalfToFloat, FloatToHalf>(static_cast<uint16_t*>(acc),
                                         static_cast<const uint16_t*>(x), n, op);
      break;
    case DType::kBF16:
      Reduce16<BF16ToFloat, FloatToBF16>(static_cast<uint16_t*>(acc),
                                         static_cast<const uint16_t*>(x), n, op);
      break;
    case DType::kBool: {  // sum/max/avg = or, min/prod = and
      uint8_t* a = static_cast<uint8_t*>(acc);
      const uint8_t* b = static_cast<const uint8_t*>(x);
      const bool use_and = op == ReduceOp::kMin || op == ReduceOp::kProd;
      for (int64_t i = 0; i < n; ++i) a[i] = use_and ? (a[i] && b[i]) : (a[i] || b[i]);
      break;
    }
    default:
      return InvalidArgumentError("cannot reduce dtype ", DTypeName(dtype));
  }
  return OkStatus();
}

namespace {
template <typename T>
void Divide(T* acc, int64_t n, int d) {
  for (int64_t i = 0; i < n; ++i) acc[i] = static_cast<T>(acc[i] / static_cast<T>(d));
}
}  // namespace

Status FinishReduce(void* acc, int64_t n, DType dtype, ReduceOp op, int members) {
  if (op != ReduceOp::kAvg || members <= 1) return OkStatus();
  switch (dtype) {
    case DType::kF32:
      Divide(static_cast<float*>(acc), n, members);
      break;
    case DType::kF64:
      Divide(static_cast<double*>(acc), n, members);
      break;
    case DType::kI64:
      Divide(static_cast<int64_t*>(acc), n, members);
      break;
    case DType::kI32:
      Divide(static_cast<int32_t*>(acc), n, members);
      break;
    case DType::kI16:
      Divide(static_cast<int16_t*>(acc), n, members);
      break;
    case DType::kI8:
      Divide(static_cast<int8_t*>(acc), n, members);
      break;
    case DType::kU8:
      Divide(static_cast<uint8_t*>(acc), n, members);
      break;
    case DType::kU16:
      Divide(static_cast<uint16_t*>(acc), n, members);
      break;
    case DType::kU32:
      Divide(static_cast<uint32_t*>(acc), n, members);
      break;
    case DType::kU64:
      Divide(static_cast<uint64_t*>(acc), n, members);
      break;
    case DType::kF16: {
      uint16_t* a = static_cast<uint16_t*>(acc);
      for (int64_t i = 0; i < n; ++i)
        a[i] = FloatToHalf(HalfToFloat(a[i]) / static_cast<float>(members));
      break;
    }
    case DType::kBF16: {
      uint16_t* a = static_cast<uint16_t*>(acc);
      for (int64_t i = 0; i < n; ++i)
        a[i] = FloatToBF16(BF16ToFloat(a[i]) / static_cast<float>(members));
      break;
    }
    case DType::kBool:
      break;
    default:
      return InvalidArgumentError("cannot average dtype ", DTypeName(dtype));
  }
  return OkStatus();
}

}  // namespace distrt
