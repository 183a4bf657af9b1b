//===- Calibrate.cpp - measure this machine for the cost model -----------===//
#include "distopt/Session/Calibrate.h"
#include "distopt/CostModel/CostModel.h"

#include "distrt/distrt.h"
#include "distrt/local_comm.h"
#ifdef DISTRT_HAS_MPI
#include "distrt/mpi_comm.h"
#endif
#ifdef DISTRT_HAS_CUDA
#include "distrt/cuda.h"
#endif

#include "llvm/Support/Format.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <thread>

using namespace distopt;
using llvm::Expected;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError("--calibrate: " + message);
}

llvm::Error fail(const distrt::Status &st, const llvm::Twine &what) {
  return fail(what + ": " + st.ToString());
}

/// Sizes and repetitions: the full run, or a smoke test.
struct MeasurementPlan {
  std::vector<int64_t> gemmSizes;        // small, medium, large
  double gemmSeconds;                    // time each product at least this
  int64_t copyBytes;
  double copySeconds;
  int64_t kernelRows, kernelColumns; // the shape the kernels are timed at
  double kernelSeconds;              // time each kernel at least this
  int64_t coldBytes; // operand sets of at least this, used in turn
  std::vector<std::string> kinds;
  std::vector<int64_t> messageBytes;     // per member
  std::vector<int64_t> localGroups;      // local backend
};

MeasurementPlan planFor(const CalibrationOptions &options, bool gpu) {
  MeasurementPlan p;
  if (options.quick) {
    p.gemmSizes = {16, 128, 256};
    p.gemmSeconds = 0;
    p.copyBytes = 16 << 20;
    p.copySeconds = 0;
    p.kernelRows = 64;
    p.kernelColumns = 32;
    p.kernelSeconds = 0;
    p.coldBytes = 0;
    p.kinds = {"all_reduce", "all_gather"};
    p.messageBytes = {4 << 10, 64 << 10};
    p.localGroups = {2};
    return p;
  }
  // One product per class (cost::classifyGemm): a GPU needs a larger one
  // to reach its peak.
  p.gemmSizes = gpu ? std::vector<int64_t>{64, 512, 4096}
                    : std::vector<int64_t>{64, 256, 1024};
  // A second per product: on a shared machine a quarter second left the
  // rates 15% apart from one calibration to the next (docs/cost-model.md).
  p.gemmSeconds = 1.0;
  p.copyBytes = gpu ? int64_t(1) << 30 : int64_t(256) << 20;
  p.copySeconds = 0.3;
  // Activations of the size a step's are (2 MiB of f32 each).
  p.kernelRows = 1024;
  p.kernelColumns = 512;
  p.kernelSeconds = 0.1;
  // More than a CPU's last-level cache.
  p.coldBytes = int64_t(128) << 20;
  p.kinds = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  p.messageBytes = {4 << 10, 64 << 10, 512 << 10, 4 << 20, 16 << 20};
  p.localGroups = {2, 4};
  return p;
}

/// A host tensor of small values (exact in every dtype measured).
distrt::Tensor filled(distrt::DType dtype, const distrt::Shape &shape,
                      bool positive = false) {
  distrt::Tensor t;
  if (!distrt::Tensor::Allocate(dtype, shape, &t).ok())
    return t;
  for (int64_t i = 0, n = t.num_elements(); i < n; ++i) {
    float v = static_cast<float>((i * 7) % 13 - (positive ? -1 : 6)) / 8.0f;
    switch (dtype) {
    case distrt::DType::kF32:
      t.data<float>()[i] = v;
      break;
    case distrt::DType::kF64:
      t.data<double>()[i] = v;
      break;
    case distrt::DType::kBF16:
      t.data<uint16_t>()[i] = distrt::FloatToBF16(v);
      break;
    case distrt::DType::kF16:
      t.data<uint16_t>()[i] = distrt::FloatToHalf(v);
      break;
    default:
      break;
    }
  }
  return t;
}

/// An executor of a one-instruction program and its operand sets on the
/// device, run set after set.
struct InstructionRunner {
  std::unique_ptr<distrt::Executor> exec;
  std::vector<std::vector<distrt::Tensor>> sets;
  std::vector<distrt::Tensor> out;
  int runs = 0;

