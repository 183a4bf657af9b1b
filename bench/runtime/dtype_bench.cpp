// distrt-dtype-bench: one rank program timed in f32 and with its f32 values
// made bf16 (or f16): the same instructions and weights (stored f32, rounded
// at load), the activations in the 16-bit dtype. For bench/runtime/run.sh's
// bf16 line; a compiler precision policy makes such programs properly, this
// only retypes an exported inference program.
//
//   distrt-dtype-bench rank-0.pb [--dtype bf16|f16|f32] [--threads N]
//                      [--runs N] [--ids BOUND] [--profile]
//
// Prints median_ms over the runs after a first one (and median_cpu_ms, the
// process's CPU time per run: steadier than wall time on a shared machine),
// the weight bytes, the
// run's peak live bytes, how many instructions ran as f32 with conversions,
// and with --profile the five op kinds that took longest.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "distrt/distrt.h"

namespace {

using namespace distrt;

// Every f32 value, constant and argument of `p` becomes `dtype` (weights
// keep their stored dtype: the loader rounds them).
void Retype(proto::RankProgram& p, DType dtype) {
  const auto f32 = static_cast<proto::DType>(DType::kF32);
  const auto to = static_cast<proto::DType>(dtype);
  for (proto::Value& v : *p.mutable_values())
    if (v.type().dtype() == f32) v.mutable_type()->set_dtype(to);
  for (proto::Constant& c : *p.mutable_constants()) {
    proto::Tensor& t = *c.mutable_tensor();
    if (t.type().dtype() != f32) continue;
    const std::string& bytes = t.data();
    const size_t n = bytes.size() / 4;
    std::string narrow(n * 2, '\0');
    for (size_t i = 0; i < n; ++i) {
      float x;
      std::memcpy(&x, bytes.data() + 4 * i, 4);
      const uint16_t h = dtype == DType::kBF16 ? FloatToBF16(x) : FloatToHalf(x);
      std::memcpy(&narrow[2 * i], &h, 2);
    }
    t.set_data(narrow);
    t.mutable_type()->set_dtype(to);
  }
  for (auto* args : {p.mutable_inputs(), p.mutable_outputs()})
    for (proto::Argument& a : *args)
      if (a.dtype() == f32) a.set_dtype(to);
}

// Inputs: floats in [-1, 1), integers (token ids) in [0, ids).
Status MakeInputs(const Program& p, int64_t ids, std::vector<Tensor>* out) {
  for (int i = 0; i < p.proto().inputs_size(); ++i) {
    const TensorType& t = p.value(p.InputValue(i)).type;
    Tensor x;
    DISTRT_RETURN_IF_ERROR(Tensor::Allocate(t.dtype, t.shape, &x));
    for (int64_t k = 0; k < x.num_elements(); ++k) {
      const float f = static_cast<float>((k * 37) % 101) / 50.5f - 1.0f;
      switch (t.dtype) {
        case DType::kF32: x.data<float>()[k] = f; break;
        case DType::kBF16: x.data<uint16_t>()[k] = FloatToBF16(f); break;
        case DType::kF16: x.data<uint16_t>()[k] = FloatToHalf(f); break;
        case DType::kI64: x.data<int64_t>()[k] = (k * 7) % ids; break;
        case DType::kI32: x.data<int32_t>()[k] = static_cast<int32_t>((k * 7) % ids); break;
        default: break;
      }
    }
    out->push_back(std::move(x));
  }
  return OkStatus();
}

int Fail(const Status& st) {
  std::fprintf(stderr, "distrt-dtype-bench: %s\n", st.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, dtype_name = "bf16";
  int threads = 1, runs = 10;
  int64_t ids = 96;
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--dtype" && more) {
      dtype_name = argv[++i];
    } else if (a == "--threads" && more) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--runs" && more) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--ids" && more) {
      ids = std::atoll(argv[++i]);
    } else if (a == "--profile") {
      profile = true;
    } else if (path.empty() && a[0] != '-') {
      path = a;
    } else {
      std::fprintf(stderr,
                   "usage: distrt-dtype-bench rank-0.pb [--dtype bf16|f16|f32] [--threads N] "
                   "[--runs N] [--ids BOUND] [--profile]\n");
      return 2;
    }
  }
  if (path.empty() || runs < 1 || threads < 1 || ids < 1)
    return Fail(InvalidArgumentError("give a rank program, and positive counts"));
  DType dtype;
  Status st = ParseDType(dtype_name, &dtype);
  if (!st.ok()) return Fail(st);
  if (dtype != DType::kF32 && dtype != DType::kBF16 && dtype != DType::kF16)
    return Fail(InvalidArgumentError("--dtype must be f32, bf16 or f16, got ", dtype_name));
  std::shared_ptr<const Program> loaded, program;
  if (!(st = LoadProgram(path, &loaded)).ok()) return Fail(st);
  proto::RankProgram proto = loaded->proto();
  if (dtype != DType::kF32) Retype(proto, dtype);
  if (!(st = Program::Create(std::move(proto), path, loaded->base_dir(), &program)).ok())
    return Fail(st);
  ExecutorOptions options;
  options.threads = threads;
  options.profile = profile;
  std::unique_ptr<Executor> e;
  if (!(st = Executor::Create(program, nullptr, options, &e)).ok()) return Fail(st);
  std::vector<Tensor> inputs, outputs;
  if (!(st = MakeInputs(*program, ids, &inputs)).ok()) return Fail(st);
  if (!(st = e->Run(inputs, &outputs)).ok()) return Fail(st);  // warm-up
  e->ClearProfile();
  auto cpu_ms = [] {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
  };
  std::vector<double> ms, cpu;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_ms();
    if (!(st = e->Run(inputs, &outputs)).ok()) return Fail(st);
    cpu.push_back(cpu_ms() - c0);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::sort(cpu.begin(), cpu.end());
  const RunStats& s = e->stats();
  std::printf("dtype: %s, threads: %d, instructions: %lld, as f32 with conversions: %lld\n",
              dtype_name.c_str(), threads, static_cast<long long>(program->num_instructions()),
              static_cast<long long>(s.instructions_via_f32));
  std::printf("weights: %.1f MiB, peak live: %.1f MiB\n", s.weight_bytes / 1048576.0,
              s.peak_live_bytes / 1048576.0);
  if (profile) {
    std::vector<OpTime> times = s.op_times;
    std::sort(times.begin(), times.end(),
              [](const OpTime& a, const OpTime& b) { return a.seconds > b.seconds; });
    for (size_t i = 0; i < times.size() && i < 5; ++i)
      std::printf("  %-16s %8.2f ms per run\n", times[i].op.c_str(),
                  1e3 * times[i].seconds / std::max<int64_t>(1, s.profiled_runs));
  }
  std::printf("median_cpu_ms: %.3f\n", cpu[cpu.size() / 2]);
  std::printf("median_ms: %.3f\n", ms[ms.size() / 2]);
  return 0;
}
