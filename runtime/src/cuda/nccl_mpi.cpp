// The nccl communicator bootstrapped through MPI: rank 0 makes the NCCL id
// and MPI_Bcast sends it to every process of MPI_COMM_WORLD.
#include <mpi.h>

#include <cstdio>

#include "comm_check.h"
#include "distrt/cuda.h"

namespace distrt {

Status CreateNcclCommunicatorMpi(const NcclCommOptions& options_in,
                                 std::unique_ptr<Communicator>* out) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) {
    return FailedPreconditionError(
        "CreateNcclCommunicatorMpi: MPI is not initialised (create a "
        "distrt::MpiSession first) or already finalised");
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  // Every rank takes part in the broadcast, also one whose id failed, so
  // nobody waits for it: a failure is sent as an all-zero id plus a flag.
  NcclId id;
  int ok = 1;
  Status st;
  if (rank == 0) {
    st = NewNcclId(&id);
    ok = st.ok() ? 1 : 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Bcast(id.bytes, sizeof(id.bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
  if (!ok) return rank == 0 ? st : FailedPreconditionError("rank 0 could not create an NCCL id");
  NcclCommOptions options = options_in;
  if (!options.on_abort) {
    options.on_abort = [](int r, const Status& reason) {
      std::fprintf(stderr, "distrt[nccl]: %s; aborting the job (MPI_Abort)\n",
                   RankFailed(r, reason).message().c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    };
  }
  return CreateNcclCommunicator(id, rank, size, options, out);
}

}  // namespace distrt
