// distrt-gemm-bench: GFLOP/s of the executor's matmul instruction on the
// products of a training step (forward Y = X W, input gradient dX = dY W^T,
// weight gradient dW = X^T dY), one thread by default, inputs already made. For
// bench/runtime/gemm.sh, which runs it once with the executor's own choice
// of library and once with DISTRT_GEMM=openblas.
//
//   distrt-gemm-bench [--seconds S] [--dtype f32|bf16] [--threads N]
//                     [M K N ...]
//
// Each product is timed as the fastest of the runs that fit in S seconds
// (default 0.3), and of at least 3, after a warm-up run: a product slower
// than S was timed once, and its first runs still pay first-use costs (the
// [50257 x 768] f32 weight gradient took 0.5 s once, 56 ms from its third
// run on). Without shapes: the linear layers of
// bench/auto's GPT (1024 tokens, d 256, vocabulary 2048) and of GPT-2-small
// at 1024 tokens (d 768). --dtype bf16 times the bf16 products a bf16
// training step runs (operands and result in bf16); --threads N runs each
// product on N threads of the executor's pool, as a step at N threads does.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "distrt/distrt.h"

namespace {

using namespace distrt;
using Clock = std::chrono::steady_clock;

struct Product {
  const char* what;
  int64_t m, k, n;
  bool ta, tb;  // the stored lhs is [k x m] / the stored rhs is [n x k]
};

// Seconds of the fastest run of op(A)[m x k] op(B)[k x n]; negative on error.
double Fastest(const Product &p, DType dtype, int threads, double seconds) {
  ProgramBuilder b;
  int x = b.Input("a", dtype, p.ta ? Shape{p.k, p.m} : Shape{p.m, p.k});
  int w = b.Input("b", dtype, p.tb ? Shape{p.n, p.k} : Shape{p.k, p.n});
  b.Output("c", b.Apply("matmul", {x, w}, dtype, {p.m, p.n},
                        {{"transpose_lhs", AttrInt(p.ta)},
                         {"transpose_rhs", AttrInt(p.tb)}}));
  std::shared_ptr<const Program> program;
  Status st = Program::Create(b.Build(), "gemm", ".", &program);
  ExecutorOptions options;
  options.threads = threads;
  std::unique_ptr<Executor> exec;
  if (st.ok()) st = Executor::Create(program, nullptr, options, &exec);
  std::vector<Tensor> inputs(2), out;
  for (int i = 0; i < 2 && st.ok(); ++i) {
    st = Tensor::Allocate(dtype,
                          i == 0 ? (p.ta ? Shape{p.k, p.m} : Shape{p.m, p.k})
                                 : (p.tb ? Shape{p.n, p.k} : Shape{p.k, p.n}),
                          &inputs[i]);
    for (int64_t j = 0, e = st.ok() ? inputs[i].num_elements() : 0; j < e;
         ++j) {
      const float v =
          static_cast<float>((j * 7 + i) % 13 - 6) / 8.0f; // exact in bf16
      if (dtype == DType::kBF16)
        inputs[i].data<uint16_t>()[j] = FloatToBF16(v);
      else
        inputs[i].data<float>()[j] = v;
    }
  }
  if (st.ok()) st = exec->Run(inputs, &out);  // warm-up
  if (!st.ok()) {
    std::fprintf(stderr, "distrt-gemm-bench: %s\n", st.ToString().c_str());
    return -1;
  }
  double best = 1e30, total = 0;
  int runs = 0;
  do {
    auto t0 = Clock::now();
    st = exec->Run(inputs, &out);
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!st.ok()) return -1;
    best = std::min(best, s);
    total += s;
    ++runs;
  } while (total < seconds || runs < 3);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const char *usage = "usage: distrt-gemm-bench [--seconds S] [--dtype "
                      "f32|bf16] [--threads N] [M K N ...]\n";
  // Each run returns its product in a fresh buffer, which past glibc's
  // mmap threshold is a new mapping whose pages fault in as the GEMM first
  // writes them; a training step's executor reuses its buffers and does not
  // pay that. Keeping freed memory in the heap lets each run reuse the last
  // one's pages (GPT-2-small's vocabulary-head products in f32: 153-170 ->
  // 163-178 GFLOP/s).
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  double seconds = 0.3;
  DType dtype = DType::kF32;
  int threads = 1;
  std::vector<Product> products;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
      const std::string name = argv[++i];
      if (name != "f32" && name != "bf16") {
        std::fprintf(
            stderr,
            "distrt-gemm-bench: --dtype takes f32 or bf16, not '%s'\n%s",
            name.c_str(), usage);
        return 2;
      }
      dtype = name == "bf16" ? DType::kBF16 : DType::kF32;
    } else if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
      if (threads <= 0) {
        std::fprintf(stderr,
                     "distrt-gemm-bench: --threads takes a positive count\n%s",
                     usage);
        return 2;
      }
    } else if (i + 2 < argc) {
      int64_t m = std::atoll(argv[i]), k = std::atoll(argv[i + 1]), n = std::atoll(argv[i + 2]);
      if (m <= 0 || k <= 0 || n <= 0) {
        std::fputs(usage, stderr);
        return 2;
      }
      products.push_back({"Y = X W", m, k, n, false, false});
      products.push_back({"dX = dY W^T", m, n, k, false, true});
      products.push_back({"dW = X^T dY", k, m, n, true, false});
      i += 2;
    } else {
      std::fputs(usage, stderr);
      return 2;
    }
  }
  if (products.empty()) {
    // tokens x in x out of each linear layer, and its two gradients.
    const int64_t layers[][3] = {{1024, 256, 768},  {1024, 256, 1024}, {1024, 1024, 256},
                                 {1024, 256, 2048}, {1024, 768, 2304}, {1024, 768, 3072},
                                 {1024, 3072, 768}};
    for (const auto& l : layers) {
      products.push_back({"Y = X W", l[0], l[1], l[2], false, false});
      products.push_back({"dX = dY W^T", l[0], l[2], l[1], false, true});
      products.push_back({"dW = X^T dY", l[1], l[0], l[2], true, false});
    }
  }
  const char* choice = std::getenv("DISTRT_GEMM");
  std::printf("GEMM: %s\n", choice && std::strcmp(choice, "openblas") == 0
                                ? "OpenBLAS only (DISTRT_GEMM=openblas)"
                                : "the executor's choice");
  std::printf("dtype: %s, threads: %d", DTypeName(dtype).c_str(), threads);
  if (dtype == DType::kBF16) {
    const std::string kernel = OneDnnBF16GemmName();
    std::printf(", bf16 products: %s",
                kernel.empty() ? "via f32" : kernel.c_str());
  }
  std::printf("\n");
  std::printf("%-12s %6s %6s %6s %9s\n", "product", "M", "K", "N", "GFLOP/s");
  for (const Product& p : products) {
    double s = Fastest(p, dtype, threads, seconds);
    if (s < 0) return 1;
    std::printf("%-12s %6lld %6lld %6lld %9.1f\n", p.what, static_cast<long long>(p.m),
                static_cast<long long>(p.k), static_cast<long long>(p.n),
                2.0 * p.m * p.k * p.n / s / 1e9);
  }
  return 0;
}
