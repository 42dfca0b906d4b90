/* expect: [rank == 0] */
#include <mpi.h>
void f(void) {
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double s = 0;
    if (rank == 0) {
        s = s * 2.0; /* MARK */
    }
}
