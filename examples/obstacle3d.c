/*
 * obstacle3d: the 3D obstacle problem by the projected Richardson method, slab decomposition.
 *
 * The dPerf case study (seed 004, section V-A). On the unit cube with u = 0 on the
 * boundary, find u >= phi with A u - f >= 0 and (A u - f)(phi - u) = 0, where A is the
 * 7-point discrete Laplacian (6 u - sum of neighbours) / h^2 on an n^3 interior grid.
 * The synchronous projected Richardson iteration is
 *     u_{k+1} = P_K(u_k - delta (A u_k - f)),   K = {v >= phi},   P_K(v) = max(v, phi),
 * with delta = h^2 / 6, the largest step for which it is a contraction.
 *
 * Here f = -20 (a load pulling the membrane down) and phi is a bump in the middle of the
 * cube, so part of the solution rests on the obstacle (the contact set).
 *
 * The grid is cut into slabs along z, one per rank (the first n % size ranks get one
 * plane more). Each iteration exchanges one halo plane with the rank below and the rank
 * above (MPI_Sendrecv), updates the slab, and takes the global maximum of |u_{k+1} - u_k|
 * with MPI_Allreduce; the iteration stops when it falls below tol or after max_iters.
 * The maximum is exact whatever the rank count, so the iteration count and the grid are
 * identical at any rank count.
 *
 * usage: obstacle3d [n] [max_iters] [tol]
 * prints (rank 0): iterations=<count> converged=<0|1> max_update=<last> contact=<points with u == phi>
 *                  checksum=<sum of u>
 *                  elapsed_s=<seconds of the iteration loop>
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_N 64
#define DEFAULT_MAX_ITERS 10000
#define DEFAULT_TOL 1e-6
#define MAX_N 2000
#define LOAD (-20.0) /* f */
#define TAG_DOWN 1
#define TAG_UP 2

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

/* argv[index] as a positive finite double; `fallback` when absent, -1 when not one. */
static double parse_positive_double(int argc, char **argv, int index, double fallback)
{
    if (index >= argc)
        return fallback;
    char *end;
    errno = 0;
    double value = strtod(argv[index], &end);
    if (errno != 0 || end == argv[index] || *end != '\0' || !(value > 0.0) || isinf(value))
        return -1.0;
    return value;
}

static double *alloc_doubles(size_t count)
{
    double *p = malloc(count * sizeof *p);
    if (p == NULL) {
        fprintf(stderr, "obstacle3d: out of memory (%zu doubles)\n", count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* The obstacle: a paraboloid bump centred in the cube, positive within radius sqrt(0.1). */
static double obstacle(double x, double y, double z)
{
    double r2 = (x - 0.5) * (x - 0.5) + (y - 0.5) * (y - 0.5) + (z - 0.5) * (z - 0.5);
    return 0.1 - r2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long n_arg = parse_positive(argc, argv, 1, DEFAULT_N);
    long max_iters_arg = parse_positive(argc, argv, 2, DEFAULT_MAX_ITERS);
    double tol = parse_positive_double(argc, argv, 3, DEFAULT_TOL);
    if (argc > 4 || n_arg < size || n_arg > MAX_N || max_iters_arg < 0 || tol < 0.0) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: %s [n] [max_iters] [tol]\n"
                    "  n          interior points per side, from the rank count to %d (default %d)\n"
                    "  max_iters  iteration limit (positive, default %d)\n"
                    "  tol        stop when max |u_{k+1} - u_k| < tol (positive, default %g)\n",
                    argv[0], MAX_N, DEFAULT_N, DEFAULT_MAX_ITERS, DEFAULT_TOL);
        MPI_Finalize();
        return 2;
    }
    int n = (int)n_arg;
    int max_iters = (int)max_iters_arg;

    /* This rank's slab: planes z0 + 1 .. z0 + nz of the interior (global plane 0 and n + 1
     * are the boundary). Local plane 0 and nz + 1 are halos; (n + 2)^2 values per plane. */
    int nz = n / size + (rank < n % size ? 1 : 0);
    int z0 = rank * (n / size) + (rank < n % size ? rank : n % size);
    int below = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int above = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    int w = n + 2;
    int plane = w * w;
    size_t cells = (size_t)(nz + 2) * plane;
    double *u = alloc_doubles(cells);
    double *unew = alloc_doubles(cells);
    double *phi = alloc_doubles(cells);

    double h = 1.0 / (n + 1);
    double inv_h2 = 1.0 / (h * h);
    double delta = h * h / 6.0;
    /* Start from the projection of 0 onto K; halos and the boundary hold 0. */
    for (int k = 0; k < nz + 2; k++) {
        for (int j = 0; j < w; j++) {
            for (int i = 0; i < w; i++) {
                size_t c = (size_t)k * plane + j * w + i;
                int gk = z0 + k;
                int interior = k >= 1 && k <= nz && j >= 1 && j <= n && i >= 1 && i <= n;
                phi[c] = obstacle(i * h, j * h, gk * h);
                u[c] = interior && phi[c] > 0.0 ? phi[c] : 0.0;
                unew[c] = u[c];
            }
        }
    }

    int iterations = 0;
    int converged = 0;
    double max_update = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int iter = 0; iter < max_iters; iter++) {
        /* Halo planes: my first plane goes down, my last plane goes up. */
        MPI_Sendrecv(&u[(size_t)1 * plane], plane, MPI_DOUBLE, below, TAG_DOWN,
                     &u[(size_t)(nz + 1) * plane], plane, MPI_DOUBLE, above, TAG_DOWN,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[(size_t)nz * plane], plane, MPI_DOUBLE, above, TAG_UP, &u[0], plane,
                     MPI_DOUBLE, below, TAG_UP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

        double local_max = 0.0;
        for (int k = 1; k <= nz; k++) {
            for (int j = 1; j <= n; j++) {
                for (int i = 1; i <= n; i++) {
                    size_t c = (size_t)k * plane + j * w + i;
                    double centre = u[c];
                    double au = (6.0 * centre - (u[c - plane] + u[c + plane] + u[c - w] +
                                                 u[c + w] + u[c - 1] + u[c + 1])) *
                                inv_h2;
                    double v = centre - delta * (au - LOAD);
                    if (v < phi[c])
                        v = phi[c];
                    double change = fabs(v - centre);
                    if (change > local_max)
                        local_max = change;
                    unew[c] = v;
                }
            }
        }
        double *swap = u;
        u = unew;
        unew = swap;

        MPI_Allreduce(&local_max, &max_update, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        iterations = iter + 1;
        if (max_update < tol) {
            converged = 1;
            break;
        }
    }
    double elapsed = MPI_Wtime() - t0;

    double local_sum = 0.0, checksum;
    long long local_contact = 0, contact;
    for (int k = 1; k <= nz; k++) {
        for (int j = 1; j <= n; j++) {
            for (int i = 1; i <= n; i++) {
                size_t c = (size_t)k * plane + j * w + i;
                local_sum += u[c];
                if (u[c] == phi[c])
                    local_contact++;
            }
        }
    }
    MPI_Reduce(&local_sum, &checksum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&local_contact, &contact, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        printf("obstacle3d: ranks=%d n=%d max_iters=%d tol=%g\n", size, n, max_iters, tol);
        printf("iterations=%d converged=%d max_update=%.6e contact=%lld checksum=%.12e\n",
               iterations, converged, max_update, contact, checksum);
        printf("elapsed_s=%.6e\n", elapsed);
    }
    free(u);
    free(unew);
    free(phi);
    MPI_Finalize();
    return 0;
}
