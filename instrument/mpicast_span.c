/*
 * mpicast_span.c: what a real run of a program spends between MPI_Init and MPI_Finalize.
 *
 * Built by mpicc as a shared library and preloaded (LD_PRELOAD) into the uninstrumented runs
 * that `mpicast validate` times. Its MPI_Init and MPI_Init_thread call the real routines
 * (PMPI_*) and note when they return; its MPI_Finalize notes when it is called, then writes
 * one line to MPICAST_SPAN_DIR/span-<world rank>:
 *
 *     rank R init_s T0 finalize_s T1 cpu_s C
 *
 * (CLOCK_MONOTONIC seconds, so T1 - T0 is the rank's span; C is the same span on the thread's
 * CPU time). A prediction covers the same span;
 * mpirun's wall clock adds the launcher's start-up and MPI_Init and MPI_Finalize themselves.
 * A rank that never calls MPI_Finalize (MPI_Abort, a crash) writes nothing. Without
 * MPICAST_SPAN_DIR the library does nothing but call through.
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double t_init = -1.0, cpu_init;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The calling thread's CPU time: unlike the wall clock, not stretched while the rank waits for
 * a core that another process holds. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int MPI_Init(int *argc, char ***argv)
{
    int r = PMPI_Init(argc, argv);
    t_init = now();
    cpu_init = cpu_now();
    return r;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int r = PMPI_Init_thread(argc, argv, required, provided);
    t_init = now();
    cpu_init = cpu_now();
    return r;
}

int MPI_Finalize(void)
{
    double t = now(), cpu = cpu_now() - cpu_init;
    const char *dir = getenv("MPICAST_SPAN_DIR");
    int rank = 0;
    if (dir != NULL && t_init >= 0.0 && PMPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS) {
        char path[4096], line[200];
        snprintf(path, sizeof path, "%s/span-%d", dir, rank);
        int n = snprintf(line, sizeof line, "rank %d init_s %.9f finalize_s %.9f cpu_s %.9f\n", rank, t_init, t,
                         cpu);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            if (n > 0 && write(fd, line, (size_t)n) != n)
                fprintf(stderr, "mpicast_span: %s: short write\n", path);
            close(fd);
        }
    }
    return PMPI_Finalize();
}
