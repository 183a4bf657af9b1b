// Fault scenarios for the mpi backend, run by ctest under mpirun through
// expect_failure.cmake, which checks that the job fails (non-zero exit)
// within its time limit and prints the expected message:
//   error     rank 1's kernel fails while the others wait in an all_reduce
//   hang      the last rank's program lacks the second of two all_reduces
//   mismatch  rank 1 calls all_gather where the others call all_reduce
// Every rank runs its program through RunMpiRank, as a tool would.
#include <cstdio>
#include <cstring>

#include "distrt/distrt.h"
#include "distrt/mpi_comm.h"

using namespace distrt;  // NOLINT

namespace {

std::shared_ptr<const Program> Build(const std::string& scenario, int r, int n) {
  ProgramBuilder b(r, n);
  Group all;
  std::vector<int64_t> fours;
  for (int i = 0; i < n; ++i) {
    all.push_back(i);
    fours.push_back(4);
  }
  int x = b.Input("x", DType::kF32, {4});
  int y;
  if (scenario == "error" && r == 1) {
    Tensor idx = *Tensor::FromVector<int64_t>({4}, {0, 1, 2, 9});  // 9 is out of range
    const int i = b.Constant(idx, "bad_indices");
    x = b.Apply("gather", {x, i}, DType::kF32, {4}, {{"axis", AttrInt(0)}});
  }
  if (scenario == "hang") {
    y = b.Apply("all_reduce", {x}, DType::kF32, {4}, {{"reduction", AttrString("sum")}}, all);
    if (r != n - 1) {
      y = b.Apply("all_reduce", {y}, DType::kF32, {4}, {{"reduction", AttrString("sum")}}, all);
    }
  } else if (scenario == "mismatch" && r == 1) {
    const int g = b.Apply("all_gather", {x}, DType::kF32, {4 * n},
                          {{"dim", AttrInt(0)}, {"sizes", AttrInts(fours)}}, all);
    y = b.Apply("slice", {g}, DType::kF32, {4},
                {{"starts", AttrInts({0})}, {"ends", AttrInts({4})}});
  } else {
    y = b.Apply("all_reduce", {x}, DType::kF32, {4}, {{"reduction", AttrString("sum")}}, all);
  }
  b.Output("y", y);
  std::shared_ptr<const Program> p;
  Status st = Program::Create(b.Build(), StrCat("rank-", r, ".pb"), ".", &p);
  if (!st.ok()) std::fprintf(stderr, "bad test program: %s\n", st.ToString().c_str());
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<MpiSession> session;
  Status st = MpiSession::Init(&argc, &argv, &session);
  if (!st.ok() || argc != 2) {
    std::fprintf(stderr, "usage: mpirun -np N distrt_mpi_fault error|hang|mismatch\n");
    return 2;
  }
  const std::string scenario = argv[1];
  auto program = Build(scenario, session->rank(), session->world_size());
  if (!program) return 2;
  MpiRunOptions options;
  options.comm.timeout = std::chrono::seconds(2);
  std::vector<Tensor> outs;
  st = RunMpiRank(program, {*Tensor::FromVector<float>({4}, {1, 2, 3, 4})}, &outs, options);
  if (!st.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", session->rank(), st.ToString().c_str());
    return 1;
  }
  std::printf("rank %d finished\n", session->rank());
  return 0;
}
