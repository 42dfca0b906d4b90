/*
 * jacobi2d: Jacobi iteration for Laplace's equation on an n x n grid, 2D block decomposition.
 *
 * The ranks form a non-periodic 2D Cartesian grid (MPI_Dims_create, MPI_Cart_create).
 * Each iteration exchanges one-cell halos with the four neighbours (MPI_Sendrecv; rows
 * are contiguous, columns use an MPI_Type_vector) and replaces every interior value by
 * the mean of its four neighbours. Every k iterations (and after the last one) the
 * residual, the 2-norm of the last update, is summed over all ranks with MPI_Allreduce.
 *
 * The boundary holds u = x * y on the unit square (global indices 0 and n + 1), the
 * interior starts at 0. x * y is harmonic, and also exactly discretely harmonic, so the
 * iteration converges towards it. Each grid value is computed by the same operations
 * in the same order whatever the decomposition, so the grid is identical at any rank
 * count; only the order of the final sums differs.
 *
 * usage: jacobi2d [n] [iters] [k]
 * prints (rank 0): residual=<2-norm of the last update> checksum=<sum of the interior>
 *                  elapsed_s=<seconds of the iteration loop>
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_N 256
#define DEFAULT_ITERS 500
#define DEFAULT_K 10
#define MAX_N 30000
#define TAG_UP 1
#define TAG_DOWN 2
#define TAG_LEFT 3
#define TAG_RIGHT 4

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
    double *p = malloc(count * sizeof *p);
    if (p == NULL) {
        fprintf(stderr, "jacobi2d: out of memory (%zu doubles)\n", count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* Cells of n owned by block `coord` of `parts`; the first n % parts blocks get one more. */
static int block_size(int n, int parts, int coord)
{
    return n / parts + (coord < n % parts ? 1 : 0);
}

/* First cell (0-based) of block `coord`. */
static int block_start(int n, int parts, int coord)
{
    return coord * (n / parts) + (coord < n % parts ? coord : n % parts);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long n_arg = parse_positive(argc, argv, 1, DEFAULT_N);
    long iters_arg = parse_positive(argc, argv, 2, DEFAULT_ITERS);
    long k_arg = parse_positive(argc, argv, 3, DEFAULT_K);
    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    /* Every block needs at least one row and one column. */
    int min_n = dims[0] > dims[1] ? dims[0] : dims[1];
    if (argc > 4 || n_arg < min_n || n_arg > MAX_N || iters_arg < 0 || k_arg < 0) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: %s [n] [iters] [k]\n"
                    "  n      interior grid points per side, %d..%d with %d ranks (default %d)\n"
                    "  iters  Jacobi iterations (positive, default %d)\n"
                    "  k      residual reduction every k iterations (positive, default %d)\n",
                    argv[0], min_n, MAX_N, size, DEFAULT_N, DEFAULT_ITERS, DEFAULT_K);
        MPI_Finalize();
        return 2;
    }
    int n = (int)n_arg;
    int iters = (int)iters_arg;
    int k = (int)k_arg;

    int periods[2] = {0, 0};
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    int coords[2];
    MPI_Cart_coords(cart, rank, 2, coords);
    int up, down, left, right; /* MPI_PROC_NULL on the global boundary */
    MPI_Cart_shift(cart, 0, 1, &up, &down);
    MPI_Cart_shift(cart, 1, 1, &left, &right);

    /* Local block plus one halo cell on each side; local (i, j) is global (row0 + i, col0 + j),
     * where global 0 and n + 1 are the boundary. */
    int rows = block_size(n, dims[0], coords[0]);
    int cols = block_size(n, dims[1], coords[1]);
    int row0 = block_start(n, dims[0], coords[0]);
    int col0 = block_start(n, dims[1], coords[1]);
    int w = cols + 2;
    size_t cells = (size_t)(rows + 2) * w;
    double *u = alloc_doubles(cells);
    double *unew = alloc_doubles(cells);
    double h = 1.0 / (n + 1);
    for (int i = 0; i < rows + 2; i++) {
        for (int j = 0; j < w; j++) {
            int gi = row0 + i, gj = col0 + j;
            int on_boundary = gi == 0 || gi == n + 1 || gj == 0 || gj == n + 1;
            u[i * w + j] = on_boundary ? (gi * h) * (gj * h) : 0.0;
            unew[i * w + j] = u[i * w + j];
        }
    }

    MPI_Datatype column;
    MPI_Type_vector(rows, 1, w, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);

    double residual = 0.0;
    MPI_Barrier(cart);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        /* Halo exchange: first row up / last row down, first column left / last column right. */
        MPI_Sendrecv(&u[1 * w + 1], cols, MPI_DOUBLE, up, TAG_UP, &u[(rows + 1) * w + 1], cols,
                     MPI_DOUBLE, down, TAG_UP, cart, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[rows * w + 1], cols, MPI_DOUBLE, down, TAG_DOWN, &u[0 * w + 1], cols,
                     MPI_DOUBLE, up, TAG_DOWN, cart, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[1 * w + 1], 1, column, left, TAG_LEFT, &u[1 * w + cols + 1], 1, column,
                     right, TAG_LEFT, cart, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[1 * w + cols], 1, column, right, TAG_RIGHT, &u[1 * w + 0], 1, column, left,
                     TAG_RIGHT, cart, MPI_STATUS_IGNORE);

        double local_sq = 0.0;
        for (int i = 1; i <= rows; i++) {
            for (int j = 1; j <= cols; j++) {
                double v = 0.25 * (u[(i - 1) * w + j] + u[(i + 1) * w + j] + u[i * w + j - 1] +
                                   u[i * w + j + 1]);
                double d = v - u[i * w + j];
                local_sq += d * d;
                unew[i * w + j] = v;
            }
        }
        double *swap = u;
        u = unew;
        unew = swap;

        if ((it + 1) % k == 0 || it + 1 == iters) {
            double global_sq;
            MPI_Allreduce(&local_sq, &global_sq, 1, MPI_DOUBLE, MPI_SUM, cart);
            residual = sqrt(global_sq);
        }
    }
    double elapsed = MPI_Wtime() - t0;

    double local_sum = 0.0, checksum;
    for (int i = 1; i <= rows; i++)
        for (int j = 1; j <= cols; j++)
            local_sum += u[i * w + j];
    MPI_Reduce(&local_sum, &checksum, 1, MPI_DOUBLE, MPI_SUM, 0, cart);

    if (rank == 0) {
        printf("jacobi2d: ranks=%d dims=%dx%d n=%d iters=%d k=%d\n", size, dims[0], dims[1], n,
               iters, k);
        printf("residual=%.12e checksum=%.12e\n", residual, checksum);
        printf("elapsed_s=%.6e\n", elapsed);
    }
    MPI_Type_free(&column);
    MPI_Comm_free(&cart);
    free(u);
    free(unew);
    MPI_Finalize();
    return 0;
}
