// distrt-gemm-rate: the rate distrt's matmul kernel reaches on a device, per
// dtype and shape, through the executor (the path a training step takes):
// one program per case, a matmul of two inputs already on the device, its
// instruction timed by the executor's profile (which waits for the device
// after it) over runs after warm-up runs. Prints TFLOP/s per case.
//
//   distrt-gemm-rate [--device cuda|cpu] [--runs N] [--tokens T]
//
// Shapes: a square 4096 product and GPT-2-small's linear layers at T tokens
// (default 8 x 1024; qkv, attention output, MLP up, MLP down, the LM head).
// On a CPU (one thread) --tokens 1024 keeps a run to seconds.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "distrt/cuda.h"
#include "distrt/distrt.h"

namespace {

using namespace distrt;

struct Case {
  const char* name;
  int64_t m, k, n;
};

std::vector<Case> Cases(int64_t tokens) {
  return {{"square 4096", 4096, 4096, 4096},    {"gpt2 qkv", tokens, 768, 2304},
          {"gpt2 attn out", tokens, 768, 768},  {"gpt2 mlp up", tokens, 768, 3072},
          {"gpt2 mlp down", tokens, 3072, 768}, {"gpt2 lm head", tokens, 768, 50257}};
}

// A host tensor of small values (exact in every dtype measured).
Tensor Filled(DType dtype, const Shape& shape) {
  Tensor t;
  if (!Tensor::Allocate(dtype, shape, &t).ok()) return t;
  const int64_t n = t.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>((i * 7) % 13 - 6) / 8.0f;
    switch (dtype) {
      case DType::kF32:
        t.data<float>()[i] = v;
        break;
      case DType::kBF16:
        t.data<uint16_t>()[i] = FloatToBF16(v);
        break;
      case DType::kF16:
        t.data<uint16_t>()[i] = FloatToHalf(v);
        break;
      default:
        break;
    }
  }
  return t;
}

int Run(const std::shared_ptr<Device>& device, int runs, int64_t tokens) {
  std::printf("device: %s\n", device->Description().c_str());
  std::printf("%-16s %-5s %22s %10s %10s\n", "case", "dtype", "m x k x n", "ms", "TFLOP/s");
  for (const Case& c : Cases(tokens)) {
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      ProgramBuilder b;
      const int x = b.Input("a", dtype, {c.m, c.k});
      const int w = b.Input("b", dtype, {c.k, c.n});
      b.Output("c", b.Apply("matmul", {x, w}, dtype, {c.m, c.n}));
      std::shared_ptr<const Program> program;
      Status st = Program::Create(b.Build(), "gemm-rate", ".", &program);
      ExecutorOptions options;
      options.device = device;
      options.allow_host_fallback = false;
      options.profile = true;
      std::unique_ptr<Executor> exec;
      if (st.ok()) st = Executor::Create(program, nullptr, options, &exec);
      // Inputs on the device once, so the runs time the product alone.
      std::vector<Tensor> inputs(2);
      if (st.ok()) st = Filled(dtype, {c.m, c.k}).CopyTo(device, &inputs[0]);
      if (st.ok()) st = Filled(dtype, {c.k, c.n}).CopyTo(device, &inputs[1]);
      std::vector<Tensor> out;
      for (int i = 0; i < 3 && st.ok(); ++i) st = exec->Run(inputs, &out);
      if (st.ok()) exec->ClearProfile();
      for (int i = 0; i < runs && st.ok(); ++i) st = exec->Run(inputs, &out);
      double s = 0;
      for (const OpTime& t : exec->stats().op_times)
        if (t.op == "matmul" && t.calls > 0) s = t.seconds / t.calls;
      char shape[64];
      std::snprintf(shape, sizeof(shape), "%lld x %lld x %lld", static_cast<long long>(c.m),
                    static_cast<long long>(c.k), static_cast<long long>(c.n));
      if (!st.ok()) {
        std::printf("%-16s %-5s %22s  error: %s\n", c.name, DTypeName(dtype).c_str(), shape,
                    st.ToString().c_str());
        continue;
      }
      std::printf("%-16s %-5s %22s %10.3f %10.3f\n", c.name, DTypeName(dtype).c_str(), shape,
                  s * 1e3, 2.0 * c.m * c.k * c.n / s * 1e-12);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device = "cuda";
  int runs = 20;
  int64_t tokens = 8192;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      device = argv[++i];
    } else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--tokens") && i + 1 < argc && std::atoll(argv[i + 1]) > 0) {
      tokens = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: distrt-gemm-rate [--device cuda|cpu] [--runs N] [--tokens T]\n");
      return 2;
    }
  }
  std::shared_ptr<Device> dev = CpuDevice();
  if (device != "cpu") {
    Status st = OpenCudaDevice(0, &dev);
    if (!st.ok()) {
      std::fprintf(stderr, "distrt-gemm-rate: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  return Run(dev, runs < 1 ? 1 : runs, tokens);
}
