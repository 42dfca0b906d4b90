/*
 * obstacle3d_p2p: the 3D obstacle problem by the projected Richardson method, written for P2PDC
 * (instrument/p2pdc.h) as in the dPerf case study (seed 004, sections III and V), runnable in
 * the synchronous, asynchronous and hybrid schemes.
 *
 * The problem and the iteration are those of obstacle3d.c: on the unit cube with u = 0 on the
 * boundary, find u >= phi with A u - f >= 0 and (A u - f)(phi - u) = 0, A the 7-point
 * Laplacian (6 u - sum of neighbours) / h^2 on an n^3 interior grid, f = -20, phi a bump in
 * the middle; u_{k+1} = P_K(u_k - delta (A u_k - f)), P_K(v) = max(v, phi), delta = h^2 / 6.
 *
 * The grid is cut into slabs along z, one per peer (the first n % size peers get one plane
 * more). Each iteration sends this slab's first plane to the peer below and its last plane to
 * the peer above (P2Psend), receives their planes into the halo buffers (P2Preceive), waits
 * for its sends (P2Pwait), updates the slab, and asks P2Pconverged whether every peer's
 * largest update |u_{k+1} - u_k| is below tol.
 *   sync:   every receive brings the neighbour's plane of the previous iteration, and the
 *           decision is a global maximum, so the iterates, the iteration count and the result
 *           are those of obstacle3d at any peer count.
 *   async:  a receive that finds no new plane keeps the last one (the halo buffers persist
 *           across iterations); peers iterate at their own pace and stop on P2Pconverged's
 *           epoch decision, each after its own number of iterations.
 *   hybrid: sync between the peers of a group (P2PDC_GROUP consecutive peers, default 2),
 *           async between groups.
 * After the iteration the program switches to the sync scheme, exchanges the final planes
 * and computes the fixed-point residual max |P_K(u - delta (A u - f)) - u| of the final
 * iterate, which measures how converged it is whatever the scheme.
 *
 * usage: obstacle3d_p2p [--scheme=sync|async|hybrid] [n] [max_iters] [tol]
 *        (the scheme may also come from P2PDC_SCHEME; P2Pinit reads both)
 * prints (rank 0): obstacle3d_p2p: scheme=<name> ranks=<peers> group=<size> n= max_iters= tol=
 *                  iterations=<peer 0's count> iterations_min=<fewest over peers>
 *                  iterations_max=<most> converged=<0|1> residual=<fixed-point residual>
 *                  contact=<points with u == phi> checksum=<sum of u>
 *                  elapsed_s=<seconds of the iteration loop>
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "p2pdc.h"

#define DEFAULT_N 64
#define DEFAULT_MAX_ITERS 10000
#define DEFAULT_TOL 1e-6
#define MAX_N 2000
#define LOAD (-20.0) /* f */

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
        fprintf(stderr, "obstacle3d_p2p: out of memory (%zu doubles)\n", count);
        exit(1);
    }
    return p;
}

/* The obstacle: a paraboloid bump centred in the cube, positive within radius sqrt(0.1). */
static double obstacle(double x, double y, double z)
{
    double r2 = (x - 0.5) * (x - 0.5) + (y - 0.5) * (y - 0.5) + (z - 0.5) * (z - 0.5);
    return 0.1 - r2;
}

