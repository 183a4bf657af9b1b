// Communication kernels: map an instruction on a tensor onto the
// Communicator's contiguous-buffer calls, packing / unpacking pieces when the
// gathered or scattered dim is not the leading one.
#include <algorithm>
#include <set>

#include "kernel_util.h"

namespace distrt {
namespace {

struct GroupInfo {
  Group group;
  int me = -1;  // index of this rank in the group
};

Status ReadGroup(const proto::Instruction& inst, int rank, GroupInfo* g) {
  g->group.assign(inst.group().ranks().begin(), inst.group().ranks().end());
  if (g->group.empty()) return InvalidArgumentError("'", inst.op(), "' needs a group");
  auto it = std::find(g->group.begin(), g->group.end(), rank);
  if (it == g->group.end()) {
    return InvalidArgumentError("group ", GroupToString(g->group), " does not contain rank ", rank);
  }
  g->me = static_cast<int>(it - g->group.begin());
  return OkStatus();
}

Status ReadReduction(const AttrReader& attrs, ReduceOp* op) {
  std::string name;
  DISTRT_RETURN_IF_ERROR(attrs.GetString("reduction", "sum", &name));
  return ParseReduceOp(name, op);
}

Status ReadSizes(const AttrReader& attrs, const char* name, size_t members,
                 std::vector<int64_t>* sizes) {
  DISTRT_RETURN_IF_ERROR(attrs.GetInts(name, sizes));
  if (sizes->size() != members) {
    return InvalidArgumentError("'", name, "' has ", sizes->size(), " entries for a group of ",
                                members);
  }
  for (int64_t s : *sizes) {
    if (s < 0) return InvalidArgumentError("'", name, "' has a negative size");
  }
  return OkStatus();
}

int64_t Sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v) s += x;
  return s;
}

Status ReadDim(const AttrReader& attrs, const char* name, int rank, int64_t* dim) {
  int64_t d;
  DISTRT_RETURN_IF_ERROR(attrs.GetInt(name, &d));
  return NormalizeAxis(d, rank, dim);
}

// ---- shape rules (shared by verify and run) -------------------------------------

// Computes the output type from the input type, the attributes and the group.
Status CommOutputType(const proto::Instruction& inst, int rank, const TensorType& x,
                      TensorType* y) {
  const std::string& op = inst.op();
  AttrReader attrs(inst);
  GroupInfo g;
  DISTRT_RETURN_IF_ERROR(ReadGroup(inst, rank, &g));
  const size_t n = g.group.size();
  const int r = static_cast<int>(x.shape.size());
  *y = x;
  if (op == "all_reduce") {
    ReduceOp red;
    return ReadReduction(attrs, &red);
  }
  if (op == "all_gather" || op == "reduce_scatter") {
    int64_t dim;
    std::vector<int64_t> sizes;
    DISTRT_RETURN_IF_ERROR(ReadDim(attrs, "dim", r, &dim));
    DISTRT_RETURN_IF_ERROR(ReadSizes(attrs, "sizes", n, &sizes));
    const int64_t have = x.shape[static_cast<size_t>(dim)];
    if (op == "all_gather") {
      if (have != sizes[static_cast<size_t>(g.me)]) {
        return InvalidArgumentError("all_gather: this rank's extent along dim ", dim, " is ", have,
                                    " but sizes says ", sizes[static_cast<size_t>(g.me)]);
      }
      y->shape[static_cast<size_t>(dim)] = Sum(sizes);
    } else {
      ReduceOp red;
      DISTRT_RETURN_IF_ERROR(ReadReduction(attrs, &red));
      if (have != Sum(sizes)) {
        return InvalidArgumentError("reduce_scatter: input extent along dim ", dim, " is ", have,
                                    " but sizes add up to ", Sum(sizes));
      }
      y->shape[static_cast<size_t>(dim)] = sizes[static_cast<size_t>(g.me)];
    }
    return OkStatus();
  }
  if (op == "all_to_all") {
    int64_t sd, cd;
    std::vector<int64_t> ss, cs;
    DISTRT_RETURN_IF_ERROR(ReadDim(attrs, "split_dim", r, &sd));
    DISTRT_RETURN_IF_ERROR(ReadDim(attrs, "concat_dim", r, &cd));
    DISTRT_RETURN_IF_ERROR(ReadSizes(attrs, "split_sizes", n, &ss));
    DISTRT_RETURN_IF_ERROR(ReadSizes(attrs, "concat_sizes", n, &cs));
    if (x.shape[static_cast<size_t>(sd)] != Sum(ss)) {
      return InvalidArgumentError("all_to_all: input extent along split_dim ", sd, " is ",
                                  x.shape[static_cast<size_t>(sd)], " but split_sizes add up to ",
                                  Sum(ss));
    }
    if (sd != cd && x.shape[static_cast<size_t>(cd)] != cs[static_cast<size_t>(g.me)]) {
      return InvalidArgumentError("all_to_all: input extent along concat_dim ", cd, " is ",
                                  x.shape[static_cast<size_t>(cd)], " but concat_sizes says ",
                                  cs[static_cast<size_t>(g.me)]);
    }
    y->shape[static_cast<size_t>(sd)] = ss[static_cast<size_t>(g.me)];
    y->shape[static_cast<size_t>(cd)] = Sum(cs);
    return OkStatus();
  }
  return OkStatus();  // collective_permute: same type
}

