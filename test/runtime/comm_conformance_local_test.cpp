// The collective conformance suite (comm_conformance.inc) on the `local`
// backend: n threads of this process on a fresh LocalWorld per run, waiting
// by sleeping at once (`local`) and by polling first (`local_polling`, here
// also with more threads than cores).
#include <thread>

#include "comm_harness.h"
#include "distrt/local_comm.h"

namespace distrt {
namespace testing {
namespace {

class LocalHarness : public CommHarness {
 public:
  explicit LocalHarness(bool polling) : polling_(polling) {}
  std::string name() const override { return polling_ ? "local_polling" : "local"; }
  int max_ranks() const override { return 8; }
  std::vector<Status> Run(int n, const RankFn& fn) override {
    std::shared_ptr<LocalWorld> world;
    LocalCommOptions opts;
    opts.timeout = std::chrono::seconds(20);
    opts.poll_before_sleeping = polling_;
    Status created = LocalWorld::Create(n, opts, &world);
    if (!created.ok()) return std::vector<Status>(static_cast<size_t>(n), created);
    std::vector<Status> st(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        st[r] = fn(r, world->comm(r));
        // A failed rank wakes its peers, as the executor does.
        if (!st[r].ok())
          world->comm(r)->Abort(st[r]);
        else
          world->MarkFinished(r);
      });
    }
    for (auto& t : threads) t.join();
    return st;
  }

 private:
  bool polling_;
};

const bool registered = [] {
  RegisterHarness(std::unique_ptr<CommHarness>(new LocalHarness(false)));
  RegisterHarness(std::unique_ptr<CommHarness>(new LocalHarness(true)));
  return true;
}();

}  // namespace
}  // namespace testing
}  // namespace distrt

#define DISTRT_CONFORMANCE_BACKENDS "local", "local_polling"
#include "comm_conformance.inc"
