/* mpicast MTC calibration kernels: loop bodies as real programs write them, compiled with the
 * user's flags and NOT defended against the optimiser (what the compiler does to them is what
 * it does to the user's loops). src/machine times them and fits per-class costs so that
 * formula (1), sum over classes of count * cost, reproduces their times.
 *
 * Op counts are declared by hand, per execution of the body, on the `mtc-cal` line above each
 * kernel (src/machine parses these lines), counting C source constructs the way docs/OPS.md
 * says the front end counts them: every a[i] read is a load, every index + or - an int_add,
 * every loop iteration one loop_iter. `bodies` is how many bodies one kernel iteration runs.
 * Until the front end can count these bodies itself, these declarations are the counts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "mtc_common.h"

#define N MTC_CAL_N

/* mtc-cal cal_dot bodies=1024: load=2 double_mul=1 double_add=1 loop_iter=1 */
void k_cal_dot(long iters, struct mtc_ctx *ctx) {
    const double *a = ctx->a, *b = ctx->b;
    double s = 0;
    for (long r = 0; r < iters; r++) {
        for (int j = 0; j < N; j++) s += a[j] * b[j];
        CLOBBER_MEM();
    }
    mtc_sink_d = s;
}

/* mtc-cal cal_axpy bodies=1024: load=2 store=1 double_mul=1 double_add=1 loop_iter=1 */
void k_cal_axpy(long iters, struct mtc_ctx *ctx) {
    const double *a = ctx->a;
    double *c = ctx->c, alpha = mtc_tiny_d;
    for (long r = 0; r < iters; r++) {
        for (int j = 0; j < N; j++) c[j] = alpha * a[j] + c[j];
        CLOBBER_MEM();
    }
}

/* mtc-cal cal_stencil1d bodies=1022: load=3 store=1 double_add=2 double_mul=2 int_add=2 loop_iter=1 */
void k_cal_stencil1d(long iters, struct mtc_ctx *ctx) {
    const double *a = ctx->a;
    double *c = ctx->c;
    for (long r = 0; r < iters; r++) {
        for (int j = 1; j < N - 1; j++) c[j] = 0.25 * (a[j - 1] + 2.0 * a[j] + a[j + 1]);
        CLOBBER_MEM();
    }
}

/* mtc-cal cal_stencil2d bodies=900: load=4 store=1 double_add=3 double_mul=1 int_mul=5 int_add=9 loop_iter=1.0333 */
void k_cal_stencil2d(long iters, struct mtc_ctx *ctx) {
    const double *a = ctx->a;
    double *c = ctx->c;
    for (long r = 0; r < iters; r++) {
        for (int i = 1; i < 31; i++)
            for (int j = 1; j < 31; j++)
                c[i * 32 + j] = 0.25 * (a[(i - 1) * 32 + j] + a[(i + 1) * 32 + j] +
                                        a[i * 32 + j - 1] + a[i * 32 + j + 1]);
        CLOBBER_MEM();
    }
}

/* mtc-cal cal_dartboard bodies=256: rand=2 int_to_fp=2 double_div=2 double_mul=2 double_add=1 fp_cmp=1 branch=1 int_add=0.785 loop_iter=1 */
void k_cal_dartboard(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    long hits = 0;
    for (long r = 0; r < iters; r++) {
        for (int j = 0; j < 256; j++) {
            double x = rand() / (double)RAND_MAX;
            double y = rand() / (double)RAND_MAX;
            if (x * x + y * y <= 1.0) hits++;
        }
    }
    mtc_sink_u = (uint64_t)hits;
}

/* mtc-cal cal_histogram bodies=1024: load=2 store=1 int_logic=1 int_add=1 loop_iter=1 */
void k_cal_histogram(long iters, struct mtc_ctx *ctx) {
    const uint32_t *ia = ctx->ia;
    uint32_t h[256];
    memset(h, 0, sizeof h);
    for (long r = 0; r < iters; r++) {
        for (int j = 0; j < N; j++) h[ia[j] & 255]++;
        CLOBBER_MEM();
    }
    mtc_sink_u = h[ia[0] & 255];
}

/* mtc-cal cal_matmul bodies=1024: load=2 double_mul=1 double_add=1 int_mul=2 int_add=2 loop_iter=1.03125 store=0.03125 */
void k_cal_matmul(long iters, struct mtc_ctx *ctx) {
    const double *a = ctx->a, *b = ctx->b;
    double *c = ctx->c;
    for (long r = 0; r < iters; r++) {
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 8; j++) {
                double s = 0;
                for (int k = 0; k < 32; k++) s += a[i * 32 + k] * b[k * 32 + j];
                c[i * 32 + j] = s;
            }
        CLOBBER_MEM();
    }
}