Status ReadPermute(const proto::Instruction& inst, int rank, int* target, int* source) {
  AttrReader attrs(inst);
  std::vector<int64_t> sources, targets;
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("sources", &sources));
  DISTRT_RETURN_IF_ERROR(attrs.GetInts("targets", &targets));
  if (sources.size() != targets.size()) {
    return InvalidArgumentError("collective_permute: ", sources.size(), " sources but ",
                                targets.size(), " targets");
  }
  std::set<int64_t> group(inst.group().ranks().begin(), inst.group().ranks().end());
  std::set<int64_t> seen_s, seen_t;
  *target = -1;
  *source = -1;
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!group.count(sources[i]) || !group.count(targets[i])) {
      return InvalidArgumentError("collective_permute pair ", sources[i], " -> ", targets[i],
                                  " is not inside the group");
    }
    if (!seen_s.insert(sources[i]).second || !seen_t.insert(targets[i]).second) {
      return InvalidArgumentError("collective_permute: rank ", sources[i], " or ", targets[i],
                                  " appears twice among the sources or targets");
    }
    if (sources[i] == rank) *target = static_cast<int>(targets[i]);
    if (targets[i] == rank) *source = static_cast<int>(sources[i]);
  }
  return OkStatus();
}

Status VerifyCollective(const VerifyContext& ctx) {
  TensorType y;
  DISTRT_RETURN_IF_ERROR(CommOutputType(*ctx.inst, ctx.rank, ctx.inputs[0], &y));
  if (ctx.inst->op() == "collective_permute") {
    int t, s;
    DISTRT_RETURN_IF_ERROR(ReadPermute(*ctx.inst, ctx.rank, &t, &s));
  }
  return CheckOutputType(ctx.outputs[0], y);
}

Status VerifyP2P(const VerifyContext& ctx) {
  int64_t peer, tag;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("peer", &peer));
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("tag", 0, &tag));
  if (peer < 0 || peer >= ctx.world_size || peer == ctx.rank) {
    return InvalidArgumentError("peer ", peer, " is not another rank of the world of ",
                                ctx.world_size);
  }
  return OkStatus();
}

// ---- run ---------------------------------------------------------------------------

Status NeedComm(const KernelContext& ctx) {
  if (ctx.comm == nullptr) {
    return FailedPreconditionError("'", ctx.inst->op(), "' needs a communicator, none was given");
  }
  return OkStatus();
}

// Element offset shape helpers.
Shape WithDim(Shape s, int64_t dim, int64_t v) {
  s[static_cast<size_t>(dim)] = v;
  return s;
}

bool LeadingOnly(const Shape& s, int64_t dim) {  // all dims before `dim` are 1
  for (int64_t d = 0; d < dim; ++d) {
    if (s[static_cast<size_t>(d)] != 1) return false;
  }
  return true;
}