  /// `copies` device copies of `inputs`, then a warm-up run (plans,
  /// packing, first touch).
  distrt::Status create(const std::shared_ptr<distrt::Device> &device,
                        std::shared_ptr<const distrt::Program> program,
                        const std::vector<distrt::Tensor> &inputs,
                        size_t copies, int threads) {
    distrt::ExecutorOptions options;
    options.device = device;
    options.allow_host_fallback = false;
    options.profile = true;
    options.threads = threads;
    distrt::Status st =
        distrt::Executor::Create(std::move(program), nullptr, options, &exec);
    sets.assign(copies, std::vector<distrt::Tensor>(inputs.size()));
    for (size_t s = 0; s < copies && st.ok(); ++s)
      for (size_t i = 0; i < inputs.size() && st.ok(); ++i)
        st = inputs[i].CopyTo(device, &sets[s][i]);
    if (st.ok())
      st = exec->Run(sets[0], &out);
    return st;
  }
  distrt::Status runOnce() {
    return exec->Run(sets[runs++ % sets.size()], &out);
  }
};

/// Seconds of one call of the executor's `kernel` in `program` (its one
/// instruction), as the executor's profile times it (waiting for a
/// device): the fastest of the runs, as other work on the machine only
/// slows a run down. The runs take device copies of `inputs` in turn, as
/// many as fill `coldBytes`, so that where that is more than the caches
/// every run reads its operands from memory, as a step's products read
/// operands other ops wrote long before. Meanwhile `neighbours` threads
/// run the same instruction on their own copies, as the other ranks of a
/// host do in a step (sharing its caches and memory bandwidth).
Expected<double>
instructionSeconds(const std::shared_ptr<distrt::Device> &device,
                   const distrt::proto::RankProgram &proto,
                   const std::vector<distrt::Tensor> &inputs,
                   const std::string &kernel, int threads, double atLeast,
                   int64_t coldBytes, int neighbours) {
  std::shared_ptr<const distrt::Program> program;
  if (distrt::Status st =
          distrt::Program::Create(proto, "calibrate", ".", &program);
      !st.ok())
    return fail(st, kernel);
  int64_t bytes = 0;
  for (const distrt::Tensor &t : inputs)
    bytes += static_cast<int64_t>(t.byte_size());
  const size_t copies = static_cast<size_t>(
      std::max<int64_t>(1, coldBytes / std::max<int64_t>(bytes, 1)));
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::vector<std::thread> others;
  for (int i = 0; i < neighbours; ++i)
    others.emplace_back([&] {
      InstructionRunner runner;
      distrt::Status st =
          runner.create(device, program, inputs, copies, threads);
      ready.fetch_add(1);
      while (st.ok() && !stop.load(std::memory_order_relaxed))
        st = runner.runOnce();
    });
  InstructionRunner runner;
  distrt::Status st = runner.create(device, program, inputs, copies, threads);
  while (ready.load() < neighbours)
    std::this_thread::yield();
  double best = 0, total = 0;
  while (st.ok()) {
    runner.exec->ClearProfile();
    if (!(st = runner.runOnce()).ok())
      break;
    for (const distrt::OpTime &t : runner.exec->stats().op_times)
      if (t.op == kernel && t.calls > 0) {
        double s = t.seconds / t.calls;
        best = runner.runs == 1 ? s : std::min(best, s);
        total += t.seconds;
      }
    int runs = runner.runs;
    if (atLeast <= 0 || runs >= 1000 ||
        (total >= atLeast && runs >= 3 &&
         runs >= static_cast<int>(runner.sets.size())))
      break;
  }
  stop = true;
  for (std::thread &t : others)
    t.join();
  if (!st.ok())
    return fail(st, kernel);
  return best;
}

/// Seconds of one n x n x n product in the executor's matmul kernel,
/// operands out of cache.
Expected<double> gemmSeconds(const std::shared_ptr<distrt::Device> &device,
                             distrt::DType dtype, int64_t n, int threads,
                             double atLeast, int64_t coldBytes,
                             int neighbours) {
  distrt::ProgramBuilder b;
  int x = b.Input("a", dtype, {n, n});
  int w = b.Input("b", dtype, {n, n});
  b.Output("c", b.Apply("matmul", {x, w}, dtype, {n, n}));
  return instructionSeconds(device, b.Build(),
                            {filled(dtype, {n, n}), filled(dtype, {n, n})},
                            "matmul", threads, atLeast, coldBytes, neighbours);
}

