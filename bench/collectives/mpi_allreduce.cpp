// distrt's `mpi` communicator: all-reduce (sum, f32) of each size, as the
// executor calls it. Run under mpirun; rank 0 prints one line per size:
//   "<bytes> <median ms>"
//   mpirun -np 2 bench_mpi_allreduce [iterations] [check 0|1] bytes...
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "bench_util.h"
#include "distrt/mpi_comm.h"

using namespace distrt;  // NOLINT

int main(int argc, char** argv) {
  std::unique_ptr<MpiSession> session;
  if (!MpiSession::Init(&argc, &argv, &session).ok()) return 1;
  const int iters = argc > 1 ? std::atoi(argv[1]) : 50;
  MpiCommOptions options;
  options.check_collectives = argc > 2 ? std::atoi(argv[2]) != 0 : true;
  std::unique_ptr<Communicator> comm;
  if (!CreateMpiCommunicator(options, &comm).ok()) return 1;
  Group group;
  for (int r = 0; r < session->world_size(); ++r) group.push_back(r);
  for (int a = 3; a < argc; ++a) {
    const int64_t count = std::atoll(argv[a]) / 4;
    std::vector<float> in(static_cast<size_t>(count), 1.0f), out(static_cast<size_t>(count));
    std::vector<double> times;
    for (int it = -5; it < iters; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = NowSeconds();
      Status st = comm->AllReduce(group, in.data(), out.data(), count, DType::kF32, ReduceOp::kSum);
      double dt = NowSeconds() - t0, slowest = 0;
      if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
        return 1;
      }
      MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (it >= 0) times.push_back(slowest);
    }
    if (count > 0 && out[0] != static_cast<float>(session->world_size())) {
      std::fprintf(stderr, "wrong result\n");
      return 1;
    }
    if (session->rank() == 0) std::printf("%s %.4f\n", argv[a], Median(times) * 1e3);
  }
  comm.reset();
  return 0;
}