// How every collective kernel but collective_permute starts: a
// communicator, the output type the shape rules give, and the group.
Status BeginCollective(const KernelContext& ctx, GroupInfo* g) {
  DISTRT_RETURN_IF_ERROR(NeedComm(ctx));
  TensorType yt;
  DISTRT_RETURN_IF_ERROR(CommOutputType(*ctx.inst, ctx.rank, ctx.input(0).type(), &yt));
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], yt));
  return ReadGroup(*ctx.inst, ctx.rank, g);
}

// Pieces of a row-major tensor of `shape` along `dim`: `outer` rows (the
// dims before it) of extent x `inner` bytes each.
struct PieceGeometry {
  size_t outer = 1, inner = 1;
  PieceGeometry(const Shape& shape, int64_t dim, size_t es) {
    for (int64_t d = 0; d < dim; ++d) outer *= static_cast<size_t>(shape[static_cast<size_t>(d)]);
    inner = es;
    for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d)
      inner *= static_cast<size_t>(shape[d]);
  }
};

// Copies x's pieces along `dim` (extents `sizes`, in member order) into
// contiguous member-major blocks at `packed`, on x's device.
Status PackPieces(Device* device, const Tensor& x, int64_t dim, const std::vector<int64_t>& sizes,
                  uint8_t* packed) {
  const PieceGeometry g(x.shape(), dim, DTypeSize(x.dtype()));
  const size_t pitch = static_cast<size_t>(x.dim(static_cast<int>(dim))) * g.inner;
  size_t offset = 0;
  for (int64_t size : sizes) {
    const size_t width = static_cast<size_t>(size) * g.inner;
    DISTRT_RETURN_IF_ERROR(
        device->Copy2D(packed, width, x.data<uint8_t>() + offset, pitch, width, g.outer));
    packed += width * g.outer;
    offset += width;
  }
  return OkStatus();
}

// The inverse: member-major blocks at `packed` become y's pieces along `dim`.
Status UnpackPieces(Device* device, const uint8_t* packed, int64_t dim,
                    const std::vector<int64_t>& sizes, Tensor* y) {
  const PieceGeometry g(y->shape(), dim, DTypeSize(y->dtype()));
  const size_t pitch = static_cast<size_t>(y->dim(static_cast<int>(dim))) * g.inner;
  size_t offset = 0;
  for (int64_t size : sizes) {
    const size_t width = static_cast<size_t>(size) * g.inner;
    DISTRT_RETURN_IF_ERROR(
        device->Copy2D(y->data<uint8_t>() + offset, pitch, packed, width, width, g.outer));
    packed += width * g.outer;
    offset += width;
  }
  return OkStatus();
}

// Where the communicator takes buffers where this instruction's live (the
// host for local and mpi, a GPU for nccl) the call goes straight to it;
// a device program over a host communicator stages its buffers through the
// host (host-staged collectives: how several ranks share one GPU).
bool Staged(const KernelContext& ctx) {
  return ctx.device->kind() != ctx.comm->buffer_device();
}

Status CheckStageable(const KernelContext& ctx) {
  if (Staged(ctx) && ctx.device->kind() == DeviceKind::kCpu) {
    return FailedPreconditionError("the ", ctx.comm->backend(),
                                   " communicator needs the program on a ",
                                   DeviceKindName(ctx.comm->buffer_device()), " device");
  }
  return OkStatus();
}

