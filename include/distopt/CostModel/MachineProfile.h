//===- MachineProfile.h - the rates of the machine a plan is for -*- C++ -*-===//
//
// What the cost model knows about a machine: per dtype and GEMM shape class
// the rate of matrix products, the memory bandwidth, and per link kind (an
// interconnect and the communicator backend on it) the latency alpha and
// bandwidth beta of a collective, per group size. Mesh axes map to link
// kinds: by name, or inner axes inside a node and outer ones across nodes.
// Profiles are small JSON files (`dist-run --calibrate` writes one); a few
// are built in so plans for clusters can be made anywhere. The format is in
// docs/cost-model.md.
//
//===----------------------------------------------------------------------===//
#ifndef DISTOPT_COSTMODEL_MACHINEPROFILE_H
#define DISTOPT_COSTMODEL_MACHINEPROFILE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace distopt::cost {

/// GEMMs by their smallest extent (of m, n, k): small ones cannot fill a
/// device's units, so they run at a lower rate.
enum class GemmClass : uint8_t { Small, Medium, Large };
constexpr int64_t kMediumGemmMin = 128;  // smallest extent of a medium GEMM
constexpr int64_t kLargeGemmMin = 1024;  // ... and of a large one
GemmClass classifyGemm(int64_t m, int64_t n, int64_t k);
llvm::StringRef gemmClassName(GemmClass c); // "small", "medium", "large"

/// One collective's fixed latency and bandwidth on a link, for one group
/// size: a collective moving B bytes per member takes alpha + B / beta.
struct AlphaBeta {
  /// Group size these were measured at; 0: any size.
  int64_t groupSize = 0;
  double alphaUs = 0;  // microseconds per collective
  double betaGBps = 0; // 1e9 bytes per second, per member and direction
};

/// A link kind: the interconnect between the devices of a mesh axis and
/// the communicator backend that drives it.
struct LinkProfile {
  std::string backend; // "local", "mpi", "nccl" or "" (unspecified)
  /// By group size, ascending (at least one).
  std::vector<AlphaBeta> groups;

  /// The entry for a group of `n`: the largest measured size not above
  /// `n`, else the smallest.
  const AlphaBeta &at(int64_t n) const;
};

struct MachineProfile {
  /// What to call it: the built-in name or the file's path.
  std::string name;
  /// The device, in words ("AMD EPYC (2 cores)", "NVIDIA H200 SXM").
  std::string device;
  /// Free text (how it was measured, where figures come from).
  std::string notes;
  /// TFLOP/s of matrix products, per dtype ("f32", "bf16", ...) and class.
  std::map<std::string, std::array<double, 3>> gemmTflops;
  /// Device memory bandwidth, GB/s (bytes read plus bytes written).
  double memoryGBps = 0;
  /// Measured nanoseconds per element of the runtime's f32 kernels, by
  /// kernel name ("softmax", "transpose", ...; dist-run --calibrate times
  /// them): those kernels are priced by it, not by their bytes at
  /// `memoryGBps` (an exp per element, or a strided walk, is slower than
  /// the bandwidth; a stream whose operands are still in cache is faster).
  std::map<std::string, double> kernelNsPerElement;
  /// Inner mesh axes whose devices fit in a node use `intraNode`, the
  /// others `interNode` (unless `axes` names their link).
  int64_t devicesPerNode = 8;
  std::map<std::string, LinkProfile> links;
  std::string intraNode, interNode;
  /// Mesh axis name -> link kind, overriding the node rule.
  std::map<std::string, std::string> axes;

  /// The GEMM rate for `dtype` and `c`; a dtype the profile lacks uses
  /// f32's.
  double gemmRate(llvm::StringRef dtype, GemmClass c) const;
  /// The link kind of axis `axis` of a mesh (names and sizes outer to
  /// inner).
  llvm::StringRef linkKindFor(llvm::ArrayRef<std::string> axisNames,
                              llvm::ArrayRef<int64_t> axisSizes,
                              int64_t axis) const;
};

/// The names of the built-in profiles ("cpu", "h100", "h200").
llvm::ArrayRef<llvm::StringRef> builtinMachineNames();
/// A built-in profile; an error names the choices.
llvm::Expected<MachineProfile> builtinMachineProfile(llvm::StringRef name);
/// The default: the built-in "cpu" profile.
const MachineProfile &defaultMachineProfile();

/// Parses a profile's JSON text; errors name `path` and the key.
llvm::Expected<MachineProfile> parseMachineProfile(llvm::StringRef text,
                                                   llvm::StringRef path);
/// A built-in name, or a JSON file to read.
llvm::Expected<MachineProfile> loadMachineProfile(llvm::StringRef nameOrPath);
/// loadMachineProfile, shared; an empty name is the default.
llvm::Expected<std::shared_ptr<const MachineProfile>>
loadSharedMachineProfile(llvm::StringRef nameOrPath);

/// The profile as JSON that parseMachineProfile reads back.
void writeMachineProfile(const MachineProfile &profile, llvm::raw_ostream &os);

} // namespace distopt::cost

#endif // DISTOPT_COSTMODEL_MACHINEPROFILE_H
