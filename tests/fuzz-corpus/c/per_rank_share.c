/* expect: floor(n/size) */
#include <mpi.h>
void f(int n) {
    int size; MPI_Comm_size(MPI_COMM_WORLD, &size);
    int local = n / size;
    double s = 0;
    for (int i = 0; i < local; i++) { s += i; /* MARK */ }
}