Status Communicate(KernelContext& ctx, CollectiveCall call) {
  DISTRT_RETURN_IF_ERROR(CheckStageable(ctx));
  if (!Staged(ctx)) {
    std::unique_ptr<PendingCollective> pending;
    DISTRT_RETURN_IF_ERROR(ctx.comm->Start(call, ctx.stream(), &pending));
    return pending->Wait();
  }
  Device* device = ctx.device.get();
  const size_t es = DTypeSize(call.dtype);
  const int64_t sent = call.SendElements(ctx.rank), received = call.RecvElements(ctx.rank);
  if (sent < 0 || received < 0) {
    return InvalidArgumentError("rank ", ctx.rank, " is not in group ", GroupToString(call.group));
  }
  Tensor send, recv;
  DISTRT_RETURN_IF_ERROR(Tensor::Allocate(DType::kU8, {sent * static_cast<int64_t>(es)}, &send,
                                          ctx.tracker, false));
  DISTRT_RETURN_IF_ERROR(Tensor::Allocate(DType::kU8, {received * static_cast<int64_t>(es)},
                                          &recv, ctx.tracker, false));
  DISTRT_RETURN_IF_ERROR(device->CopyToHost(send.raw(), call.send, send.byte_size()));
  void* out = call.recv;
  call.send = send.raw();
  call.recv = recv.raw();
  DISTRT_RETURN_IF_ERROR(ctx.comm->Run(call));
  DISTRT_RETURN_IF_ERROR(device->CopyFromHost(out, recv.raw(), recv.byte_size()));
  return device->Synchronize();  // the host buffer goes with this call
}

Status RunAllReduce(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  GroupInfo g;
  DISTRT_RETURN_IF_ERROR(BeginCollective(ctx, &g));
  CollectiveCall call;
  call.kind = CollectiveCall::Kind::kAllReduce;
  DISTRT_RETURN_IF_ERROR(ReadReduction(ctx.attrs(), &call.op));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  call.group = g.group;
  call.send = x.raw();
  call.recv = y->raw();
  call.count = x.num_elements();
  call.dtype = x.dtype();
  return Communicate(ctx, call);
}

Status RunAllGather(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  GroupInfo g;
  DISTRT_RETURN_IF_ERROR(BeginCollective(ctx, &g));
  int64_t dim;
  std::vector<int64_t> sizes;
  DISTRT_RETURN_IF_ERROR(ReadDim(ctx.attrs(), "dim", x.rank(), &dim));
  DISTRT_RETURN_IF_ERROR(ReadSizes(ctx.attrs(), "sizes", g.group.size(), &sizes));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  CollectiveCall call;
  call.kind = CollectiveCall::Kind::kAllGather;
  call.group = g.group;
  call.dtype = x.dtype();
  call.send = x.raw();
  for (int64_t s : sizes) call.counts.push_back(NumElements(WithDim(x.shape(), dim, s)));
  if (LeadingOnly(x.shape(), dim)) {  // pieces are contiguous in y already
    call.recv = y->raw();
    return Communicate(ctx, call);
  }
  Tensor tmp;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(x.dtype(), {Sum(call.counts)}, &tmp));
  call.recv = tmp.raw();
  DISTRT_RETURN_IF_ERROR(Communicate(ctx, call));
  return UnpackPieces(ctx.device.get(), tmp.data<uint8_t>(), dim, sizes, y);
}

Status RunReduceScatter(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  GroupInfo g;
  DISTRT_RETURN_IF_ERROR(BeginCollective(ctx, &g));
  int64_t dim;
  std::vector<int64_t> sizes;
  CollectiveCall call;
  call.kind = CollectiveCall::Kind::kReduceScatter;
  DISTRT_RETURN_IF_ERROR(ReadDim(ctx.attrs(), "dim", x.rank(), &dim));
  DISTRT_RETURN_IF_ERROR(ReadSizes(ctx.attrs(), "sizes", g.group.size(), &sizes));
  DISTRT_RETURN_IF_ERROR(ReadReduction(ctx.attrs(), &call.op));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  call.group = g.group;
  call.dtype = x.dtype();
  call.recv = y->raw();
  for (int64_t s : sizes) call.counts.push_back(NumElements(WithDim(x.shape(), dim, s)));
  if (LeadingOnly(x.shape(), dim)) {
    call.send = x.raw();
    return Communicate(ctx, call);
  }
  Tensor packed;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(x.dtype(), {x.num_elements()}, &packed));
  DISTRT_RETURN_IF_ERROR(PackPieces(ctx.device.get(), x, dim, sizes, packed.data<uint8_t>()));
  call.send = packed.raw();
  return Communicate(ctx, call);
}