/// One kernel as dist-run --calibrate times it: an instruction over f32
/// tensors of a step's activation size, rows x columns.
struct KernelSample {
  const char *kernel;
  /// Appends the instruction; returns the inputs' shapes in order (f32;
  /// rank-0 shapes are scalars).
  std::function<std::vector<distrt::Shape>(distrt::ProgramBuilder &,
                                           int64_t rows, int64_t columns)>
      build;
};

/// The kernels whose time per element the profile records: those a
/// training step spends its time in besides the products, priced by their
/// bytes they would be off by a factor of two or more either way.
const std::vector<KernelSample> &kernelSamples() {
  using distrt::AttrFloat;
  using distrt::AttrInt;
  using distrt::AttrInts;
  using distrt::ProgramBuilder;
  using distrt::Shape;
  constexpr distrt::DType f32 = distrt::DType::kF32;
  // y = kernel(inputs) of x's shape, inputs of that shape too; along the
  // rows where `rows` (softmax's axis).
  auto sameShape = [](const char *kernel, int operands, bool rows = false) {
    return KernelSample{
        kernel,
        [kernel, operands, rows](ProgramBuilder &b, int64_t r, int64_t c) {
          std::vector<int> in;
          for (int i = 0; i < operands; ++i)
            in.push_back(b.Input("x" + std::to_string(i), f32, {r, c}));
          int y = rows
                      ? b.Apply(kernel, in, f32, {r, c}, {{"axis", AttrInt(1)}})
                      : b.Apply(kernel, in, f32, {r, c});
          b.Output("y", y);
          return std::vector<Shape>(operands, Shape{r, c});
        }};
  };
  auto reduce = [](const char *kernel) {
    return KernelSample{kernel,
                        [kernel](ProgramBuilder &b, int64_t r, int64_t c) {
                          int x = b.Input("x", f32, {r, c});
                          b.Output("y", b.Apply(kernel, {x}, f32, {r, 1},
                                                {{"axes", AttrInts({1})},
                                                 {"keepdims", AttrInt(1)}}));
                          return std::vector<Shape>{{r, c}};
                        }};
  };
  static const std::vector<KernelSample> samples = {
      sameShape("add", 2),
      sameShape("mul", 2),
      sameShape("sub", 2),
      sameShape("div", 2),
      sameShape("softmax", 1, /*rows=*/true),
      sameShape("softmax_grad", 2, /*rows=*/true),
      sameShape("gelu", 1),
      sameShape("gelu_grad", 2),
      sameShape("sigmoid", 1),
      sameShape("exp", 1),
      reduce("reduce_sum"),
      reduce("reduce_mean"),
      reduce("reduce_max"),
      {"transpose",
       [](ProgramBuilder &b, int64_t r, int64_t c) {
         int x = b.Input("x", f32, {r, c});
         b.Output("y", b.Apply("transpose", {x}, f32, {c, r},
                               {{"perm", AttrInts({1, 0})}}));
         return std::vector<Shape>{{r, c}};
       }},
      {"layer_norm",
       [](ProgramBuilder &b, int64_t r, int64_t c) {
         int x = b.Input("x", f32, {r, c});
         int scale = b.Input("scale", f32, {c});
         int bias = b.Input("bias", f32, {c});
         b.Output("y", b.Apply("layer_norm", {x, scale, bias}, f32, {r, c},
                               {{"axis", AttrInt(-1)}}));
         return std::vector<Shape>{{r, c}, {c}, {c}};
       }},
      {"sum_squares",
       [](ProgramBuilder &b, int64_t r, int64_t c) {
         int x = b.Input("x", f32, {r * c});
         b.Output("y", b.Apply("sum_squares", {x}, f32, {}));
         return std::vector<Shape>{{r * c}};
       }},
      {"adam_update",
       [](ProgramBuilder &b, int64_t r, int64_t c) {
         std::vector<int> in;
         for (const char *name : {"p", "g", "m", "v"})
           in.push_back(b.Input(name, f32, {r * c}));
         for (const char *name : {"grad_scale", "param_scale", "step", "bc2"})
           in.push_back(b.Input(name, f32, {}));
         std::vector<int> out;
         for (const char *name : {"p1", "m1", "v1"})
           out.push_back(b.Value(f32, {r * c}, name));
         b.Op("adam_update", in, out,
              {{"beta1", AttrFloat(0.9)},
               {"beta2", AttrFloat(0.999)},
               {"eps", AttrFloat(1e-8)},
               {"weight_decay", AttrFloat(0.01)}});
         for (size_t i = 0; i < out.size(); ++i)
           b.Output("out" + std::to_string(i), out[i]);
         return std::vector<Shape>{{r * c}, {r * c}, {r * c}, {r * c},
                                   {},      {},      {},      {}};
       }},
  };
  return samples;
}

