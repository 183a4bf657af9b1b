#include "thread_pool.h"

#include <algorithm>

#include "spin_wait.h"

namespace distrt {
namespace {

// How long a waiter polls before it blocks on the condition variable: about
// the length of a small op, short enough that idle workers give the core
// back (the pool may share cores with other processes).
constexpr int kSpinIterations = 1000;  // some 20-40 us

}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(std::max(1, threads)) {
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    std::pair<int64_t, int64_t> chunk;
    const RangeFn* fn;
    SpinFor(kSpinIterations, [&] { return stop_.load() || generation_.load() != seen; });
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (static_cast<size_t>(index) >= chunks_.size()) continue;
      chunk = chunks_[static_cast<size_t>(index)];
      fn = fn_;
    }
    (*fn)(chunk.first, chunk.second);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
}

void ThreadPool::ParallelFor(int64_t n, int64_t grain, RangeFn fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int64_t chunks = std::min<int64_t>(threads_, (n + grain - 1) / grain);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  std::pair<int64_t, int64_t> mine;
  {
    // chunks_ keeps its capacity between calls: no allocation here.
    std::lock_guard<std::mutex> lock(mu_);
    chunks_.clear();
    int64_t base = n / chunks, extra = n % chunks, start = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      int64_t len = base + (c < extra ? 1 : 0);
      chunks_.emplace_back(start, start + len);
      start += len;
    }
    mine = chunks_[0];
    fn_ = &fn;
    pending_ = static_cast<int>(chunks - 1);
    ++generation_;
  }
  work_cv_.notify_all();
  fn(mine.first, mine.second);
  SpinFor(kSpinIterations, [&] { return pending_.load() == 0; });
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  chunks_.clear();
  fn_ = nullptr;
}

void ParallelFor(ThreadPool* pool, int64_t n, int64_t grain, RangeFn fn) {
  if (pool == nullptr || pool->size() <= 1 || n <= grain) {
    if (n > 0) fn(0, n);
    return;
  }
  pool->ParallelFor(n, grain, fn);
}

}  // namespace distrt
