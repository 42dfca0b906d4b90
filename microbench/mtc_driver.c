/* mpicast MTC driver: runs kernels on request and prints how long each call took.
 *
 * Protocol (one request per line on stdin, one answer per line on stdout):
 *   list                       -> the kernel names, space separated
 *   run NAME ITERS WS_BYTES    -> "CPU_NS WALL_NS": nanoseconds NAME(ITERS) took, on this
 *                                 thread's CPU clock (time while descheduled left out: the
 *                                 machine may be shared) and on CLOCK_MONOTONIC
 *   quit
 * WS_BYTES sizes the working set of the memory kernels (0: keep the current one).
 *
 * Built with an MPI compiler wrapper (MTC_WITH_MPI defined), the driver is an MPI process: it
 * calls MPI_Init first (a singleton), so the kernels run as a program's code does, beside the
 * MPI library's threads and with its memory hooks in place (malloc and free costs change). */
#define _POSIX_C_SOURCE 200809L
#ifdef MTC_WITH_MPI
#include <mpi.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mtc_common.h"
#include "mtc_kernels.h"

volatile uint64_t mtc_sink_u;
volatile double mtc_sink_d;
volatile uint32_t mtc_one_u = 1, mtc_three_u = 3;
volatile double mtc_one_d = 1.0, mtc_tiny_d = 1e-9, mtc_half_d = 0.5;

#define DECL(n) void k_##n(long, struct mtc_ctx *);
MTC_KERNELS(DECL)
#define ENTRY(n) {#n, k_##n},
static const struct { const char *name; mtc_kernel_fn fn; } table[] = {MTC_KERNELS(ENTRY)};
#define NKERNELS (sizeof table / sizeof table[0])

static uint64_t rng = 88172645463325252ull;
static uint64_t xorshift(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void *xalloc(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytes ? bytes : 64) != 0) {
        fprintf(stderr, "mtc: cannot allocate %zu bytes\n", bytes);
        exit(3);
    }
    memset(p, 1, bytes);
    return p;
}

/* Working sets already prepared, so that alternating between levels costs nothing. */
struct ws { size_t bytes; unsigned char *buf, *wbuf; void **chase; void **starts[8]; };
static struct ws sets[8];
static int nsets;

/* A working set of `bytes`: a ring through every 64-byte line in random order. */
static void set_working_set(struct mtc_ctx *c, size_t bytes) {
    size_t lines = bytes / 64;
    if (lines < 16) lines = 16;
    bytes = lines * 64;
    struct ws *w = NULL;
    for (int i = 0; i < nsets; i++)
        if (sets[i].bytes == bytes) w = &sets[i];
    if (!w) {
        if (nsets == 8) { /* forget the oldest */
            free(sets[0].buf);
            free(sets[0].wbuf);
            memmove(&sets[0], &sets[1], 7 * sizeof sets[0]);
            nsets = 7;
        }
        w = &sets[nsets++];
        w->buf = xalloc(bytes);
        w->wbuf = xalloc(bytes);
        w->bytes = bytes;
        size_t *perm = malloc(lines * sizeof *perm);
        for (size_t i = 0; i < lines; i++) perm[i] = i;
        for (size_t i = lines - 1; i > 0; i--) {
            size_t j = xorshift() % (i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (size_t i = 0; i < lines; i++)
            *(void **)(w->buf + perm[i] * 64) = w->buf + perm[(i + 1) % lines] * 64;
        w->chase = (void **)(w->buf + perm[0] * 64);
        for (int k = 0; k < 8; k++) w->starts[k] = (void **)(w->buf + perm[k * lines / 8] * 64);
        free(perm);
    }
    c->buf = w->buf;
    c->wbuf = w->wbuf;
    c->bytes = w->bytes;
    c->chase = w->chase;
    for (int k = 0; k < 8; k++) c->starts[k] = w->starts[k];
}

static void init_calibration(struct mtc_ctx *c) {
    c->a = xalloc(MTC_CAL_N * sizeof(double));
    c->b = xalloc(MTC_CAL_N * sizeof(double));
    c->c = xalloc(MTC_CAL_N * sizeof(double));
    c->fa = xalloc(MTC_CAL_N * sizeof(float));
    c->fb = xalloc(MTC_CAL_N * sizeof(float));
    c->ia = xalloc(MTC_CAL_N * sizeof(uint32_t));
    for (int i = 0; i < MTC_CAL_N; i++) {
        c->a[i] = 0.5 + (double)(xorshift() % 1000) / 1000.0;
        c->b[i] = 0.5 + (double)(xorshift() % 1000) / 1000.0;
        c->c[i] = 1.0;
        c->fa[i] = (float)c->a[i];
        c->fb[i] = 1.0f;
        c->ia[i] = (uint32_t)xorshift();
    }
    struct mtc_node *nodes = xalloc(MTC_CAL_N * sizeof *nodes);
    size_t perm[MTC_CAL_N];
    for (size_t i = 0; i < MTC_CAL_N; i++) perm[i] = i;
    for (size_t i = MTC_CAL_N - 1; i > 0; i--) {
        size_t j = xorshift() % (i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < MTC_CAL_N; i++) {
        nodes[perm[i]].val = i;
        nodes[perm[i]].next = i + 1 < MTC_CAL_N ? &nodes[perm[i + 1]] : NULL;
    }
    c->list = &nodes[perm[0]];
    c->src = xalloc(MTC_BYTES);
    c->dst = xalloc(MTC_BYTES);
    c->nbytes_rt = MTC_BYTES;
}

static long long elapsed_ns(struct timespec a, struct timespec b) {
    return (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
}

int main(int argc, char **argv) {
#ifdef MTC_WITH_MPI
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "mtc: MPI_Init failed\n");
        return 1;
    }
#else
    (void)argc;
    (void)argv;
#endif
    static struct mtc_ctx ctx;
    init_calibration(&ctx);
    set_working_set(&ctx, 16384);
    srand(12345);
    char line[256], name[128];
    setvbuf(stdout, NULL, _IOLBF, 0);
    while (fgets(line, sizeof line, stdin)) {
        long iters = 0;
        unsigned long long ws = 0;
        if (strncmp(line, "quit", 4) == 0) break;
        if (strncmp(line, "list", 4) == 0) {
            for (size_t i = 0; i < NKERNELS; i++) printf("%s%s", i ? " " : "", table[i].name);
            printf("\n");
            continue;
        }
        if (sscanf(line, "run %127s %ld %llu", name, &iters, &ws) != 3) {
            printf("error bad request\n");
            continue;
        }
        size_t k = 0;
        while (k < NKERNELS && strcmp(table[k].name, name) != 0) k++;
        if (k == NKERNELS) {
            printf("error unknown kernel %s\n", name);
            continue;
        }
        if (ws) set_working_set(&ctx, (size_t)ws);
        struct timespec c0, c1, w0, w1;
        clock_gettime(CLOCK_MONOTONIC, &w0);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        table[k].fn(iters, &ctx);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        clock_gettime(CLOCK_MONOTONIC, &w1);
        printf("%lld %lld\n", elapsed_ns(c0, c1), elapsed_ns(w0, w1));
    }
#ifdef MTC_WITH_MPI
    MPI_Finalize();
#endif
    return 0;
}
