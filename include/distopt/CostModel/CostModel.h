//===- CostModel.h - time of compute and communication ---------*- C++ -*-===//
//
// The one cost model every planner and the report use: an op's time is the
// larger of its FLOPs at the machine's GEMM rate (matrix products) and its
// bytes at the memory bandwidth (a roofline); a collective's time is
// alpha + (bytes one member sends) / beta on the link of its mesh axes, with
// the usual algorithms' volumes (ring all-reduce 2(n-1)/n of the tensor).
// See docs/cost-model.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_COSTMODEL_COSTMODEL_H
#define DISTOPT_COSTMODEL_COSTMODEL_H

#include "distopt/CostModel/MachineProfile.h"

#include <optional>

namespace distopt::cost {

enum class Collective : uint8_t {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Permute, // collective_permute: every member sends its piece to another
  Send,
  Recv,
};

/// The collective a dist op (or runtime call) name stands for:
/// "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
/// "collective_permute", "send", "recv".
std::optional<Collective> collectiveNamed(llvm::StringRef name);

/// Bytes one member of a group of `n` sends, for a tensor of `bytes` per
/// member: the input for all-reduce, reduce-scatter, all-to-all, permute and
/// send; the gathered output for all-gather. Ring algorithms: all-reduce
/// 2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n, permute and
/// send all of it, receive nothing.
double bytesSent(Collective kind, double bytes, int64_t n);

/// Microseconds for `kind` on a link: alpha + bytes on the wire / beta,
/// where a receive waits for the bytes it receives.
double collectiveUs(Collective kind, double bytes, int64_t n,
                    const AlphaBeta &link);

/// Microseconds to move `bytes` at `gbps` (1e9 bytes per second).
inline double transferUs(double bytes, double gbps) {
  return gbps > 0 ? bytes / (gbps * 1e3) : 0;
}

/// What one op does, for its time.
struct OpWork {
  double flops = 0;
  /// Bytes read and written (operands plus results).
  double bytes = 0;
  /// A matrix product (or a convolution done as one): its FLOPs run at the
  /// GEMM rate; other ops' time is their memory traffic.
  bool gemm = false;
  std::string dtype = "f32";
  GemmClass gemmClass = GemmClass::Large;
  /// The runtime kernel that runs it ("softmax", "transpose", ...).
  std::string kernel;
  /// Elements of its largest operand or result.
  double elements = 0;
  /// Only a new view of its operand's buffer (a reshape): no work.
  bool view = false;
};

/// Microseconds of `work` on `machine`: nothing for a view; max(FLOPs /
/// GEMM rate, bytes / memory bandwidth) for a GEMM; for an f32 kernel the
/// profile has a measured time per element of, elements x that time;
/// bytes / memory bandwidth otherwise.
double computeUs(const MachineProfile &machine, const OpWork &work);

/// A profile applied to one mesh: each axis's link at the axis's size.
class MeshCost {
public:
  MeshCost(std::shared_ptr<const MachineProfile> machine,
           llvm::ArrayRef<std::string> axisNames,
           llvm::ArrayRef<int64_t> axisSizes);

  const MachineProfile &machine() const { return *profile; }
  int64_t numAxes() const { return sizes.size(); }
  llvm::StringRef linkKind(int64_t axis) const { return kinds[axis]; }
  /// Alpha and beta of `axis` for a group of the axis's size.
  const AlphaBeta &axisLink(int64_t axis) const { return links[axis]; }
  /// A collective over several axes at once: a group of their product,
  /// as slow as the slowest of their links (largest alpha, smallest beta).
  AlphaBeta groupLink(llvm::ArrayRef<int64_t> axes) const;
  int64_t groupSize(llvm::ArrayRef<int64_t> axes) const;
  /// Microseconds of `kind` over `axes` for a tensor of `bytes` per member.
  double collectiveUs(Collective kind, double bytes,
                      llvm::ArrayRef<int64_t> axes) const;
  /// Whether every axis has the same alpha and beta.
  bool uniform() const;

private:
  std::shared_ptr<const MachineProfile> profile;
  std::vector<int64_t> sizes;
  std::vector<std::string> kinds;
  std::vector<AlphaBeta> links;
};

} // namespace distopt::cost

#endif // DISTOPT_COSTMODEL_COSTMODEL_H
