// A small fork-join pool for intra-op parallelism inside one rank.
#ifndef DISTRT_SRC_THREAD_POOL_H_
#define DISTRT_SRC_THREAD_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace distrt {

// A non-owning reference to a callable fn(begin, end): unlike
// std::function it never allocates, so a parallel loop costs no malloc.
// The callable must outlive the call it is passed to.
class RangeFn {
 public:
  template <typename F>
  RangeFn(const F& f)  // NOLINT: implicit, lambdas convert at call sites
      : obj_(&f),
        call_([](const void* o, int64_t b, int64_t e) { (*static_cast<const F*>(o))(b, e); }) {}
  void operator()(int64_t begin, int64_t end) const { call_(obj_, begin, end); }

 private:
  const void* obj_;
  void (*call_)(const void*, int64_t, int64_t);
};

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
  void ParallelFor(int64_t n, int64_t grain, RangeFn fn);

 private:
  void WorkerLoop(int index);

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  const RangeFn* fn_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> chunks_;
  // Written under mu_; atomic so that waiters can spin on them briefly
  // before blocking (a futex wake-up costs more than a small op).
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

// Runs fn over [0, n) with `pool` if given and the work is big enough, else
// inline. `grain`: minimum items per chunk.
void ParallelFor(ThreadPool* pool, int64_t n, int64_t grain, RangeFn fn);

}  // namespace distrt

#endif  // DISTRT_SRC_THREAD_POOL_H_
