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
