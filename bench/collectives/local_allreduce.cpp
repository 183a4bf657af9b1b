// `local` all-reduce (sum, f32) on N threads of one process, and a memcpy
// bandwidth baseline of the same buffer size.
//   bench_local_allreduce [bytes] [ranks] [iterations]
// Prints "local_allreduce_ms <median ms per all-reduce>" and
// "memcpy_ms <median ms to copy the buffer once>".
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "bench_util.h"
#include "distrt/local_comm.h"

using namespace distrt; // NOLINT

int main(int argc, char **argv) {
  const int64_t bytes = argc > 1 ? std::atoll(argv[1]) : (4 << 20);
  const int ranks = argc > 2 ? std::atoi(argv[2]) : 2;
  const int iters = argc > 3 ? std::atoi(argv[3]) : 50;
  const int64_t count = bytes / 4;

  std::shared_ptr<LocalWorld> world;
  if (!LocalWorld::Create(ranks, LocalCommOptions(), &world).ok())
    return 1;
  Group group;
  for (int r = 0; r < ranks; ++r)
    group.push_back(r);
  std::vector<std::vector<float>> in(ranks), out(ranks);
  std::vector<std::vector<double>> times(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      in[r].assign(static_cast<size_t>(count), 1.0f + r);
      out[r].assign(static_cast<size_t>(count), 0.0f);
      Communicator *c = world->comm(r);
      for (int it = -5; it < iters; ++it) { // 5 warm-up rounds
        (void)c->Barrier(group);
        const double t0 = NowSeconds();
        Status st = c->AllReduce(group, in[r].data(), out[r].data(), count,
                                 DType::kF32, ReduceOp::kSum);
        const double t1 = NowSeconds();
        if (!st.ok()) {
          std::fprintf(stderr, "%s\n", st.ToString().c_str());
          std::exit(1);
        }
        if (it >= 0)
          times[r].push_back(t1 - t0);
      }
    });
  }
  for (auto &t : threads)
    t.join();
  const float want = ranks * (ranks + 1) / 2.0f;
  for (int r = 0; r < ranks; ++r) {
    if (out[r][0] != want || out[r][count - 1] != want) {
      std::fprintf(stderr, "wrong result on rank %d\n", r);
      return 1;
    }
  }
  // The slowest rank of each round is the collective's time.
  std::vector<double> rounds(static_cast<size_t>(iters));
  for (int it = 0; it < iters; ++it) {
    for (int r = 0; r < ranks; ++r)
      rounds[it] = std::max(rounds[it], times[r][it]);
  }

  std::vector<char> a(static_cast<size_t>(bytes), 1),
      b(static_cast<size_t>(bytes), 0);
  std::vector<double> copies;
  for (int it = -5; it < iters; ++it) {
    a[static_cast<size_t>(it + 5) % a.size()] = static_cast<char>(it);
    const double t0 = NowSeconds();
    std::memcpy(b.data(), a.data(), a.size());
    const double t1 = NowSeconds();
    if (it >= 0)
      copies.push_back(t1 - t0);
  }
  if (b[0] == 42)
    std::printf(" "); // keep the copy

  std::printf("local_allreduce_ms %.4f\n", Median(rounds) * 1e3);
  std::printf("memcpy_ms %.4f\n", Median(copies) * 1e3);
  return 0;
}
