/* mpicast MTC kernels, family "mem": loads and stores by working set, pointer chasing,
 * memcpy and memset. The driver prepares ctx->buf (ctx->bytes long) for the working set asked:
 * touched, and threaded with a pointer-chase ring that visits every 64-byte line once in a
 * random order (defeats the prefetchers); stores go to ctx->wbuf, of the same size. 16 accesses
 * per iteration. */
#define _DEFAULT_SOURCE
#include <string.h>
#include <sys/mman.h>
#include "mtc_common.h"

#define X16(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)

/* Sequential 8-byte loads over the working set, wrapping at the end. */
void k_mem_stream_load(long iters, struct mtc_ctx *ctx) {
    uint64_t *b = (uint64_t *)ctx->buf, *p = b, *end = b + (ctx->bytes / 8 / 16) * 16;
#define LD(k) { uint64_t v_ = p[k]; OPAQUE_I(v_); }
    for (long i = 0; i < iters; i++) {
        X16(LD)
        p += 16;
        if (p == end) p = b;
    }
}

/* Sequential 8-byte stores over the working set. */
void k_mem_stream_store(long iters, struct mtc_ctx *ctx) {
    uint64_t *b = (uint64_t *)ctx->wbuf, *p = b, *end = b + (ctx->bytes / 8 / 16) * 16;
    uint64_t v = 0;
#define STQ(k) { p[k] = v; OPAQUE_I(v); }
    for (long i = 0; i < iters; i++) {
        X16(STQ)
        p += 16;
        if (p == end) p = b;
    }
    CLOBBER_MEM();
}

/* Compute beside a stream: y[j] += a * x[i] (a matrix multiply's inner loop, a daxpy), x read
 * sequentially over the working set, y the 4 KiB dst buffer, which stays in L1 (loaded, added
 * and stored back). At the L1 working set it runs at the core's time for the body; further out
 * src/machine compares it with the core time and the stream load there: how much of the
 * stream the core's work hides (predict::memory's overlap). x is wbuf, whose bytes are normal
 * doubles or zero (buf's chase pointers read as doubles are subnormal: microcode assists).
 * 16 elements per iteration. */
#define OV_WINDOW (MTC_BYTES / 8)
void k_mem_overlap(long iters, struct mtc_ctx *ctx) {
    const double *b = (const double *)ctx->wbuf, *x = b, *end = b + (ctx->bytes / 8 / 16) * 16;
    double *y = (double *)ctx->dst;
    double a = mtc_half_d;
    size_t j = 0;
#define OV(k) y[j + (k)] += a * x[k];
    for (long i = 0; i < iters; i++) {
        X16(OV)
        x += 16;
        if (x == end) x = b;
        j = (j + 16) & (OV_WINDOW - 1);
    }
    CLOBBER_MEM();
}

/* The same beside a stream of stores: y[i] = a * x[j] + b, y streamed over wbuf (the working
 * set), x the 4 KiB src buffer in L1 (its bytes are normal doubles). The level takes a stream
 * of stores at least this fast: src/machine caps a slower pure store figure by it. */
void k_mem_overlap_store(long iters, struct mtc_ctx *ctx) {
    double *b = (double *)ctx->wbuf, *y = b, *end = b + (ctx->bytes / 8 / 16) * 16;
    const double *x = (const double *)ctx->src;
    double a = mtc_half_d, c = mtc_tiny_d;
    size_t j = 0;
#define OVS(k) y[k] = a * x[j + (k)] + c;
    for (long i = 0; i < iters; i++) {
        X16(OVS)
        y += 16;
        if (y == end) y = b;
        j = (j + 16) & (OV_WINDOW - 1);
    }
    CLOBBER_MEM();
}

/* A column walk: the working set seen as rows of `row` bytes (fewer where 16 rows do not fit),
 * walked down a column, 16 rows per iteration at constant offsets, then the next column, as a
 * column walk of a row-major matrix: a line per access. The addresses depend neither on loaded
 * data nor on a chain longer than an add (the accesses are independent). */
static void column_walk(long iters, const struct mtc_ctx *ctx, size_t row) {
    const unsigned char *b = ctx->buf, *p = b;
    if (ctx->bytes < 16 * row) row = ctx->bytes / 16 / 64 * 64;
    size_t rows = ctx->bytes / row / 16 * 16, cols = row / 64, r = 0, c = 0;
#define SLD(k) { uint64_t v_ = *(const uint64_t *)(p + (k) * row); OPAQUE_I(v_); }
    for (long i = 0; i < iters; i++) {
        X16(SLD)
        p += 16 * row;
        r += 16;
        if (r == rows) {
            r = 0;
            if (++c == cols) c = 0;
            p = b + c * 64;
        }
    }
}

/* Rows a page and a line apart (4160 bytes): a stride the prefetchers do not follow across
 * pages, spread over every cache set. */
void k_mem_stride_load(long iters, struct mtc_ctx *ctx) { column_walk(iters, ctx, 4160); }

/* Rows of 2048 bytes, a power of two (a 512-float matrix): the lines of a column fall in a
 * few cache sets, which they evict from one another (on this project's Intel VM, twice the
 * time per access of the 4160-byte rows from L2 and just past it). */
