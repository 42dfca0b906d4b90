/*
 * stencil3d_torus: explicit diffusion on a periodic n x n x n grid, 3D torus decomposition.
 *
 * The ranks form a periodic 3D Cartesian grid (MPI_Dims_create with 3 dims,
 * MPI_Cart_create with periods = 1). Each iteration packs the six faces of the local
 * block, exchanges them with the six neighbours (MPI_Irecv / MPI_Isend / MPI_Waitall),
 * and applies the 7-point update
 *     u' = u + ALPHA * (sum of the six neighbours - 6 u).
 * On a torus this update conserves the total sum of u (up to rounding), which is the
 * invariant to check; the sum of squares decays and serves as a checksum.
 *
 * With two ranks along a dimension both neighbours are the same rank, and with one
 * they are this rank itself, so the two directions carry different tags.
 *
 * usage: stencil3d_torus [n] [iters]
 * prints (rank 0): sum=<final sum of u> initial_sum=<sum at the start> checksum=<sum of u^2>
 *                  elapsed_s=<seconds of the iteration loop>
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_N 96
#define DEFAULT_ITERS 100
#define MAX_N 1000
#define ALPHA 0.125 /* stable for ALPHA <= 1/6 */

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
        fprintf(stderr, "stencil3d_torus: out of memory (%zu doubles)\n", count);
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

/*
 * The local array holds (nx + 2) x (ny + 2) x (nz + 2) values, one halo layer on
 * each side, z fastest. The face functions copy the plane at index `at` of one
 * dimension (interior part only) to buf (pack != 0) or from buf (pack == 0).
 */
static void x_face(double *u, int ny, int nz, int at, double *buf, int pack)
{
    int m = 0;
    for (int j = 1; j <= ny; j++) {
        for (int k = 1; k <= nz; k++) {
            size_t idx = ((size_t)at * (ny + 2) + j) * (nz + 2) + k;
            if (pack)
                buf[m] = u[idx];
            else
                u[idx] = buf[m];
            m++;
        }
    }
}

static void y_face(double *u, int nx, int ny, int nz, int at, double *buf, int pack)
{
    int m = 0;
    for (int i = 1; i <= nx; i++) {
        for (int k = 1; k <= nz; k++) {
            size_t idx = ((size_t)i * (ny + 2) + at) * (nz + 2) + k;
            if (pack)
                buf[m] = u[idx];
            else
                u[idx] = buf[m];
            m++;
        }
    }
}