/// Nanoseconds per element (of the sample's largest tensor) of each
/// kernel of kernelSamples(), its operands out of cache.
Expected<std::map<std::string, double>>
kernelNanoseconds(const std::shared_ptr<distrt::Device> &device,
                  const MeasurementPlan &plan, int threads, int neighbours) {
  std::map<std::string, double> result;
  for (const KernelSample &sample : kernelSamples()) {
    distrt::ProgramBuilder b;
    std::vector<distrt::Shape> shapes =
        sample.build(b, plan.kernelRows, plan.kernelColumns);
    int64_t largest = 1;
    std::vector<distrt::Tensor> inputs;
    for (const distrt::Shape &shape : shapes) {
      largest = std::max(largest, distrt::NumElements(shape));
      // Positive values: Adam's second moment is a sum of squares.
      inputs.push_back(filled(distrt::DType::kF32, shape, /*positive=*/true));
    }
    auto seconds =
        instructionSeconds(device, b.Build(), inputs, sample.kernel, threads,
                           plan.kernelSeconds, plan.coldBytes, neighbours);
    if (!seconds)
      return seconds.takeError();
    result[sample.kernel] = *seconds * 1e9 / static_cast<double>(largest);
  }
  return result;
}

/// Bytes per second of copies within the device (read + write).
Expected<double> copyBandwidth(const std::shared_ptr<distrt::Device> &device,
                               int64_t bytes, double atLeast) {
  void *src = device->Allocate(bytes);
  void *dst = device->Allocate(bytes);
  auto release = [&] {
    if (src)
      device->Free(src);
    if (dst)
      device->Free(dst);
  };
  if (!src || !dst) {
    release();
    return fail("cannot allocate " + llvm::Twine(2 * bytes >> 20) +
                " MiB on " + device->name() + " for the copy");
  }
  distrt::Status st = device->Zero(src, bytes);
  if (st.ok())
    st = device->CopyWithin(dst, src, bytes); // first touch of dst
  if (st.ok())
    st = device->Synchronize();
  // The fastest copy of those that fit in `atLeast` seconds (at least 3).
  int copies = 0;
  double best = 0;
  auto started = Clock::now();
  while (st.ok() && (copies < 3 || secondsSince(started) < atLeast)) {
    auto t0 = Clock::now();
    st = device->CopyWithin(dst, src, bytes);
    if (st.ok())
      st = device->Synchronize();
    double s = secondsSince(t0);
    best = copies == 0 ? s : std::min(best, s);
    ++copies;
  }
  release();
  if (!st.ok())
    return fail(st, "copy on " + device->name());
  return 2.0 * bytes / best;
}

/// Where a collective's buffers live: host memory, or (nccl) the device's.
class Buffers {
public:
  Buffers(std::shared_ptr<distrt::Device> device) : device(std::move(device)) {}
  ~Buffers() {
    for (void *p : blocks)
      device ? device->Free(p) : std::free(p);
  }
  void *get(int64_t bytes) {
    size_t n = std::max<int64_t>(bytes, 64);
    void *p = device ? device->Allocate(n) : std::aligned_alloc(64, (n + 63) / 64 * 64);
    if (p && !device)
      std::memset(p, 0, n);
    else if (p)
      (void)device->Zero(p, n);
    blocks.push_back(p);
    return p;
  }

private:
  std::shared_ptr<distrt::Device> device;
  std::vector<void *> blocks;
};