void k_mem_stride2k_load(long iters, struct mtc_ctx *ctx) { column_walk(iters, ctx, 2048); }

/* Random loads, latency: one dependent pointer chase (each load's address comes from the last). */
void k_mem_chase_lat(long iters, struct mtc_ctx *ctx) {
    void **p = ctx->chase;
    for (long i = 0; i < iters; i++) { R16(p = (void **)*p;) }
    mtc_sink_u = (uint64_t)(uintptr_t)p;
}

/* Random loads, throughput: 8 independent chases, spread around the ring. */
void k_mem_chase_tp(long iters, struct mtc_ctx *ctx) {
    void **p0 = ctx->starts[0], **p1 = ctx->starts[1], **p2 = ctx->starts[2], **p3 = ctx->starts[3];
    void **p4 = ctx->starts[4], **p5 = ctx->starts[5], **p6 = ctx->starts[6], **p7 = ctx->starts[7];
#define CH8 p0 = (void **)*p0; p1 = (void **)*p1; p2 = (void **)*p2; p3 = (void **)*p3; \
            p4 = (void **)*p4; p5 = (void **)*p5; p6 = (void **)*p6; p7 = (void **)*p7;
    for (long i = 0; i < iters; i++) { CH8 CH8 }
    mtc_sink_u = (uint64_t)(uintptr_t)p0 ^ (uintptr_t)p1 ^ (uintptr_t)p2 ^ (uintptr_t)p3 ^
                 (uintptr_t)p4 ^ (uintptr_t)p5 ^ (uintptr_t)p6 ^ (uintptr_t)p7;
}

/* Random stores: 8 LCG chains give line indices (power-of-two part of the working set); one
 * 8-byte store per index. k_mem_lcg_only computes the same indices without storing; src/machine
 * subtracts it. */
#define LCG_M 6364136223846793005ull
#define LCG_C 1442695040888963407ull
#define RS(x) { x = x * LCG_M + LCG_C; uint64_t j_ = (x >> 29) & mask; *(uint64_t *)(b + (j_ << 6)) = x; }
#define RL(x) { x = x * LCG_M + LCG_C; uint64_t j_ = (x >> 29) & mask; OPAQUE_I(j_); }
#define RS8(M) M(x0) M(x1) M(x2) M(x3) M(x4) M(x5) M(x6) M(x7)
static uint64_t pow2_lines(size_t bytes) {
    uint64_t l = 1;
    while (l * 2 * 64 <= bytes) l *= 2;
    return l;
}
void k_mem_rand_store(long iters, struct mtc_ctx *ctx) {
    unsigned char *b = ctx->wbuf;
    uint64_t mask = pow2_lines(ctx->bytes) - 1;
    uint64_t x0 = 1, x1 = 2, x2 = 3, x3 = 4, x4 = 5, x5 = 6, x6 = 7, x7 = 8;
    for (long i = 0; i < iters; i++) { RS8(RS) RS8(RS) }
    CLOBBER_MEM();
    mtc_sink_u = x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7;
}
void k_mem_lcg_only(long iters, struct mtc_ctx *ctx) {
    uint64_t mask = pow2_lines(ctx->bytes) - 1;
    uint64_t x0 = 1, x1 = 2, x2 = 3, x3 = 4, x4 = 5, x5 = 6, x6 = 7, x7 = 8;
    for (long i = 0; i < iters; i++) { RS8(RL) RS8(RL) }
    mtc_sink_u = x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7;
}

/* First touch: one 8-byte store into each page of freshly mapped memory (the page fault, the
 * kernel zeroing the page, and its share of the unmapping), 16 pages per iteration, in a 64 MiB
 * mapping replaced when used up, as a large malloc (mmap'd by the C library) is first written. */
#define FT_PAGES 16384
static unsigned char *ft_map;
static size_t ft_next;
void k_mem_first_touch(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
#define FT(k) { ft_map[(ft_next + (k)) * 4096] = 1; }
    for (long i = 0; i < iters; i++) {
        if (ft_map == NULL || ft_next + 16 > FT_PAGES) {
            if (ft_map != NULL)
                munmap(ft_map, (size_t)FT_PAGES * 4096);
            void *m = mmap(NULL, (size_t)FT_PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            ft_map = m == MAP_FAILED ? NULL : m;
            ft_next = 0;
            if (ft_map == NULL)
                return;
        }
        X16(FT)
        ft_next += 16;
    }
    CLOBBER_MEM();
}

/* memcpy / memset of MTC_BYTES bytes (L1-resident), size known only at run time, as in most
 * code: the library routine runs. One call per iteration. */
void k_memcpy(long iters, struct mtc_ctx *ctx) {
    for (long i = 0; i < iters; i++) {
        memcpy(ctx->dst, ctx->src, ctx->nbytes_rt);
        CLOBBER_MEM();
    }
}
void k_memset(long iters, struct mtc_ctx *ctx) {
    for (long i = 0; i < iters; i++) {
        memset(ctx->dst, (int)(i & 0x7f), ctx->nbytes_rt);
        CLOBBER_MEM();
    }
}
