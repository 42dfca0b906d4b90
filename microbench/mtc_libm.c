/* mpicast MTC kernels, family "libm": sqrt, exp, log, cos, pow, fabs, rand. Chains iterate a
 * function to a fixed point that lies in the ordinary range of its argument (no fast path for
 * 0, 1, infinities): exp(-a) and -log(a) -> 0.567, cos(a) -> 0.739, pow(0.5, a) -> 0.641.
 * The calls go through the C library the user's program links (-lm). */
#include <math.h>
#include <stdlib.h>
#include "mtc_common.h"

#define ST_SQRT(a) a = sqrt(a); OPAQUE_F(a);
DEF(sqrt, double, OPAQUE_F, SD, 2.0, (void)0, ST_SQRT)
#define ST_EXP(a) a = exp(-a); OPAQUE_F(a);
DEF(exp, double, OPAQUE_F, SD, 0.5, (void)0, ST_EXP)
#define ST_LOG(a) a = -log(a); OPAQUE_F(a);
DEF(log, double, OPAQUE_F, SD, 0.5, (void)0, ST_LOG)
#define ST_COS(a) a = cos(a); OPAQUE_F(a);
DEF(sincos, double, OPAQUE_F, SD, 0.7, (void)0, ST_COS)
#define ST_POW(a) a = pow(c, a); OPAQUE_F(a);
DEF(pow, double, OPAQUE_F, SD, 0.6, double c = mtc_half_d; OPAQUE_F(c), ST_POW)
#define ST_FABS(a) a = fabs(a); OPAQUE_F(a);
DEF(fabs, double, OPAQUE_F, SD, 1.5, (void)0, ST_FABS)

/* rand(): the library keeps its own state chain, so throughput and latency coincide. */
void k_rand_tp(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    for (long i = 0; i < iters; i++) { R16({ uint32_t r_ = (uint32_t)rand(); OPAQUE_I(r_); }) }
}