/// One collective of `kind` on f32 buffers, `bytes` per member (the
/// gathered result for all_gather), over `group`.
distrt::CollectiveCall collectiveCall(const std::string &kind,
                                      const distrt::Group &group, int64_t bytes,
                                      Buffers &buffers) {
  int64_t n = group.size();
  int64_t elements = bytes / 4 / n * n;
  distrt::CollectiveCall call;
  call.group = group;
  call.dtype = distrt::DType::kF32;
  std::vector<int64_t> pieces(n, elements / n);
  if (kind == "all_reduce") {
    call.kind = distrt::CollectiveCall::Kind::kAllReduce;
    call.count = elements;
    call.send = buffers.get(elements * 4);
    call.recv = buffers.get(elements * 4);
  } else if (kind == "all_gather") {
    call.kind = distrt::CollectiveCall::Kind::kAllGather;
    call.counts = pieces;
    call.send = buffers.get(elements / n * 4);
    call.recv = buffers.get(elements * 4);
  } else if (kind == "reduce_scatter") {
    call.kind = distrt::CollectiveCall::Kind::kReduceScatter;
    call.counts = pieces;
    call.send = buffers.get(elements * 4);
    call.recv = buffers.get(elements / n * 4);
  } else {
    call.kind = distrt::CollectiveCall::Kind::kAllToAll;
    call.counts = pieces;
    call.recv_counts = pieces;
    call.send = buffers.get(elements * 4);
    call.recv = buffers.get(elements * 4);
  }
  return call;
}

/// This rank's part of timing every kind and message size over `group`;
/// the group's first member fills `out`. Repetitions depend on the size
/// only, so every member makes the same calls.
distrt::Status timeCollectives(distrt::Communicator *comm,
                               const distrt::Group &group, const MeasurementPlan &plan,
                               bool quick,
                               std::shared_ptr<distrt::Device> device,
                               std::vector<CollectiveMeasurement> *out) {
  Buffers buffers(std::move(device));
  for (const std::string &kind : plan.kinds) {
    for (int64_t bytes : plan.messageBytes) {
      distrt::CollectiveCall call = collectiveCall(kind, group, bytes, buffers);
      if (!call.send || !call.recv)
        return distrt::ResourceExhaustedError(
            "cannot allocate the collective's buffers");
      int reps = quick ? 2
                       : static_cast<int>(std::clamp<int64_t>(
                             (int64_t(16) << 20) / bytes, 3, 200));
      for (int i = 0; i < (quick ? 1 : 2); ++i)
        DISTRT_RETURN_IF_ERROR(comm->Run(call));
      // The fastest of a few rounds of `reps` calls (between barriers):
      // other work on the machine only slows a round down.
      double us = 0;
      for (int round = 0; round < (quick ? 1 : 3); ++round) {
        DISTRT_RETURN_IF_ERROR(comm->Barrier(group));
        auto t0 = Clock::now();
        for (int i = 0; i < reps; ++i)
          DISTRT_RETURN_IF_ERROR(comm->Run(call));
        DISTRT_RETURN_IF_ERROR(comm->Barrier(group));
        double perCall = secondsSince(t0) * 1e6 / reps;
        us = round == 0 ? perCall : std::min(us, perCall);
      }
      if (comm->rank() != group.front())
        continue;
      CollectiveMeasurement m;
      m.kind = kind;
      m.groupSize = group.size();
      m.bytes = call.kind == distrt::CollectiveCall::Kind::kAllGather
                    ? call.counts[0] * group.size() * 4.0
                    : call.SendElements(comm->rank()) * 4.0;
      m.sent = cost::bytesSent(*cost::collectiveNamed(kind), m.bytes,
                               group.size());
      m.us = us;
      out->push_back(m);
    }
  }
  return distrt::Status();
}

/// The local backend: every group size as that many threads.
llvm::Error timeLocal(const MeasurementPlan &plan, bool quick,
                      std::vector<CollectiveMeasurement> *out) {
  for (int64_t n : plan.localGroups) {
    std::shared_ptr<distrt::LocalWorld> world;
    // As dist-train's thread ranks of one thread each wait.
    distrt::LocalCommOptions options;
    options.poll_before_sleeping =
        distrt::ThreadsHaveOwnCores(static_cast<int>(n));
    distrt::Status st =
        distrt::LocalWorld::Create(static_cast<int>(n), options, &world);
    if (!st.ok())
      return fail(st, "local world of " + llvm::Twine(n));
    distrt::Group group;
    for (int r = 0; r < n; ++r)
      group.push_back(r);
    std::vector<distrt::Status> status(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        status[r] = timeCollectives(world->comm(r), group, plan, quick,
                                    nullptr, out);
        if (!status[r].ok())
          world->Abort(r, status[r]);
      });
    for (std::thread &t : threads)
      t.join();
    for (const distrt::Status &s : status)
      if (!s.ok())
        return fail(s, "local backend, " + llvm::Twine(n) + " ranks");
  }
  return llvm::Error::success();
}