Status RunAllToAll(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  GroupInfo g;
  DISTRT_RETURN_IF_ERROR(BeginCollective(ctx, &g));
  const size_t n = g.group.size();
  int64_t sd, cd;
  std::vector<int64_t> ss, cs;
  DISTRT_RETURN_IF_ERROR(ReadDim(ctx.attrs(), "split_dim", x.rank(), &sd));
  DISTRT_RETURN_IF_ERROR(ReadDim(ctx.attrs(), "concat_dim", x.rank(), &cd));
  DISTRT_RETURN_IF_ERROR(ReadSizes(ctx.attrs(), "split_sizes", n, &ss));
  DISTRT_RETURN_IF_ERROR(ReadSizes(ctx.attrs(), "concat_sizes", n, &cs));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  CollectiveCall call;
  call.kind = CollectiveCall::Kind::kAllToAll;
  call.group = g.group;
  call.dtype = x.dtype();
  // Send: piece k is x's window [split offset_k, +ss[k]) along split_dim.
  for (size_t k = 0; k < n; ++k) call.counts.push_back(NumElements(WithDim(x.shape(), sd, ss[k])));
  for (size_t j = 0; j < n; ++j)
    call.recv_counts.push_back(NumElements(WithDim(y->shape(), cd, cs[j])));
  call.send = x.raw();
  Tensor packed;
  if (!LeadingOnly(x.shape(), sd)) {
    DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(x.dtype(), {x.num_elements()}, &packed));
    DISTRT_RETURN_IF_ERROR(PackPieces(ctx.device.get(), x, sd, ss, packed.data<uint8_t>()));
    call.send = packed.raw();
  }
  if (LeadingOnly(y->shape(), cd)) {
    call.recv = y->raw();
    return Communicate(ctx, call);
  }
  Tensor tmp;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateTemp(x.dtype(), {y->num_elements()}, &tmp));
  call.recv = tmp.raw();
  DISTRT_RETURN_IF_ERROR(Communicate(ctx, call));
  return UnpackPieces(ctx.device.get(), tmp.data<uint8_t>(), cd, cs, y);
}

Status RunPermute(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(NeedComm(ctx));
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  GroupInfo g;
  DISTRT_RETURN_IF_ERROR(ReadGroup(*ctx.inst, ctx.rank, &g));
  CollectiveCall call;
  call.kind = CollectiveCall::Kind::kCollectivePermute;
  DISTRT_RETURN_IF_ERROR(ReadPermute(*ctx.inst, ctx.rank, &call.target, &call.source));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateZeroedOutput(0, &y));  // zeros if nothing arrives
  call.group = g.group;
  call.dtype = x.dtype();
  call.send = x.raw();
  call.send_count = call.target >= 0 ? x.num_elements() : 0;
  call.recv = y->raw();
  call.recv_count = call.source >= 0 ? y->num_elements() : 0;
  return Communicate(ctx, call);
}

Status RunSend(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(NeedComm(ctx));
  DISTRT_RETURN_IF_ERROR(CheckStageable(ctx));
  int64_t peer, tag;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("peer", &peer));
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("tag", 0, &tag));
  const Tensor* x = &ctx.input(0);
  Tensor host;
  if (Staged(ctx)) {
    DISTRT_RETURN_IF_ERROR(x->CopyTo(CpuDevice(), &host, ctx.tracker));
    x = &host;
  }
  return ctx.comm->Send(x->raw(), static_cast<int64_t>(x->byte_size()), static_cast<int>(peer),
                        static_cast<int>(tag + ctx.tag_offset));
}