/* mtc-cal cal_saxpy_float bodies=1024: load=2 store=1 float_mul=1 float_add=1 loop_iter=1 */
void k_cal_saxpy_float(long iters, struct mtc_ctx *ctx) {
    const float *x = ctx->fa;
    float *y = ctx->fb, alpha = (float)mtc_tiny_d;
    for (long r = 0; r < iters; r++) {
        for (int j = 0; j < N; j++) y[j] = alpha * x[j] + y[j];
        CLOBBER_MEM();
    }
}

/* mtc-cal cal_sqrt_sum bodies=1024: load=1 sqrt=1 double_add=1 loop_iter=1 */
void k_cal_sqrt_sum(long iters, struct mtc_ctx *ctx) {
    const double *a = ctx->a;
    double s = 0;
    for (long r = 0; r < iters; r++) {
        for (int j = 0; j < N; j++) s += sqrt(a[j]);
        CLOBBER_MEM();
    }
    mtc_sink_d = s;
}

/* mtc-cal cal_horner bodies=1024: load=1 double_mul=3 double_add=4 loop_iter=1 */
void k_cal_horner(long iters, struct mtc_ctx *ctx) {
    const double *a = ctx->a;
    double s = 0;
    for (long r = 0; r < iters; r++) {
        for (int j = 0; j < N; j++) {
            double x = a[j];
            s += ((0.5 * x + 0.25) * x + 0.125) * x + 1.0;
        }
        CLOBBER_MEM();
    }
    mtc_sink_d = s;
}

/* mtc-cal cal_lcg bodies=1024: int_mul=1 int_add=1 int_logic=2 loop_iter=1 */
void k_cal_lcg(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    uint32_t x = mtc_three_u, s = 0;
    for (long r = 0; r < iters; r++) {
        for (int j = 0; j < N; j++) {
            x = x * 1103515245u + 12345u;
            s ^= x >> 16;
        }
        CLOBBER_MEM();
    }
    mtc_sink_u = s;
}

/* mtc-cal cal_mod bodies=1024: load=1 int_div=1 int_add=1 loop_iter=1 */
void k_cal_mod(long iters, struct mtc_ctx *ctx) {
    const uint32_t *ia = ctx->ia;
    uint32_t m = mtc_three_u * 2u + 1u, s = 0; /* divisor known only at run time */
    for (long r = 0; r < iters; r++) {
        for (int j = 0; j < N; j++) s += ia[j] % m;
        CLOBBER_MEM();
    }
    mtc_sink_u = s;
}

/* mtc-cal cal_list bodies=1024: ptr_deref=2 int_add=1 loop_iter=1 */
void k_cal_list(long iters, struct mtc_ctx *ctx) {
    uint64_t s = 0;
    for (long r = 0; r < iters; r++) {
        for (struct mtc_node *p = ctx->list; p; p = p->next) s += p->val;
        CLOBBER_MEM();
    }
    mtc_sink_u = s;
}

/* mtc-cal cal_expdecay bodies=1024: load=2 store=1 double_mul=2 double_add=1 exp=1 loop_iter=1 */
void k_cal_expdecay(long iters, struct mtc_ctx *ctx) {
    const double *a = ctx->a, *b = ctx->b;
    double *c = ctx->c, dt = mtc_half_d;
    for (long r = 0; r < iters; r++) {
        for (int j = 0; j < N; j++) c[j] = b[j] * exp(-dt * a[j]);
        CLOBBER_MEM();
    }
}

/* mtc-cal cal_max bodies=1024: load=1 fp_cmp=1 branch=1 loop_iter=1 */
void k_cal_max(long iters, struct mtc_ctx *ctx) {
    const double *a = ctx->a;
    double s = 0;
    for (long r = 0; r < iters; r++) {
        double m = -1.0;
        OPAQUE_F(m);
        for (int j = 0; j < N; j++)
            if (a[j] > m) m = a[j];
        s += m; /* once per pass: negligible per body */
        CLOBBER_MEM();
    }
    mtc_sink_d = s;
}

/* mtc-cal cal_memcpy_rows bodies=16: memcpy_byte=256 int_mul=2 loop_iter=1 */
void k_cal_memcpy_rows(long iters, struct mtc_ctx *ctx) {
    size_t row = ctx->nbytes_rt / 16;
    for (long r = 0; r < iters; r++) {
        for (int j = 0; j < 16; j++) memcpy(ctx->dst + j * row, ctx->src + j * row, row);
        CLOBBER_MEM();
    }
}