/// Group sizes under mpirun: 2, 4, ... and the whole world.
std::vector<int64_t> processGroups(int world, bool quick) {
  std::vector<int64_t> sizes;
  for (int64_t n = 2; n <= world; n *= 2)
    sizes.push_back(n);
  if (world >= 2 && sizes.back() != world)
    sizes.push_back(world);
  if (quick && !sizes.empty())
    sizes.resize(1);
  return sizes;
}

/// mpi or nccl: every process takes part; groups of the first n ranks.
llvm::Error timeProcesses(distrt::Communicator *comm,
                          std::shared_ptr<distrt::Device> device,
                          const MeasurementPlan &plan, bool quick,
                          std::vector<CollectiveMeasurement> *out) {
  distrt::Group world;
  for (int r = 0; r < comm->world_size(); ++r)
    world.push_back(r);
  for (int64_t n : processGroups(comm->world_size(), quick)) {
    distrt::Group group(world.begin(), world.begin() + n);
    if (comm->rank() < n) {
      distrt::Status st =
          timeCollectives(comm, group, plan, quick, device, out);
      if (!st.ok())
        return fail(st, comm->backend() + " backend, " + llvm::Twine(n) +
                            " ranks");
    }
    distrt::Status st = comm->Barrier(world);
    if (!st.ok())
      return fail(st, comm->backend() + " backend");
  }
  return llvm::Error::success();
}

Expected<std::shared_ptr<distrt::Device>>
openDevice(const std::string &spec, int rank) {
  distrt::DeviceSpec parsed;
  distrt::Status st = distrt::ParseDeviceSpec(spec, &parsed);
  if (!st.ok())
    return fail("--device: " + st.message());
  if (parsed.kind == distrt::DeviceKind::kCpu)
    return distrt::CpuDevice();
#ifdef DISTRT_HAS_CUDA
  std::string why;
  int gpus = distrt::CudaDeviceCount(&why);
  if (gpus == 0)
    return fail("--device " + spec + ": " + why);
  int index = spec.find(':') != std::string::npos ? parsed.index : rank % gpus;
  std::shared_ptr<distrt::Device> device;
  st = distrt::OpenCudaDevice(index, &device);
  if (!st.ok())
    return fail(st, "--device " + spec);
  return device;
#else
  (void)rank;
  return fail("--device " + spec + ": this build has no CUDA");
#endif
}

} // namespace

LinkFit distopt::fitAlphaBeta(const std::vector<CollectiveMeasurement> &points) {
  // Minimise sum ((t - alpha - gamma * x) / t)^2, gamma = 1 / beta: relative
  // errors, so the many-microsecond large messages do not drown the small
  // ones that set alpha.
  double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const CollectiveMeasurement &p : points) {
    double w = 1.0 / (p.us * p.us);
    s += w;
    sx += w * p.sent;
    sy += w * p.us;
    sxx += w * p.sent * p.sent;
    sxy += w * p.sent * p.us;
  }
  double alpha = 0, gamma = 0;
  double det = s * sxx - sx * sx;
  if (det > 0) {
    gamma = (s * sxy - sx * sy) / det;
    alpha = (sy - gamma * sx) / s;
  }
  if (alpha < 0 || det <= 0) {
    // Through the origin: no fixed cost measurable.
    alpha = 0;
    gamma = sxx > 0 ? sxy / sxx : 0;
  }
  LinkFit fit;
  fit.points = points.size();
  fit.alphaBeta.groupSize = points.empty() ? 0 : points.front().groupSize;
  fit.alphaBeta.alphaUs = alpha;
  // gamma is microseconds per byte; beta in GB/s = 1e-3 bytes per us.
  fit.alphaBeta.betaGBps = gamma > 0 ? 1.0 / gamma / 1e3 : 1e6;
  for (const CollectiveMeasurement &p : points) {
    double model = alpha + gamma * p.sent;
    fit.maxRelativeError =
        std::max(fit.maxRelativeError, std::abs(model - p.us) / p.us);
  }
  return fit;
}