Status RunRecv(KernelContext& ctx) {
  DISTRT_RETURN_IF_ERROR(NeedComm(ctx));
  DISTRT_RETURN_IF_ERROR(CheckStageable(ctx));
  int64_t peer, tag;
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("peer", &peer));
  DISTRT_RETURN_IF_ERROR(ctx.attrs().GetInt("tag", 0, &tag));
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateOutput(0, &y));
  if (!Staged(ctx)) {
    return ctx.comm->Recv(y->raw(), static_cast<int64_t>(y->byte_size()), static_cast<int>(peer),
                          static_cast<int>(tag + ctx.tag_offset));
  }
  Tensor host;
  DISTRT_RETURN_IF_ERROR(Tensor::Allocate(y->dtype(), y->shape(), &host, ctx.tracker, false));
  DISTRT_RETURN_IF_ERROR(ctx.comm->Recv(host.raw(), static_cast<int64_t>(host.byte_size()),
                                        static_cast<int>(peer),
                                        static_cast<int>(tag + ctx.tag_offset)));
  DISTRT_RETURN_IF_ERROR(ctx.device->CopyFromHost(y->raw(), host.raw(), host.byte_size()));
  return ctx.device->Synchronize();
}

// to_partial: a replicated value becomes a Partial(reduction) one without
// communication. For sum the group's first member keeps x and the others hold
// zeros (prod: ones), so reducing over the group gives x back; for
// max/min/avg every member keeps x.
Status VerifyToPartial(const VerifyContext& ctx) {
  GroupInfo g;
  DISTRT_RETURN_IF_ERROR(ReadGroup(*ctx.inst, ctx.rank, &g));
  ReduceOp op;
  DISTRT_RETURN_IF_ERROR(ReadReduction(ctx.attrs(), &op));
  return CheckOutputType(ctx.outputs[0], ctx.inputs[0]);
}

Status RunToPartial(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  DISTRT_RETURN_IF_ERROR(CheckOutputType(ctx.output_types[0], x.type()));
  GroupInfo g;
  DISTRT_RETURN_IF_ERROR(ReadGroup(*ctx.inst, ctx.rank, &g));
  ReduceOp op;
  DISTRT_RETURN_IF_ERROR(ReadReduction(ctx.attrs(), &op));
  if (g.me == 0 || (op != ReduceOp::kSum && op != ReduceOp::kProd)) return ctx.SetOutput(0, x);
  Tensor* y;
  DISTRT_RETURN_IF_ERROR(ctx.AllocateZeroedOutput(0, &y));
  if (op == ReduceOp::kProd) {  // ones, written on the host
    Tensor ones;
    DISTRT_RETURN_IF_ERROR(Tensor::Allocate(x.dtype(), x.shape(), &ones, ctx.tracker, false));
    double one = 1.0;
    uint8_t bytes[8] = {0};
    DISTRT_RETURN_IF_ERROR(CastBuffer(&one, DType::kF64, bytes, x.dtype(), 1));
    const size_t es = DTypeSize(x.dtype());
    for (int64_t i = 0; i < ones.num_elements(); ++i) {
      std::memcpy(ones.data<uint8_t>() + static_cast<size_t>(i) * es, bytes, es);
    }
    DISTRT_RETURN_IF_ERROR(ctx.device->CopyFromHost(y->raw(), ones.raw(), ones.byte_size()));
    return ctx.device->Synchronize();
  }
  return OkStatus();
}

}  // namespace

// The kernels touch their buffers only through the device interface
// (pieces moved with Copy2D, host staging with copies), so the same kernels
// serve every device.
void RegisterCommKernels(KernelRegistry& r) {
  for (DeviceKind device : {DeviceKind::kCpu, DeviceKind::kCuda}) {
    auto add = [&](KernelDef d) {
      d.device = device;
      d.half_native = true;  // bf16/f16 moved as they are, reduced through f32
      r.Add(std::move(d));
    };
    add({"all_reduce", 1, 1, 1, RunAllReduce, VerifyCollective, true});
    add({"all_gather", 1, 1, 1, RunAllGather, VerifyCollective, true});
    add({"reduce_scatter", 1, 1, 1, RunReduceScatter, VerifyCollective, true});
    add({"all_to_all", 1, 1, 1, RunAllToAll, VerifyCollective, true});
    add({"collective_permute", 1, 1, 1, RunPermute, VerifyCollective, true});
    add({"to_partial", 1, 1, 1, RunToPartial, VerifyToPartial, false});
    add({"send", 1, 1, 0, RunSend, VerifyP2P, true});
    add({"recv", 0, 0, 1, RunRecv, VerifyP2P, true});
  }
}

}  // namespace distrt
