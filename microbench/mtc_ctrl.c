/* mpicast MTC kernels, family "ctrl": conditional branch and function call. */
#include "mtc_common.h"

/* branch: compare + conditional jump, never taken, so always predicted. A predicted branch
 * forms no data chain: the latency figure is the same single stream. */
void k_branch_tp(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    uint32_t x = mtc_three_u, k = mtc_one_u;
    OPAQUE_I(k);
    for (long i = 0; i < iters; i++) {
        R16({ if (x == k) mtc_sink_u = x; OPAQUE_I(x); })
    }
}

#if defined(__clang__)
#define MTC_NOINLINE __attribute__((noinline))
#else
#define MTC_NOINLINE __attribute__((noinline, noipa))
#endif

/* call: a call to a small non-inlined function and its return */
MTC_NOINLINE uint32_t mtc_callee(uint32_t x) {
    OPAQUE_I(x);
    return x;
}
#define ST_CALL(a) a = mtc_callee(a);
DEF(call, uint32_t, OPAQUE_I, SU, 1u, (void)0, ST_CALL)

/* branch_miss: loop exits the predictor cannot foresee. Each iteration runs one inner loop
 * of t trips, t drawn from 4..11 (a table of 65,536 made once with an LCG, far more than a
 * predictor's history can learn: 7 in 8 entries differ from the one before). branch_pred,
 * its baseline, runs the same code on trips 7, 8, 7, 8, ...: the same mean, a pattern the
 * predictor learns. The difference per iteration is 7/8 of one missed exit (the ops figure
 * in src/machine says so). The inner body, a store to a small ring in L1, is isort's emit. */
#define MTC_TRIPS 65536
static unsigned char mtc_trips_rand[MTC_TRIPS], mtc_trips_alt[MTC_TRIPS];

static void mtc_trips_init(void) {
    static int done;
    if (done)
        return;
    uint32_t s = 12345u;
    for (unsigned i = 0; i < MTC_TRIPS; i++) {
        s = s * 1664525u + 1013904223u;
        mtc_trips_rand[i] = (unsigned char)(4u + (s >> 29));
        mtc_trips_alt[i] = (unsigned char)(7u + (i & 1u));
    }
    done = 1;
}

MTC_NOINLINE static void mtc_run_trips(long iters, const unsigned char *trips) {
    uint32_t ring[256];
    unsigned pos = 0;
    for (long i = 0; i < iters; i++) {
        unsigned n = trips[i & (MTC_TRIPS - 1)];
        OPAQUE_I(n);
        for (unsigned c = 0; c < n; c++)
            ring[pos++ & 255u] = (uint32_t)i;
    }
    mtc_sink_u = ring[pos & 255u];
}

void k_branch_miss(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    mtc_trips_init();
    mtc_run_trips(iters, mtc_trips_rand);
}

void k_branch_pred(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    mtc_trips_init();
    mtc_run_trips(iters, mtc_trips_alt);
}
