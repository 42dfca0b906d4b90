/* mpicast MTC kernels: shared definitions.
 *
 * Every kernel has the signature `void k(long iters, void *ctx)` and runs `iters` loop iterations,
 * each doing MTC_UNROLL operations of its class (calibration kernels: one loop body per
 * iteration). The driver (mtc_driver.c) times a call with CLOCK_MONOTONIC; the Rust side
 * (src/machine) subtracts the empty loop and divides by the op count.
 *
 * Defences against the optimiser:
 *   OPAQUE_I(x) / OPAQUE_F(x): an empty asm that claims to modify x, in a register; the compiler
 *       can neither fold the chain nor hoist the op out of the loop, and no instruction is added.
 *   SINK_*: results end in a volatile global, so nothing is dead.
 */
#ifndef MTC_COMMON_H
#define MTC_COMMON_H

#include <stdint.h>
#include <stddef.h>

#define MTC_UNROLL 16

#define OPAQUE_I(x) __asm__ volatile("" : "+r"(x))
#if defined(__x86_64__) || defined(__i386__)
#define OPAQUE_F(x) __asm__ volatile("" : "+x"(x))
#elif defined(__aarch64__)
#define OPAQUE_F(x) __asm__ volatile("" : "+w"(x))
#else
#define OPAQUE_F(x) __asm__ volatile("" : "+m"(x))
#endif
/* Makes the compiler believe memory changed: loads cannot be hoisted out of the loop. */
#define CLOBBER_MEM() __asm__ volatile("" ::: "memory")

extern volatile uint64_t mtc_sink_u;
extern volatile double mtc_sink_d;

/* Runtime constants the compiler cannot see through (set by the driver before any kernel). */
extern volatile uint32_t mtc_one_u, mtc_three_u;
extern volatile double mtc_one_d, mtc_tiny_d, mtc_half_d;

struct mtc_node { struct mtc_node *next; uint64_t val; };

/* Context passed to memory and calibration kernels. */
struct mtc_ctx {
    unsigned char *buf;   /* working set for loads, 4096-byte aligned, holds the chase ring */
    unsigned char *wbuf;  /* working set for stores, same size (stores would break the ring) */
    size_t bytes;         /* its size */
    void **chase;         /* pointer-chase ring in buf (random cyclic permutation of cache lines) */
    void **starts[8];     /* 8 points spread evenly around that ring */
    struct mtc_node *list; /* calibration linked list, MTC_CAL_N nodes in shuffled order */
    double *a, *b, *c;    /* calibration arrays, MTC_CAL_N doubles each */
    float *fa, *fb;
    uint32_t *ia;
    unsigned char *src, *dst; /* byte buffers, MTC_BYTES each */
    size_t nbytes_rt;     /* MTC_BYTES, as a runtime value */
};
#define MTC_CAL_N 1024
#define MTC_BYTES 4096

/* Repeat a statement 16 times (one unrolled iteration); R8 for the 8 chains twice. */
#define R16(s) s s s s s s s s s s s s s s s s

#define C8(S) S(a0) S(a1) S(a2) S(a3) S(a4) S(a5) S(a6) S(a7)

/* DEF(name, type, opaque, init, setup, STEP): STEP(a) performs one op on chain a. */
#define DEF(name, T, OPQ, SINKV, init, setup, STEP)                                          \
    void k_##name##_tp(long iters, struct mtc_ctx *ctx) {                                    \
        (void)ctx;                                                                           \
        setup;                                                                               \
        T a0 = init, a1 = init, a2 = init, a3 = init, a4 = init, a5 = init, a6 = init,       \
          a7 = init;                                                                         \
        for (long i = 0; i < iters; i++) { C8(STEP) C8(STEP) }                               \
        SINKV = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;                                       \
    }                                                                                        \
    void k_##name##_lat(long iters, struct mtc_ctx *ctx) {                                   \
        (void)ctx;                                                                           \
        setup;                                                                               \
        T a0 = init;                                                                         \
        for (long i = 0; i < iters; i++) { R16(STEP(a0)) }                                   \
        SINKV = a0;                                                                          \
    }

#define SU mtc_sink_u
#define SD mtc_sink_d

typedef void (*mtc_kernel_fn)(long iters, struct mtc_ctx *ctx);

#endif
