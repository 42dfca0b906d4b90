/* mpicast CTC: MPI ping-pong, send/receive overheads and a few collectives.
 *
 * Built by `mpicast bench network` with the user's mpicc into a cache directory, launched with
 * mpirun (or the user's launcher). Rank 0 prints one line per result on stdout, flushed at once
 * so the caller can draw progress:
 *
 *   pp SIZE N MIN_S MEDIAN_S P90_S MEAN_S REL_STDERR     one-way time (round trip / 2)
 *   os SIZE MEDIAN_S N                                   MPI_Isend post cost (receive pre-posted)
 *   or SIZE MEDIAN_S N                                   MPI_Irecv post cost (message not yet sent)
 *   bx SIZE N MIN_S MEDIAN_S                             bidirectional exchange: both ranks send
 *                                                        SIZE to each other at once; per exchange
 *   coll NAME SIZE N MEAN_S MIN_S                        per call, slowest rank's mean
 *   ctor NAME MEMBERS N MEAN_S                           communicator constructors over the
 *                                                        world, per call made and freed, slowest
 *                                                        rank's mean (MEMBERS: the new
 *                                                        communicator's size, 0 for none)
 *   info KEY VALUE
 *
 * Repetitions adapt as in SKaMPI: after a warm-up, samples are taken in chunks until the standard
 * error of the mean is under the target (-e) with at least -m samples, or the per-size time
 * budget (-b) is spent, or -M samples are taken. Only ranks 0 and 1 take part in the ping-pong;
 * all ranks take part in the collectives.
 *
 * The constructors (split into the world, into one rank each, MPI_UNDEFINED, a duplicate of
 * the world) are timed beside what a simulation replays of them: their collectives called
 * blocking (`ref_gather`: an allgather of 8 bytes; `ref_reduce`: three allreduces of one int)
 * and a duplicate of MPI_COMM_SELF (`self`, the machine table's comm_create; `self_null`, a split
 * of MPI_COMM_SELF with MPI_UNDEFINED, its comm_null). What a constructor
 * takes beyond them is its own work over a communicator of several ranks: OpenMPI agrees on a
 * context id through nonblocking collectives and selects collective modules for it.
 *
 * The exchange against the one-way time of the same size says whether the two directions share
 * the link's bandwidth (about twice the time) or each has its own (about the same time).
 *
 * Options: -S sizes (comma list, bytes)  -O overhead sizes  -C collective sizes
 *          -X exchange sizes
 *          -b budget_s  -e rel_stderr  -m min_reps  -M max_reps  -w warmup
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define MAX_SIZES 256

static int parse_list(const char *s, long *out, int max) {
    int n = 0;
    while (s && *s && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s) break;
        out[n++] = v;
        s = (*end == ',') ? end + 1 : end;
    }
    return n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(double *sorted, long n, double q) {
    long i = (long)(q * (double)(n - 1) + 0.5);
    if (i < 0) i = 0;
    if (i >= n) i = n - 1;
    return sorted[i];
}

int main(int argc, char **argv) {
    long sizes[MAX_SIZES], osizes[MAX_SIZES], csizes[MAX_SIZES], xsizes[MAX_SIZES];
    int nsizes = 0, nosizes = 0, ncsizes = 0, nxsizes = 0;
    double budget_s = 0.5, target = 0.02;
    long min_reps = 20, max_reps = 100000, warmup = 10;
    int rank, nranks;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    for (int i = 1; i + 1 < argc; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (!strcmp(o, "-S")) nsizes = parse_list(v, sizes, MAX_SIZES);
        else if (!strcmp(o, "-O")) nosizes = parse_list(v, osizes, MAX_SIZES);
        else if (!strcmp(o, "-C")) ncsizes = parse_list(v, csizes, MAX_SIZES);
        else if (!strcmp(o, "-X")) nxsizes = parse_list(v, xsizes, MAX_SIZES);
        else if (!strcmp(o, "-b")) budget_s = atof(v);
        else if (!strcmp(o, "-e")) target = atof(v);
        else if (!strcmp(o, "-m")) min_reps = atol(v);
        else if (!strcmp(o, "-M")) max_reps = atol(v);
        else if (!strcmp(o, "-w")) warmup = atol(v);
        else {
            if (rank == 0) fprintf(stderr, "pingpong: unknown option %s\n", o);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (nranks < 2) {
        if (rank == 0) fprintf(stderr, "pingpong: needs at least 2 ranks, got %d\n", nranks);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    long maxsize = 8;
    for (int i = 0; i < nsizes; i++) if (sizes[i] > maxsize) maxsize = sizes[i];
    for (int i = 0; i < nosizes; i++) if (osizes[i] > maxsize) maxsize = osizes[i];
    for (int i = 0; i < nxsizes; i++) if (xsizes[i] > maxsize) maxsize = xsizes[i];
    for (int i = 0; i < ncsizes; i++) if (csizes[i] * (long)nranks > maxsize) maxsize = csizes[i] * (long)nranks;
    if (8L * nranks > maxsize) maxsize = 8L * nranks; /* the constructors' allgather */
    char *sbuf = malloc((size_t)maxsize), *rbuf = malloc((size_t)maxsize);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "pingpong: rank %d: cannot allocate %ld bytes\n", rank, maxsize);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 1, (size_t)maxsize); /* touch the pages before timing */
    memset(rbuf, 0, (size_t)maxsize);
    double *samples = malloc(sizeof(double) * (size_t)max_reps);
    if (!samples) MPI_Abort(MPI_COMM_WORLD, 1);

    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);

    if (rank == 0) {
        char name[MPI_MAX_PROCESSOR_NAME];
        int len;
        MPI_Get_processor_name(name, &len);
        printf("info nranks %d\ninfo wtick %g\ninfo host0 %s\n", nranks, MPI_Wtick(), name);
        fflush(stdout);
    }

    /* Ping-pong. */
    if (rank < 2) {
        int peer = 1 - rank;
        for (int si = 0; si < nsizes; si++) {
            int size = (int)sizes[si];
            for (long w = 0; w < warmup; w++) {
                if (rank == 0) {
                    MPI_Send(sbuf, size, MPI_BYTE, peer, 1, pair);
                    MPI_Recv(rbuf, size, MPI_BYTE, peer, 1, pair, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(rbuf, size, MPI_BYTE, peer, 1, pair, MPI_STATUS_IGNORE);
                    MPI_Send(sbuf, size, MPI_BYTE, peer, 1, pair);
                }
            }
            long n = 0;
            double start = MPI_Wtime(), sum = 0, sumsq = 0, rel = 1.0;
            int go = 1;
            long chunk = min_reps;
            while (go) {
                for (long c = 0; c < chunk && n < max_reps; c++) {
                    if (rank == 0) {
                        double t0 = MPI_Wtime();
                        MPI_Send(sbuf, size, MPI_BYTE, peer, 2, pair);
                        MPI_Recv(rbuf, size, MPI_BYTE, peer, 2, pair, MPI_STATUS_IGNORE);
                        double t = (MPI_Wtime() - t0) / 2.0;
                        samples[n++] = t;
                        sum += t;
                        sumsq += t * t;
                    } else {
                        MPI_Recv(rbuf, size, MPI_BYTE, peer, 2, pair, MPI_STATUS_IGNORE);
                        MPI_Send(sbuf, size, MPI_BYTE, peer, 2, pair);
                        n++;
                    }
                }
                if (rank == 0) {
                    double mean = sum / (double)n;
                    double var = n > 1 ? (sumsq - sum * mean) / (double)(n - 1) : 0.0;
                    if (var < 0) var = 0;
                    rel = mean > 0 ? (var > 0 ? sqrt(var / (double)n) / mean : 0.0) : 0.0;
                    double spent = MPI_Wtime() - start;
                    go = !(rel < target && n >= min_reps) && spent < budget_s && n < max_reps;
                    /* next chunk: about a tenth of the budget, at least min_reps */
                    double per = spent / (double)n;
                    long want = per > 0 ? (long)(0.1 * budget_s / per) : min_reps;
                    chunk = want < min_reps ? min_reps : want;
                }
                MPI_Bcast(&go, 1, MPI_INT, 0, pair);
                MPI_Bcast(&chunk, 1, MPI_LONG, 0, pair);
            }
            if (rank == 0) {
                double mean = sum / (double)n;
                qsort(samples, (size_t)n, sizeof(double), cmp_double);
                printf("pp %d %ld %.9e %.9e %.9e %.9e %.4f\n", size, n, samples[0], quantile(samples, n, 0.5),
                       quantile(samples, n, 0.9), mean, rel);
                fflush(stdout);
            }
        }

        /* Overheads: how long posting a nonblocking send or receive takes. */
        for (int si = 0; si < nosizes; si++) {
            int size = (int)osizes[si];
            long reps = min_reps < 50 ? 50 : min_reps;
            if (reps > max_reps) reps = max_reps;
            /* send overhead: rank 1 pre-posts its receive and says so with a 0-byte message */
            for (long r = 0; r < reps + warmup; r++) {
                if (rank == 0) {
                    MPI_Request rq;
                    MPI_Recv(NULL, 0, MPI_BYTE, peer, 3, pair, MPI_STATUS_IGNORE);
                    double t0 = MPI_Wtime();
                    MPI_Isend(sbuf, size, MPI_BYTE, peer, 4, pair, &rq);
                    double t = MPI_Wtime() - t0;
                    MPI_Wait(&rq, MPI_STATUS_IGNORE);
                    if (r >= warmup) samples[r - warmup] = t;
                } else {
                    MPI_Request rq;
                    MPI_Irecv(rbuf, size, MPI_BYTE, peer, 4, pair, &rq);
                    MPI_Send(NULL, 0, MPI_BYTE, peer, 3, pair);
                    MPI_Wait(&rq, MPI_STATUS_IGNORE);
                }
            }
            if (rank == 0) {
                qsort(samples, (size_t)reps, sizeof(double), cmp_double);
                printf("os %d %.9e %ld\n", size, quantile(samples, reps, 0.5), reps);
                fflush(stdout);
            }
            /* receive overhead: rank 0 posts its receive, then tells rank 1 to send */
            for (long r = 0; r < reps + warmup; r++) {
                if (rank == 0) {
                    MPI_Request rq;
                    double t0 = MPI_Wtime();
                    MPI_Irecv(rbuf, size, MPI_BYTE, peer, 5, pair, &rq);
                    double t = MPI_Wtime() - t0;
                    MPI_Send(NULL, 0, MPI_BYTE, peer, 6, pair);
                    MPI_Wait(&rq, MPI_STATUS_IGNORE);
                    if (r >= warmup) samples[r - warmup] = t;
                } else {
                    MPI_Recv(NULL, 0, MPI_BYTE, peer, 6, pair, MPI_STATUS_IGNORE);
                    MPI_Send(sbuf, size, MPI_BYTE, peer, 5, pair);
                }
            }
            if (rank == 0) {
                qsort(samples, (size_t)reps, sizeof(double), cmp_double);
                printf("or %d %.9e %ld\n", size, quantile(samples, reps, 0.5), reps);
                fflush(stdout);
            }
        }

        /* Bidirectional exchange: both ranks post a receive and a send of the same size at once;
         * a 0-byte round trip after each (not timed) keeps the ranks in step. */
        for (int si = 0; si < nxsizes; si++) {
            int size = (int)xsizes[si];
            long reps = min_reps;
            for (int phase = 0; phase < 2; phase++) {
                long todo = phase == 0 ? warmup : reps;
                for (long r = 0; r < todo; r++) {
                    MPI_Request rq[2];
                    double t0 = MPI_Wtime();
                    MPI_Irecv(rbuf, size, MPI_BYTE, peer, 7, pair, &rq[0]);
                    MPI_Isend(sbuf, size, MPI_BYTE, peer, 7, pair, &rq[1]);
                    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
                    /* both ranks done before the next exchange: a 0-byte round trip, not timed */
                    double t = MPI_Wtime() - t0;
                    if (rank == 0) {
                        MPI_Send(NULL, 0, MPI_BYTE, peer, 8, pair);
                        MPI_Recv(NULL, 0, MPI_BYTE, peer, 8, pair, MPI_STATUS_IGNORE);
                    } else {
                        MPI_Recv(NULL, 0, MPI_BYTE, peer, 8, pair, MPI_STATUS_IGNORE);
                        MPI_Send(NULL, 0, MPI_BYTE, peer, 8, pair);
                    }
                    if (phase == 1 && r < max_reps) samples[r] = t;
                }
                if (phase == 0 && rank == 0) {
                    /* as many exchanges as fill the per-size budget, from the ping-pong's pace */
                    double t0 = MPI_Wtime();
                    MPI_Send(sbuf, size, MPI_BYTE, peer, 9, pair);
                    MPI_Recv(rbuf, size, MPI_BYTE, peer, 9, pair, MPI_STATUS_IGNORE);
                    double rt = MPI_Wtime() - t0;
                    long want = rt > 0 ? (long)(budget_s / (2.0 * rt)) : min_reps;
                    reps = want < min_reps ? min_reps : (want > max_reps ? max_reps : want);
                } else if (phase == 0) {
                    MPI_Recv(rbuf, size, MPI_BYTE, peer, 9, pair, MPI_STATUS_IGNORE);
                    MPI_Send(sbuf, size, MPI_BYTE, peer, 9, pair);
                }
                if (phase == 0) MPI_Bcast(&reps, 1, MPI_LONG, 0, pair);
            }
            if (rank == 0) {
                qsort(samples, (size_t)reps, sizeof(double), cmp_double);
                printf("bx %d %ld %.9e %.9e\n", size, reps, samples[0], quantile(samples, reps, 0.5));
                fflush(stdout);
            }
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Collectives at the launched number of ranks: a fixed count of calls, sized from a probe. */
    const char *names[] = {"barrier", "bcast", "allreduce", "alltoall"};
    for (int c = 0; c < 4; c++) {
        int nsz = c == 0 ? 1 : ncsizes;
        for (int si = 0; si < nsz; si++) {
            long size = c == 0 ? 0 : csizes[si];
            int count = (int)(size / 8);
            if (c == 3) count = (int)size; /* alltoall: size bytes per peer */
            long reps = 1;
            for (int phase = 0; phase < 2; phase++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime(), tmin = 1e30;
                for (long r = 0; r < reps; r++) {
                    double t1 = MPI_Wtime();
                    switch (c) {
                    case 0: MPI_Barrier(MPI_COMM_WORLD); break;
                    case 1: MPI_Bcast(sbuf, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD); break;
                    case 2: MPI_Allreduce(sbuf, rbuf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
                    default: MPI_Alltoall(sbuf, count, MPI_BYTE, rbuf, count, MPI_BYTE, MPI_COMM_WORLD);
                    }
                    double t = MPI_Wtime() - t1;
                    if (t < tmin) tmin = t;
                }
                double mine = (MPI_Wtime() - t0) / (double)reps, slowest, fastest_min;
                MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                MPI_Allreduce(&tmin, &fastest_min, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (phase == 0) {
                    /* probe: choose reps to fill about a fifth of the per-size budget */
                    long want = slowest > 0 ? (long)(0.2 * budget_s / slowest) : 100;
                    reps = want < 5 ? 5 : (want > 2000 ? 2000 : want);
                } else if (rank == 0) {
                    printf("coll %s %ld %ld %.9e %.9e\n", names[c], size, reps, slowest, fastest_min);
                    fflush(stdout);
                }
            }
        }
    }

    /* Communicator constructors: a fixed count of calls sized from a probe, as the collectives. */
    {
        const char *cnames[] = {"ref_gather", "ref_reduce", "self", "split", "split", "split", "dup", "self_null"};
        int members[] = {0, 0, 1, nranks, 1, 0, nranks, 0};
        for (int c = 0; c < 8; c++) {
            long reps = 20;
            for (int phase = 0; phase < 2; phase++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                for (long r = 0; r < reps; r++) {
                    MPI_Comm nc = MPI_COMM_NULL;
                    int one = 1, got = 0;
                    switch (c) {
                    case 0: MPI_Allgather(sbuf, 8, MPI_BYTE, rbuf, 8, MPI_BYTE, MPI_COMM_WORLD); break;
                    case 1:
                        for (int k = 0; k < 3; k++)
                            MPI_Allreduce(&one, &got, 1, MPI_INT, k == 0 ? MPI_MAX : MPI_MIN, MPI_COMM_WORLD);
                        break;
                    case 2: MPI_Comm_dup(MPI_COMM_SELF, &nc); break;
                    case 3: MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &nc); break;
                    case 4: MPI_Comm_split(MPI_COMM_WORLD, rank, 0, &nc); break;
                    case 5: MPI_Comm_split(MPI_COMM_WORLD, MPI_UNDEFINED, rank, &nc); break;
                    case 7: MPI_Comm_split(MPI_COMM_SELF, MPI_UNDEFINED, 0, &nc); break;
                    default: MPI_Comm_dup(MPI_COMM_WORLD, &nc);
                    }
                    if (nc != MPI_COMM_NULL) MPI_Comm_free(&nc);
                }
                double mine = (MPI_Wtime() - t0) / (double)reps, slowest;
                MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (phase == 0) {
                    long want = slowest > 0 ? (long)(0.2 * budget_s / slowest) : 100;
                    reps = want < 20 ? 20 : (want > 20000 ? 20000 : want);
                } else if (rank == 0) {
                    printf("ctor %s %d %ld %.9e\n", cnames[c], members[c], reps, slowest);
                    fflush(stdout);
                }
            }
        }
    }

    if (pair != MPI_COMM_NULL) MPI_Comm_free(&pair);
    free(samples);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
