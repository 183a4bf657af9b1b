//===- RunFlags.cpp - the flags of the tools that run programs --*- C++ -*-===//
#include "distopt/Session/RunFlags.h"
#include "distopt/Driver/CompileFlags.h"
#include "distopt/Fusion/TargetDescription.h"

using namespace llvm;

static cl::opt<std::string> backendName(
    "backend",
    cl::desc("communicator: local (every rank a thread of this process), mpi "
             "(one process per rank: mpirun -np N <tool> ...) or nccl (one "
             "process per GPU under mpirun)"),
    cl::value_desc("local|mpi|nccl"), cl::init("local"),
    cl::cat(distopt::compileFlagsCategory()));

StringRef distopt::backendFlag() { return backendName; }

static cl::opt<bool> profile(
    "profile",
    cl::desc("time every instruction of every rank and print, per op kind, "
             "calls and milliseconds per run and the share of the run, then "
             "the slowest instructions (--profile-top; costs a clock read per "
             "instruction)"),
    cl::cat(distopt::compileFlagsCategory()));

bool distopt::profileFlag() { return profile; }

static cl::opt<unsigned> profileTop(
    "profile-top",
    cl::desc("with --profile: how many of each rank's slowest instructions "
             "to list (default 10)"),
    cl::value_desc("N"), cl::init(10),
    cl::cat(distopt::compileFlagsCategory()));

unsigned distopt::profileTopFlag() { return profileTop; }

static cl::opt<std::string> deviceName(
    "device",
    cl::desc("where the ranks run: cpu, cuda (rank r on GPU r % GPUs; under "
             "mpirun the process's rank on its node) or cuda:N (every rank on "
             "GPU N); "
             "ranks sharing GPUs on the local or mpi backend exchange "
             "collectives through the host"),
    cl::value_desc("cpu|cuda|cuda:N"), cl::init("cpu"),
    cl::cat(distopt::compileFlagsCategory()));

static cl::opt<std::string> fusionTarget(
    "fusion-target",
    cl::desc("compile for the fused forms of these kernels instead of the "
             "device's: cpu, cuda or none (nothing fused; docs/runtime.md)"),
    cl::value_desc("cpu|cuda|none"), cl::cat(distopt::compileFlagsCategory()));

static cl::opt<bool> noHostFallback(
    "no-host-fallback",
    cl::desc("on a GPU, fail naming the first instruction that has no "
             "device kernel instead of running it on the host"),
    cl::cat(distopt::compileFlagsCategory()));

Expected<distopt::RunSettings>
distopt::runSettingsFromFlags(int threadsPerRank) {
  auto backend = parseBackend(backendName);
  if (!backend)
    return backend.takeError();
  RunSettings settings;
  settings.backend = *backend;
  settings.threadsPerRank = threadsPerRank;
  settings.profile = profile;
  settings.device.device = deviceName;
  settings.device.hostFallback = !noHostFallback;
  settings.fusionTarget = fusionTarget;
  return settings;
}

Error distopt::compileForDevice(CompileOptions &options,
                               const RunSettings &settings) {
  if (!settings.fusionTarget.empty()) {
    if (!lookupTargetDescription(settings.fusionTarget))
      return createStringError("--fusion-target " + settings.fusionTarget +
                               ": expected one of " + targetNames());
    options.target = settings.fusionTarget;
    return Error::success();
  }
  StringRef device = settings.backend == distopt::Backend::Nccl
                         ? StringRef("cuda")
                         : StringRef(settings.device.device);
  if (const TargetDescription *t = targetForDevice(device))
    options.target = t->name.str();
  return Error::success();
}

const char *const distopt::kRunHelpTail =
    "  --threads=<N>  compute threads per rank (default 1)\n\n"
    "Environment:\n"
    "  DISTRT_GEMM=openblas    every GEMM on OpenBLAS (default: oneDNN where "
    "it is faster, docs/runtime.md \"Matmul\")\n"
    "  DISTRT_PACK_WEIGHTS=0   constant weights not packed for the GEMM "
    "(slower inference)\n"
    "  OPENBLAS_CORETYPE       OpenBLAS's kernel set (e.g. Haswell)\n"
    "  DISTRT_CUDA_TF32=1      on a GPU, f32 matmuls on TF32 tensor cores "
    "(default: exact FP32)\n";

Expected<int> distopt::takeThreadsFlag(int &argc, char **argv) {
  int threads = 1, out = 1;
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    StringRef value;
    if (arg == "--threads" || arg == "-threads") {
      if (i + 1 >= argc)
        return createStringError("--threads needs a value");
      value = argv[++i];
    } else if (arg.consume_front("--threads=") ||
               arg.consume_front("-threads=")) {
      value = arg;
    } else {
      argv[out++] = argv[i];
      continue;
    }
    if (value.getAsInteger(10, threads) || threads < 1)
      return createStringError(
          "--threads needs a positive number of compute threads per rank");
  }
  argc = out;
  return threads;
}
