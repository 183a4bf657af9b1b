// How the collective conformance suite (comm_conformance_test.cpp) reaches a
// communicator backend. Each test binary registers the harnesses of the
// backends it can run (local: threads in this process; mpi: this process is
// one rank of an mpirun job; nccl: one GPU per thread) and instantiates the
// suite for them. Test bodies are SPMD: a RankFn runs as every rank, checks
// its own results and returns a Status; the harness returns every rank's
// status (on every process) so all processes reach the same verdict.
#ifndef DISTRT_TEST_COMM_HARNESS_H_
#define DISTRT_TEST_COMM_HARNESS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "distrt/communicator.h"
#include "expect_has.h"

namespace distrt {
namespace testing {

using RankFn = std::function<Status(int rank, Communicator* comm)>;

class CommHarness {
 public:
  virtual ~CommHarness() = default;
  virtual std::string name() const = 0;
  // The most ranks a test may ask for (local: 8; mpi: the mpirun -np).
  virtual int max_ranks() const = 0;
  // Runs fn as ranks 0..n-1 (ranks >= n, if any, idle) and returns the n
  // statuses. On a failure, ranks are not left waiting for the failed one:
  // the harness aborts its communicator (local) or the body returns only
  // after every member agreed to fail (mpi mismatch checks).
  virtual std::vector<Status> Run(int n, const RankFn& fn) = 0;
  // False when this backend cannot run here (e.g. no GPU); `why` says why.
  virtual bool Available(std::string* why) const {
    (void)why;
    return true;
  }
};

// Registry filled by each test binary before RUN_ALL_TESTS (or at static
// initialisation for the local backend).
void RegisterHarness(std::unique_ptr<CommHarness> harness);
CommHarness* FindHarness(const std::string& name);

}  // namespace testing
}  // namespace distrt

#endif  // DISTRT_TEST_COMM_HARNESS_H_
