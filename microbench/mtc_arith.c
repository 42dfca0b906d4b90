/* mpicast MTC kernels, family "arith": integer and floating-point arithmetic, comparisons,
 * logic and conversions. Each class has a throughput kernel (_tp: 8 independent chains, 2 ops
 * each per iteration) and a latency kernel (_lat: one dependent chain of 16 ops per iteration).
 * Chains are built so values stay bounded and away from special cases (denormals, zero, NaN). */
#include "mtc_common.h"


/* The loop alone: subtracted from every kernel; also the loop_iter class. */
void k_empty(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    for (long i = 0; i < iters; i++) __asm__ volatile("");
}

/* int_add: a = a + b */
#define ST_IADD(a) a = a + b; OPAQUE_I(a);
DEF(int_add, uint32_t, OPAQUE_I, SU, 1u, uint32_t b = mtc_three_u; OPAQUE_I(b), ST_IADD)
/* int_mul: a = a * b (b odd, wraps) */
#define ST_IMUL(a) a = a * b; OPAQUE_I(a);
DEF(int_mul, uint32_t, OPAQUE_I, SU, 7u, uint32_t b = mtc_three_u; OPAQUE_I(b), ST_IMUL)
/* int_div: a = c / a with c = 2^30, a = 2^15: a fixed point, 16-bit quotients (signed int,
 * as in most C code). */
#define ST_IDIV(a) a = c / a; OPAQUE_I(a);
DEF(int_div, int32_t, OPAQUE_I, SU, 32768, int32_t c = (int32_t)(mtc_one_u << 30); OPAQUE_I(c),
    ST_IDIV)
/* int_cmp: a = (a < b): compare, set flag, widen */
#define ST_ICMP(a) a = (a < b); OPAQUE_I(a);
DEF(int_cmp, uint32_t, OPAQUE_I, SU, 1u, uint32_t b = mtc_three_u; OPAQUE_I(b), ST_ICMP)
/* int_logic: a = a ^ b (and, or, shift cost the same on current cores) */
#define ST_ILOG(a) a = a ^ b; OPAQUE_I(a);
DEF(int_logic, uint32_t, OPAQUE_I, SU, 1u, uint32_t b = mtc_three_u; OPAQUE_I(b), ST_ILOG)

/* float/double add: a = a + b, b tiny */
#define ST_FADD(a) a = a + b; OPAQUE_F(a);
DEF(float_add, float, OPAQUE_F, SD, 1.0f, float b = (float)mtc_tiny_d; OPAQUE_F(b), ST_FADD)
DEF(double_add, double, OPAQUE_F, SD, 1.0, double b = mtc_tiny_d; OPAQUE_F(b), ST_FADD)
/* mul: a = a * b, b = 1 at run time */
#define ST_FMUL(a) a = a * b; OPAQUE_F(a);
DEF(float_mul, float, OPAQUE_F, SD, 1.5f, float b = (float)mtc_one_d; OPAQUE_F(b), ST_FMUL)
DEF(double_mul, double, OPAQUE_F, SD, 1.5, double b = mtc_one_d; OPAQUE_F(b), ST_FMUL)
/* div: a = c / a, c = 1: a alternates between 1.5 and 2/3 */
#define ST_FDIV(a) a = c / a; OPAQUE_F(a);
DEF(float_div, float, OPAQUE_F, SD, 1.5f, float c = (float)mtc_one_d; OPAQUE_F(c), ST_FDIV)
DEF(double_div, double, OPAQUE_F, SD, 1.5, double c = mtc_one_d; OPAQUE_F(c), ST_FDIV)

/* fp_cmp: r = (a < b) on doubles; no natural chain (the result is an int), so the latency
 * kernel is a single stream of independent compares. */
#define ST_FCMP(a) { uint32_t r_ = (x < b); OPAQUE_I(r_); OPAQUE_F(x); }
DEF(fp_cmp, uint32_t, OPAQUE_I, SU, 0u, double x = mtc_one_d; double b = mtc_half_d; OPAQUE_F(b),
    ST_FCMP)

/* Conversions. Throughput: independent conversions of an opaque value. Latency: one chain of
 * round trips n -> (double) -> (int), 16 per iteration; src/machine charges half to each class. */
void k_int_to_fp_tp(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    int32_t n = (int32_t)mtc_three_u;
    for (long i = 0; i < iters; i++) { R16({ double d_ = (double)n; OPAQUE_F(d_); OPAQUE_I(n); }) }
    mtc_sink_u = (uint64_t)n;
}
void k_fp_to_int_tp(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    double x = mtc_half_d + 2.0;
    for (long i = 0; i < iters; i++) { R16({ int32_t r_ = (int32_t)x; OPAQUE_I(r_); OPAQUE_F(x); }) }
    mtc_sink_d = x;
}
void k_conv_roundtrip_lat(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    int32_t n = (int32_t)mtc_three_u;
    for (long i = 0; i < iters; i++) {
        R16({ double d_ = (double)n; OPAQUE_F(d_); n = (int32_t)d_; OPAQUE_I(n); })
    }
    mtc_sink_u = (uint64_t)n;
}
