#include <mpi.h>
#include <stdlib.h>
#define N 1024
int main(int argc, char **argv) {
  int rank, size, iters = argc > 1 ? atoi(argv[1]) : 100;
  double a[N], b[N];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int t = 0; t < iters; t++) {
    MPI_Sendrecv(&a[0], 1, MPI_DOUBLE, (rank + size - 1) % size, 0, &a[N - 1], 1, MPI_DOUBLE, (rank + 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 1; i < N - 1; i++)
      for (int j = 0; j < i; j += 2)
        b[i] += 0.5 * (a[i - 1] + a[i + 1]) / (j + 1);
    if (rank == 0) { int k = 0; while (k < N) { k *= 2; k++; } }
    switch (t % 3) { case 0: b[0]++; break; default: b[1]--; }
  }
  MPI_Allreduce(MPI_IN_PLACE, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
