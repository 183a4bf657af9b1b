// A small fork-join pool for intra-op parallelism inside one rank.
#ifndef DISTRT_SRC_THREAD_POOL_H_
#define DISTRT_SRC_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace distrt {

class ThreadPool {
 public:
  // `threads` = total workers including the calling thread (>= 1).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return threads_; }

  // Splits [0, n) into at most size() contiguous chunks of at least `grain`
  // items and runs fn(begin, end) on them; the calling thread takes one.
  // Returns when all chunks are done. Not reentrant (call from one thread).
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void WorkerLoop(int index);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> chunks_;
  // Written under mu_; atomic so that waiters can spin on them briefly
  // before blocking (a futex wake-up costs more than a small op).
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

// Runs fn over [0, n) with `pool` if given and the work is big enough, else
// inline. `grain`: minimum items per chunk.
void ParallelFor(ThreadPool* pool, int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)>& fn);

}  // namespace distrt

#endif  // DISTRT_SRC_THREAD_POOL_H_
