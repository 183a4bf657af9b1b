// distrt's `mpi` communicator: all-reduce (sum, f32) of each size, as the
// executor calls it, interleaved round by round with MPI_Allreduce called
// directly on the same buffers (so both see the same machine load). Run
// under mpirun; rank 0 prints one line per size:
//   "<bytes> <median ms, MPI_Allreduce> <median ms, distrt>"
//   mpirun -np 2 bench_mpi_allreduce [iterations] [check 0|1] bytes...
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "bench_util.h"
#include "distrt/mpi_comm.h"

using namespace distrt; // NOLINT

int main(int argc, char **argv) {
  std::unique_ptr<MpiSession> session;
  if (!MpiSession::Init(&argc, &argv, &session).ok())
    return 1;
  const int iters = argc > 1 ? std::atoi(argv[1]) : 50;
  MpiCommOptions options;
  options.check_collectives = argc > 2 ? std::atoi(argv[2]) != 0 : true;
  std::unique_ptr<Communicator> comm;
  if (!CreateMpiCommunicator(options, &comm).ok())
    return 1;
  Group group;
  for (int r = 0; r < session->world_size(); ++r)
    group.push_back(r);
  for (int a = 3; a < argc; ++a) {
    const int64_t count = std::atoll(argv[a]) / 4;
    std::vector<float> in(static_cast<size_t>(count), 1.0f),
        out(static_cast<size_t>(count));
    std::vector<double> plain, ours;
    auto slowest = [](double dt) {
      double s = 0;
      MPI_Allreduce(&dt, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      return s;
    };
    for (int it = -5; it < iters; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = NowSeconds();
      MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT,
                    MPI_SUM, MPI_COMM_WORLD);
      const double p = slowest(NowSeconds() - t0);
      MPI_Barrier(MPI_COMM_WORLD);
      t0 = NowSeconds();
      Status st = comm->AllReduce(group, in.data(), out.data(), count,
                                  DType::kF32, ReduceOp::kSum);
      const double d = slowest(NowSeconds() - t0);
      if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
        return 1;
      }
      if (it >= 0) {
        plain.push_back(p);
        ours.push_back(d);
      }
    }
    if (count > 0 && out[0] != static_cast<float>(session->world_size())) {
      std::fprintf(stderr, "wrong result\n");
      return 1;
    }
    if (session->rank() == 0) {
      std::printf("%s %.4f %.4f\n", argv[a], Median(plain) * 1e3,
                  Median(ours) * 1e3);
    }
  }
  comm.reset();
  return 0;
}