static void z_face(double *u, int nx, int ny, int nz, int at, double *buf, int pack)
{
    int m = 0;
    for (int i = 1; i <= nx; i++) {
        for (int j = 1; j <= ny; j++) {
            size_t idx = ((size_t)i * (ny + 2) + j) * (nz + 2) + at;
            if (pack)
                buf[m] = u[idx];
            else
                u[idx] = buf[m];
            m++;
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
    long iters_arg = parse_positive(argc, argv, 2, DEFAULT_ITERS);
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(size, 3, dims); /* non-increasing, so dims[0] is the largest */
    /* Every block needs at least one plane along each dimension. */
    if (argc > 3 || n_arg < dims[0] || n_arg > MAX_N || iters_arg < 0) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: %s [n] [iters]\n"
                    "  n      grid points per side, %d..%d with %d ranks (default %d)\n"
                    "  iters  time steps (positive, default %d)\n",
                    argv[0], dims[0], MAX_N, size, DEFAULT_N, DEFAULT_ITERS);
        MPI_Finalize();
        return 2;
    }
    int n = (int)n_arg;
    int iters = (int)iters_arg;

    int periods[3] = {1, 1, 1};
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    int coords[3];
    MPI_Cart_coords(cart, rank, 3, coords);
    int lo[3], hi[3]; /* neighbours towards -d and +d; on a torus they always exist */
    for (int d = 0; d < 3; d++)
        MPI_Cart_shift(cart, d, 1, &lo[d], &hi[d]);

    int nx = block_size(n, dims[0], coords[0]);
    int ny = block_size(n, dims[1], coords[1]);
    int nz = block_size(n, dims[2], coords[2]);
    int x0 = block_start(n, dims[0], coords[0]);
    int y0 = block_start(n, dims[1], coords[1]);
    int z0 = block_start(n, dims[2], coords[2]);
    size_t sx = (size_t)(ny + 2) * (nz + 2); /* stride of i */
    size_t sy = (size_t)(nz + 2);            /* stride of j */
    size_t cells = (size_t)(nx + 2) * sx;
    double *u = alloc_doubles(cells);
    double *unew = alloc_doubles(cells);
    for (size_t c = 0; c < cells; c++) {
        u[c] = 0.0;
        unew[c] = 0.0;
    }
    for (int i = 1; i <= nx; i++)
        for (int j = 1; j <= ny; j++)
            for (int k = 1; k <= nz; k++) {
                int gi = x0 + i - 1, gj = y0 + j - 1, gk = z0 + k - 1;
                u[i * sx + j * sy + k] = (double)((gi * 7 + gj * 13 + gk * 29) % 17);
            }

    /* Face buffers: index 2 * d is the face towards -d, 2 * d + 1 the face towards +d. */
    int face[3] = {ny * nz, nx * nz, nx * ny};
    double *send[6], *recv[6];
    for (int f = 0; f < 6; f++) {
        send[f] = alloc_doubles((size_t)face[f / 2]);
        recv[f] = alloc_doubles((size_t)face[f / 2]);
    }

    double local_sum = 0.0, initial_sum;
    for (int i = 1; i <= nx; i++)
        for (int j = 1; j <= ny; j++)
            for (int k = 1; k <= nz; k++)
                local_sum += u[i * sx + j * sy + k];
    MPI_Reduce(&local_sum, &initial_sum, 1, MPI_DOUBLE, MPI_SUM, 0, cart);

    MPI_Barrier(cart);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        x_face(u, ny, nz, 1, send[0], 1);
        x_face(u, ny, nz, nx, send[1], 1);
        y_face(u, nx, ny, nz, 1, send[2], 1);
        y_face(u, nx, ny, nz, ny, send[3], 1);
        z_face(u, nx, ny, nz, 1, send[4], 1);
        z_face(u, nx, ny, nz, nz, send[5], 1);

        /* A message travelling towards +d has tag 2 * d, towards -d tag 2 * d + 1. */
        MPI_Request req[12];
        for (int d = 0; d < 3; d++) {
            MPI_Irecv(recv[2 * d], face[d], MPI_DOUBLE, lo[d], 2 * d, cart, &req[4 * d]);
            MPI_Irecv(recv[2 * d + 1], face[d], MPI_DOUBLE, hi[d], 2 * d + 1, cart,
                      &req[4 * d + 1]);
            MPI_Isend(send[2 * d], face[d], MPI_DOUBLE, lo[d], 2 * d + 1, cart, &req[4 * d + 2]);
            MPI_Isend(send[2 * d + 1], face[d], MPI_DOUBLE, hi[d], 2 * d, cart, &req[4 * d + 3]);
        }
        MPI_Waitall(12, req, MPI_STATUSES_IGNORE);

        x_face(u, ny, nz, 0, recv[0], 0);
        x_face(u, ny, nz, nx + 1, recv[1], 0);
        y_face(u, nx, ny, nz, 0, recv[2], 0);
        y_face(u, nx, ny, nz, ny + 1, recv[3], 0);
        z_face(u, nx, ny, nz, 0, recv[4], 0);
        z_face(u, nx, ny, nz, nz + 1, recv[5], 0);

        for (int i = 1; i <= nx; i++) {
            for (int j = 1; j <= ny; j++) {
                for (int k = 1; k <= nz; k++) {
                    size_t c = i * sx + j * sy + k;
                    double centre = u[c];
                    unew[c] = centre + ALPHA * (u[c - sx] + u[c + sx] + u[c - sy] + u[c + sy] +
                                                u[c - 1] + u[c + 1] - 6.0 * centre);
                }
            }
        }
        double *swap = u;
        u = unew;
        unew = swap;
    }
    double elapsed = MPI_Wtime() - t0;

    double local[2] = {0.0, 0.0}, global[2]; /* sum, sum of squares */
    for (int i = 1; i <= nx; i++)
        for (int j = 1; j <= ny; j++)
            for (int k = 1; k <= nz; k++) {
                double v = u[i * sx + j * sy + k];
                local[0] += v;
                local[1] += v * v;
            }
    MPI_Reduce(local, global, 2, MPI_DOUBLE, MPI_SUM, 0, cart);

    if (rank == 0) {
        printf("stencil3d_torus: ranks=%d dims=%dx%dx%d n=%d iters=%d\n", size, dims[0], dims[1],
               dims[2], n, iters);
        printf("sum=%.12e initial_sum=%.12e checksum=%.12e\n", global[0], initial_sum, global[1]);
        printf("elapsed_s=%.6e\n", elapsed);
    }
    for (int f = 0; f < 6; f++) {
        free(send[f]);
        free(recv[f]);
    }
    MPI_Comm_free(&cart);
    free(u);
    free(unew);
    MPI_Finalize();
    return 0;
}
