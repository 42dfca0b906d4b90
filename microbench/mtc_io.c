/* mpicast MTC kernels, family "io": the C library calls that programs make around their
 * numerics: heap allocation, formatted output and buffered writes. Output goes through stdio
 * to a temporary file (tmpfile(): the page cache, as a program's result file), rewound every
 * 64 MiB so the file stays small. The calls go through the C library the program links. */
#include <stdio.h>
#include <stdlib.h>
#ifdef MTC_WITH_MPI
#include <mpi.h>
#endif
#include "mtc_common.h"

#define MTC_IO_REWIND (64L << 20)

static FILE *io_file(void)
{
    static FILE *f;
    if (f == NULL) {
        f = tmpfile();
        if (f == NULL) {
            fprintf(stderr, "mtc: tmpfile() failed\n");
            exit(1);
        }
    }
    if (ftell(f) > MTC_IO_REWIND)
        rewind(f);
    return f;
}

/* malloc of a small block and its free: two calls per iteration. */
void k_alloc(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    for (long i = 0; i < iters; i++) {
        void *p = malloc(48 + (size_t)(i & 7) * 8);
        OPAQUE_I(p);
        free(p);
    }
}

/* fprintf with no conversion: the call itself (format scan, locking, buffering). */
void k_print_call(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    FILE *f = io_file();
    for (long i = 0; i < iters; i++) {
        fprintf(f, "x\n");
        if ((i & 4095) == 0)
            f = io_file();
    }
}

/* Eight integer conversions per call (%d of varying magnitudes). */
void k_print_int(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    FILE *f = io_file();
    int v = (int)mtc_three_u;
    for (long i = 0; i < iters; i++) {
        int a = v + (int)(i & 1023);
        fprintf(f, "%d %d %d %d %d %d %d %d\n", a, a * 7, a * 131, -a, a * 1013, a >> 3, a * 3, a + 100000);
        if ((i & 4095) == 0)
            f = io_file();
    }
}

/* Eight floating-point conversions per call (%.6e and %g, as results are written). */
void k_print_fp(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    FILE *f = io_file();
    double x = mtc_one_d;
    for (long i = 0; i < iters; i++) {
        double a = x + (double)(i & 1023) * 0.001;
        fprintf(f, "%.6e %g %.6e %g %.6e %g %.6e %g\n", a, a * 3.1, a / 7.0, -a, a * a, a + 1e5, a * 1e-9, a - 0.5);
        if ((i & 4095) == 0)
            f = io_file();
    }
}

/* fwrite of MTC_BYTES bytes: copying into stdio's buffer and writing it to the file. */
void k_write(long iters, struct mtc_ctx *ctx) {
    FILE *f = io_file();
    for (long i = 0; i < iters; i++) {
        if (fwrite(ctx->src, 1, ctx->nbytes_rt, f) != ctx->nbytes_rt) {
            fprintf(stderr, "mtc: fwrite to the temporary file failed\n");
            exit(1);
        }
        if ((i & 63) == 0)
            f = io_file();
    }
}

#ifdef MTC_WITH_MPI
/* A communicator made and freed: MPI_Comm_dup of MPI_COMM_SELF and MPI_Comm_free. What a
 * constructor costs its process whatever the parent (a context id agreed, the collective
 * components selected, the structure built); the messages a larger parent adds are not in it. */
void k_comm_create(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    for (long i = 0; i < iters; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_SELF, &c);
        MPI_Comm_free(&c);
    }
}

/* A split with the colour MPI_UNDEFINED: the context-id agreement's share of a constructor
 * that makes no communicator. At 1 rank here it took 0.9-1.2 us against 2.8-3.4 us for a
 * duplicate made and freed. */
void k_comm_null(long iters, struct mtc_ctx *ctx) {
    (void)ctx;
    for (long i = 0; i < iters; i++) {
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_SELF, MPI_UNDEFINED, 0, &c);
    }
}
#endif
