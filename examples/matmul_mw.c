/*
 * matmul_mw: C = A * B, master-worker with row blocks.
 *
 * Rank 0 owns A and B. Each repetition it broadcasts B, sends each worker
 * (ranks 1..size-1) its block of rows of A, and receives the matching rows of
 * C back. Rank 0 only coordinates, except when it runs alone: then it computes
 * everything itself. Rows are split as evenly as possible; the first n % workers
 * workers get one row more.
 *
 * A[i][j] = (i + j) % 7 and B[i][j] = (i * j + 1) % 5 are small integers, so
 * every product and sum is an exact integer in double precision and the
 * checksums can be compared exactly.
 *
 * usage: matmul_mw [n] [reps]
 * prints (rank 0): checksum=<sum of C> weighted=<sum over i of (i + 1) * row sum i of C>
 *                  elapsed_s=<seconds of the repetitions loop>
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_N 512
#define DEFAULT_REPS 3
#define MAX_N 16384 /* keeps n * n within an int element count */
#define TAG_A 1
#define TAG_C 2

/* argv[index] as a positive int; `fallback` when absent, -1 when not a positive int. */
static long parse_positive(int argc, char **argv, int index, long fallback)
{
    if (index >= argc)
        return fallback;
    char *end;
    errno = 0;
    long value = strtol(argv[index], &end, 10);
    if (errno != 0 || end == argv[index] || *end != '\0' || value <= 0 || value > INT_MAX)
        return -1;
    return value;
}

static double *alloc_doubles(size_t count)
{
    double *p = malloc((count > 0 ? count : 1) * sizeof *p); /* malloc(0) may return NULL */
    if (p == NULL) {
        fprintf(stderr, "matmul_mw: out of memory (%zu doubles)\n", count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* Rows of C owned by worker w (0-based among the workers). */
static int block_rows(int n, int workers, int w)
{
    return n / workers + (w < n % workers ? 1 : 0);
}

/* First row of worker w's block. */
static int block_start(int n, int workers, int w)
{
    return w * (n / workers) + (w < n % workers ? w : n % workers);
}

/* c = a * b for `rows` rows of a; i-k-j order so the inner loop streams rows of b and c. */
static void multiply_rows(int rows, int n, const double *a, const double *b, double *c)
{
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < n; j++)
            c[i * n + j] = 0.0;
        for (int k = 0; k < n; k++) {
            double aik = a[i * n + k];
            for (int j = 0; j < n; j++)
                c[i * n + j] += aik * b[k * n + j];
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long n_arg = parse_positive(argc, argv, 1, DEFAULT_N);
    long reps_arg = parse_positive(argc, argv, 2, DEFAULT_REPS);
    if (argc > 3 || n_arg < 0 || n_arg > MAX_N || reps_arg < 0) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: %s [n] [reps]\n"
                    "  n     matrix order, 1..%d (default %d)\n"
                    "  reps  number of multiplications (positive, default %d)\n",
                    argv[0], MAX_N, DEFAULT_N, DEFAULT_REPS);
        MPI_Finalize();
        return 2;
    }
    int n = (int)n_arg;
    int reps = (int)reps_arg;
    int workers = size - 1;
    int my_rows = rank > 0 ? block_rows(n, workers, rank - 1) : 0;

    double *b = alloc_doubles((size_t)n * n);
    double *a = NULL, *c = NULL;             /* rank 0: the whole matrices */
    double *a_block = NULL, *c_block = NULL; /* workers: their rows */
    if (rank == 0) {
        a = alloc_doubles((size_t)n * n);
        c = alloc_doubles((size_t)n * n);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++) {
                a[i * n + j] = (double)((i + j) % 7);
                b[i * n + j] = (double)((i * j + 1) % 5);
            }
        }
    } else {
        a_block = alloc_doubles((size_t)my_rows * n);
        c_block = alloc_doubles((size_t)my_rows * n);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int rep = 0; rep < reps; rep++) {
        if (size == 1) {
            multiply_rows(n, n, a, b, c);
            continue;
        }
        MPI_Bcast(b, n * n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            for (int w = 1; w < size; w++)
                MPI_Send(&a[block_start(n, workers, w - 1) * n], block_rows(n, workers, w - 1) * n,
                         MPI_DOUBLE, w, TAG_A, MPI_COMM_WORLD);
            for (int w = 1; w < size; w++)
                MPI_Recv(&c[block_start(n, workers, w - 1) * n], block_rows(n, workers, w - 1) * n,
                         MPI_DOUBLE, w, TAG_C, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(a_block, my_rows * n, MPI_DOUBLE, 0, TAG_A, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            multiply_rows(my_rows, n, a_block, b, c_block);
            MPI_Send(c_block, my_rows * n, MPI_DOUBLE, 0, TAG_C, MPI_COMM_WORLD);
        }
    }
    double elapsed = MPI_Wtime() - t0;

    if (rank == 0) {
        /* Integer-valued sums: exact while they stay below 2^53 (checksum <= 24 n^3 always;
         * weighted <= 12 n^4, which holds up to n = 5000). */
        double checksum = 0.0, weighted = 0.0;
        for (int i = 0; i < n; i++) {
            double row_sum = 0.0;
            for (int j = 0; j < n; j++)
                row_sum += c[i * n + j];
            checksum += row_sum;
            weighted += (double)(i + 1) * row_sum;
        }
        printf("matmul_mw: ranks=%d n=%d reps=%d\n", size, n, reps);
        printf("checksum=%.0f weighted=%.0f\n", checksum, weighted);
        printf("elapsed_s=%.6e\n", elapsed);
    }
    free(a);
    free(b);
    free(c);
    free(a_block);
    free(c_block);
    MPI_Finalize();
    return 0;
}
