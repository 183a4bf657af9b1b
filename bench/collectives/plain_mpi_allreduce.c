/* The reference for the mpi benchmark: MPI_Allreduce (sum, float) called
 * directly, timed exactly like bench_mpi_allreduce. Rank 0 prints one line
 * per size: "<bytes> <median ms>".
 *   mpirun -np 2 bench_plain_mpi_allreduce [iterations] bytes... */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  int provided, rank, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iters = argc > 1 ? atoi(argv[1]) : 50;
  for (int a = 2; a < argc; ++a) {
    long count = atol(argv[a]) / 4;
    float* in = malloc((count ? count : 1) * sizeof(float));
    float* out = malloc((count ? count : 1) * sizeof(float));
    double* times = malloc(iters * sizeof(double));
    for (long i = 0; i < count; ++i) in[i] = 1.0f;
    for (int it = -5; it < iters; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double dt = MPI_Wtime() - t0, slowest;
      MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (it >= 0) times[it] = slowest;
    }
    if (count > 0 && out[0] != (float)size) {
      fprintf(stderr, "wrong result\n");
      return 1;
    }
    qsort(times, iters, sizeof(double), cmp);
    if (rank == 0) printf("%s %.4f\n", argv[a], times[iters / 2] * 1e3);
    free(in);
    free(out);
    free(times);
  }
  MPI_Finalize();
  return 0;
}