/* One projected Richardson step on planes 1 .. nz of u into unew; returns the largest change. */
static double relax(const double *u, double *unew, const double *phi, int n, int nz)
{
    int w = n + 2;
    int plane = w * w;
    double h = 1.0 / (n + 1);
    double inv_h2 = 1.0 / (h * h);
    double delta = h * h / 6.0;
    double local_max = 0.0;
    for (int k = 1; k <= nz; k++) {
        for (int j = 1; j <= n; j++) {
            for (int i = 1; i <= n; i++) {
                size_t c = (size_t)k * plane + j * w + i;
                double centre = u[c];
                double au = (6.0 * centre - (u[c - plane] + u[c + plane] + u[c - w] + u[c + w] +
                                             u[c - 1] + u[c + 1])) *
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
    return local_max;
}

int main(int argc, char **argv)
{
    int init_status = P2Pinit(&argc, &argv);
    int rank = P2Prank();
    int size = P2Psize();
    int scheme = P2Pscheme();

    long n_arg = parse_positive(argc, argv, 1, DEFAULT_N);
    long max_iters_arg = parse_positive(argc, argv, 2, DEFAULT_MAX_ITERS);
    double tol = parse_positive_double(argc, argv, 3, DEFAULT_TOL);
    if (init_status != 0 || argc > 4 || n_arg < size || n_arg > MAX_N || max_iters_arg < 0 ||
        tol < 0.0) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: %s [--scheme=sync|async|hybrid] [n] [max_iters] [tol]\n"
                    "  --scheme   scheme of computation (default: P2PDC_SCHEME, else sync);\n"
                    "             hybrid groups P2PDC_GROUP consecutive peers (default 2)\n"
                    "  n          interior points per side, from the peer count to %d (default %d)\n"
                    "  max_iters  iteration limit (positive, default %d)\n"
                    "  tol        stop when every peer's max |u_{k+1} - u_k| < tol (positive, "
                    "default %g)\n",
                    argv[0], MAX_N, DEFAULT_N, DEFAULT_MAX_ITERS, DEFAULT_TOL);
        P2Pfinalize();
        return 2;
    }
    int n = (int)n_arg;
    int max_iters = (int)max_iters_arg;

    /* This peer's slab: planes z0 + 1 .. z0 + nz of the interior (global plane 0 and n + 1
     * are the boundary). Local plane 0 and nz + 1 are halos; (n + 2)^2 values per plane. */
    int nz = n / size + (rank < n % size ? 1 : 0);
    int z0 = rank * (n / size) + (rank < n % size ? rank : n % size);
    int below = rank > 0 ? rank - 1 : -1;
    int above = rank < size - 1 ? rank + 1 : -1;
    int w = n + 2;
    int plane = w * w;
    size_t cells = (size_t)(nz + 2) * plane;
    double *u = alloc_doubles(cells);
    double *unew = alloc_doubles(cells);
    double *phi = alloc_doubles(cells);
    /* The neighbours' planes as last received: an async receive that finds nothing new keeps
     * them, so they live apart from u and unew, which swap every iteration. */
    double *halo_below = alloc_doubles((size_t)plane);
    double *halo_above = alloc_doubles((size_t)plane);

    double h = 1.0 / (n + 1);
    /* Start from the projection of 0 onto K; the boundary holds 0. The halo planes start as
     * the neighbours' starting planes, which is what they would send first. */
    for (int k = 0; k < nz + 2; k++) {
        for (int j = 0; j < w; j++) {
            for (int i = 0; i < w; i++) {
                size_t c = (size_t)k * plane + j * w + i;
                int gk = z0 + k;
                int interior = gk >= 1 && gk <= n && j >= 1 && j <= n && i >= 1 && i <= n;
                phi[c] = obstacle(i * h, j * h, gk * h);
                u[c] = interior && phi[c] > 0.0 ? phi[c] : 0.0;
                unew[c] = u[c];
            }
        }
    }
    memcpy(halo_below, &u[0], plane * sizeof(double));
    memcpy(halo_above, &u[(size_t)(nz + 1) * plane], plane * sizeof(double));

    int iterations = 0;
    int converged = 0;
    P2Pbarrier();
    double t0 = P2Ptime();
    for (int iter = 0; iter < max_iters; iter++) {
        /* Halo planes: my first plane goes down, my last plane goes up. */
        if (below >= 0)
            P2Psend(below, &u[(size_t)1 * plane], plane * sizeof(double));
        if (above >= 0)
            P2Psend(above, &u[(size_t)nz * plane], plane * sizeof(double));
        if (below >= 0)
            P2Preceive(below, halo_below, plane * sizeof(double));
        if (above >= 0)
            P2Preceive(above, halo_above, plane * sizeof(double));
        P2Pwait();
        if (below >= 0)
            memcpy(&u[0], halo_below, plane * sizeof(double));
        if (above >= 0)
            memcpy(&u[(size_t)(nz + 1) * plane], halo_above, plane * sizeof(double));

        double local_max = relax(u, unew, phi, n, nz);
        double *swap = u;
        u = unew;
        unew = swap;

        iterations = iter + 1;
        if (P2Pconverged(local_max < tol)) {
            converged = 1;
            break;
        }
    }
    double elapsed = P2Ptime() - t0;

    /* The final iterate's residual, with its final planes exchanged synchronously. */
    P2Pset_scheme(P2P_SYNC);
    if (below >= 0)
        P2Psend(below, &u[(size_t)1 * plane], plane * sizeof(double));
    if (above >= 0)
        P2Psend(above, &u[(size_t)nz * plane], plane * sizeof(double));
    if (below >= 0)
        P2Preceive(below, &u[0], plane * sizeof(double));
    if (above >= 0)
        P2Preceive(above, &u[(size_t)(nz + 1) * plane], plane * sizeof(double));
    P2Pwait();
    double residual = P2Pallreduce(relax(u, unew, phi, n, nz), P2P_MAX);

    double local_sum = 0.0;
    double local_contact = 0.0;
    for (int k = 1; k <= nz; k++) {
        for (int j = 1; j <= n; j++) {
            for (int i = 1; i <= n; i++) {
                size_t c = (size_t)k * plane + j * w + i;
                local_sum += u[c];
                if (u[c] == phi[c])
                    local_contact += 1.0;
            }
        }
    }
    double checksum = P2Pallreduce(local_sum, P2P_SUM);
    double contact = P2Pallreduce(local_contact, P2P_SUM);
    double iterations_min = P2Pallreduce(iterations, P2P_MIN);
    double iterations_max = P2Pallreduce(iterations, P2P_MAX);
    double all_converged = P2Pallreduce(converged, P2P_MIN);

    if (rank == 0) {
        printf("obstacle3d_p2p: scheme=%s ranks=%d group=%d n=%d max_iters=%d tol=%g\n",
               P2Pscheme_name(scheme), size, P2Pgroup_size(), n, max_iters, tol);
        printf("iterations=%d iterations_min=%.0f iterations_max=%.0f converged=%.0f "
               "residual=%.12e contact=%.0f checksum=%.12e\n",
               iterations, iterations_min, iterations_max, all_converged, residual, contact,
               checksum);
        printf("elapsed_s=%.6e\n", elapsed);
    }
    free(u);
    free(unew);
    free(phi);
    free(halo_below);
    free(halo_above);
    P2Pfinalize();
    return 0;
}