Expected<CalibrationResult>
distopt::calibrate(const CalibrationOptions &options,
                   const ProcessGroup &processes) {
  auto started = Clock::now();
  CalibrationResult result;
  result.root = processes.rank == 0;
  auto device = openDevice(options.device, processes.rank);
  if (!device)
    return device.takeError();
  bool gpu = (*device)->kind() != distrt::DeviceKind::kCpu;
  MeasurementPlan plan = planFor(options, gpu);
  cost::MachineProfile &profile = result.profile;

  // Compute and memory: the root process alone (the others wait in the
  // collectives' first barrier).
  if (result.root) {
    std::vector<distrt::DType> dtypes =
        gpu ? std::vector<distrt::DType>{distrt::DType::kF32,
                                         distrt::DType::kBF16,
                                         distrt::DType::kF16}
            // bf16 as the host runs it: in bf16 where oneDNN has a bf16
            // GEMM, else widened to f32 (the conversions cost too).
            : std::vector<distrt::DType>{distrt::DType::kF32,
                                         distrt::DType::kBF16,
                                         distrt::DType::kF64};
    const cost::GemmClass classes[] = {cost::GemmClass::Small,
                                       cost::GemmClass::Medium,
                                       cost::GemmClass::Large};
    // A host runs a rank per `threadsPerRank` cores, all computing at once
    // in a step: the products and kernels are timed with the others busy
    // alike, their operands out of cache together. A GPU is one rank's.
    int neighbours = 0;
    if (!gpu) {
      int cores = static_cast<int>(std::thread::hardware_concurrency());
      neighbours =
          std::clamp(cores / std::max(options.threadsPerRank, 1), 1, 64) - 1;
      plan.coldBytes /= neighbours + 1;
    }
    result.busyRanks = neighbours + 1;
    result.coldBytes = plan.coldBytes * result.busyRanks;
    for (distrt::DType dtype : dtypes) {
      std::string name = distrt::DTypeName(dtype);
      for (size_t c = 0; c < 3; ++c) {
        int64_t n = plan.gemmSizes[c];
        auto seconds =
            gemmSeconds(*device, dtype, n, options.threadsPerRank,
                        plan.gemmSeconds, plan.coldBytes, neighbours);
        if (!seconds)
          return seconds.takeError();
        double tflops = *seconds > 0 ? 2.0 * n * n * n / *seconds * 1e-12 : 0;
        result.gemms.push_back({name, classes[c], n, tflops});
        profile.gemmTflops[name][c] = tflops;
      }
    }
    result.copyBytes = plan.copyBytes;
    auto bandwidth = copyBandwidth(*device, plan.copyBytes, plan.copySeconds);
    if (!bandwidth)
      return bandwidth.takeError();
    profile.memoryGBps = *bandwidth / 1e9;
    // The host's kernels (a GPU's are priced by their bytes).
    if (!gpu) {
      auto kernels =
          kernelNanoseconds(*device, plan, options.threadsPerRank, neighbours);
      if (!kernels)
        return kernels.takeError();
      profile.kernelNsPerElement = std::move(*kernels);
    }
  }

  // Collectives over the backend the tool was launched with.
  std::string linkName;
  if (options.backend == Backend::Local) {
    linkName = "local";
    if (auto e = timeLocal(plan, options.quick, &result.collectives))
      return std::move(e);
  } else {
#ifdef DISTRT_HAS_MPI
    std::unique_ptr<distrt::Communicator> comm;
    std::shared_ptr<distrt::Device> buffers;
    distrt::Status st;
    if (options.backend == Backend::Mpi) {
      linkName = "mpi";
      st = distrt::CreateMpiCommunicator(distrt::MpiCommOptions(), &comm);
    } else {
      linkName = "nccl";
#if defined(DISTRT_HAS_CUDA) && defined(DISTRT_HAS_NCCL_MPI)
      if (!gpu)
        return fail("--backend nccl moves device buffers: give --device cuda");
      distrt::NcclCommOptions ncclOptions;
      ncclOptions.device = (*device)->index();
      st = distrt::CreateNcclCommunicatorMpi(ncclOptions, &comm);
      buffers = *device;
#else
      return fail("this build has no NCCL");
#endif
    }
    if (!st.ok())
      return fail(st, linkName + " communicator");
    if (comm->world_size() < 2)
      return fail("one process: run under mpirun -np 2 or more to measure "
                  "the " +
                  linkName + " backend");
    if (auto e = timeProcesses(comm.get(), buffers, plan, options.quick,
                               &result.collectives))
      return std::move(e);
#else
    return fail("this build has no MPI");
#endif
  }
  if (!result.root)
    return result;

  // One alpha and beta per group size.
  cost::LinkProfile link;
  link.backend = linkName;
  std::vector<int64_t> sizes;
  for (const CollectiveMeasurement &m : result.collectives)
    if (!llvm::is_contained(sizes, m.groupSize))
      sizes.push_back(m.groupSize);
  llvm::sort(sizes);
  for (int64_t n : sizes) {
    std::vector<CollectiveMeasurement> points;
    for (const CollectiveMeasurement &m : result.collectives)
      if (m.groupSize == n)
        points.push_back(m);
    result.fits.push_back(fitAlphaBeta(points));
    link.groups.push_back(result.fits.back().alphaBeta);
  }
  profile.links[linkName] = link;
  profile.intraNode = profile.interNode = linkName;
  // What was measured is one machine (or whatever mpirun spanned): every
  // axis takes the measured link.
  profile.devicesPerNode = 1 << 20;
  profile.device = (*device)->Description();
  if (!gpu)
    profile.device += ", " +
                      std::to_string(std::thread::hardware_concurrency()) +
                      " cores";
  profile.device += ", " + std::to_string(options.threadsPerRank) +
                    (options.threadsPerRank == 1 ? " thread" : " threads") +
                    " per rank";
  result.seconds = secondsSince(started);
  char notes[160];
  std::snprintf(notes, sizeof(notes),
                "dist-run --calibrate%s, %s backend, %.1f s%s",
                options.quick ? " --quick" : "", linkName.c_str(),
                result.seconds,
                options.quick ? "; a smoke test, not a usable profile" : "");
  profile.notes = notes;
  profile.name = "calibrated";
  return result;
}

void distopt::printCalibration(const CalibrationResult &r,
                               llvm::raw_ostream &os) {
  const cost::MachineProfile &p = r.profile;
  os << "calibration: " << p.device << "\n";
  os << llvm::format("%-24s", "GEMM TFLOP/s (n^3)");
  std::vector<int64_t> sizes;
  for (const GemmMeasurement &g : r.gemms)
    if (!llvm::is_contained(sizes, g.size))
      sizes.push_back(g.size);
  for (size_t c = 0; c < sizes.size(); ++c)
    os << llvm::format(
        "%16s", (cost::gemmClassName(static_cast<cost::GemmClass>(c)).str() +
                 " n=" + std::to_string(sizes[c]))
                    .c_str());
  os << "\n";
  for (const auto &[dtype, rates] : p.gemmTflops) {
    os << llvm::format("  %-22s", dtype.c_str());
    for (double t : rates)
      os << llvm::format("%16.4g", t);
    os << "\n";
  }
  os << llvm::format("memory: %.3g GB/s (copies of %lld MiB within the "
                     "device, bytes read + written)\n",
                     p.memoryGBps, (long long)(r.copyBytes / (1 << 20)));
  if (!p.kernelNsPerElement.empty()) {
    os << "kernels, ns per f32 element ("
       << (r.coldBytes ? "operands out of cache, " : "") << r.busyRanks
       << (r.busyRanks == 1 ? " rank" : " ranks") << " busy):";
    int column = 0;
    for (const auto &[kernel, ns] : p.kernelNsPerElement)
      os << (column++ % 4 ? "" : "\n ")
         << llvm::format(" %-13s%6.3g", kernel.c_str(), ns);
    os << "\n";
  }
  for (const auto &[name, link] : p.links) {
    os << "collectives, " << name
       << " backend: time = alpha + bytes sent / beta (per call)\n"
       << "  ranks   alpha us   beta GB/s   worst fit   points\n";
    for (const LinkFit &f : r.fits)
      os << llvm::format("  %5lld %10.3g %11.4g %10.0f%% %8d\n",
                         (long long)f.alphaBeta.groupSize, f.alphaBeta.alphaUs,
                         f.alphaBeta.betaGBps, 100 * f.maxRelativeError,
                         f.points);
  }
  os << "  measured (us per call):\n";
  std::vector<std::pair<int64_t, std::string>> rows;
  for (const CollectiveMeasurement &m : r.collectives)
    if (!llvm::is_contained(rows, std::make_pair(m.groupSize, m.kind)))
      rows.push_back({m.groupSize, m.kind});
  for (const auto &[n, kind] : rows) {
    os << llvm::format("  %5lld %-15s", (long long)n, kind.c_str());
    for (const CollectiveMeasurement &m : r.collectives)
      if (m.groupSize == n && m.kind == kind)
        os << llvm::format(" %7.4g MiB: %-8.4g", m.bytes / (1 << 20), m.us);
    os << "\n";
  }
  os << llvm::format("calibrated in %.1f s\n", r.seconds);
}
