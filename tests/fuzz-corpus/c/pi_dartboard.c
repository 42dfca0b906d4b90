/*
 * pi_dartboard: estimate pi by throwing darts at the unit square, master-worker.
 *
 * The ChronosMix case study. Every rank (rank 0 too) throws darts_per_round
 * darts per round; after each round the workers send their estimate to rank 0,
 * which averages its own and theirs. The result is the mean over rounds.
 *
 * usage: pi_dartboard [darts_per_round] [rounds]
 * prints (rank 0): pi=<estimate> error=<|estimate - pi|> darts=<total>
 *                  elapsed_s=<seconds of the rounds loop>
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_DARTS_PER_ROUND 1000000
#define DEFAULT_ROUNDS 10
#define SEED 20240601u
#define TAG_ESTIMATE 1

/* argv[index] as a positive int; `fallback` when absent, -1 when not a positive int. */
static long parse_positive(int argc, char **argv, int index, long fallback)
{
    if (index >= argc)
        return fallback;
    char *end;
    errno = 0;
    long value = strtol(argv[index], &end, 10);
    if (errno != 0 || end == argv[index] || *end != '\0' || value <= 0 || value > INT_MAX)
        return -1;
    return value;
}

/* One round: the fraction of darts inside the quarter circle, times four. */
static double throw_darts(int darts)
{
    long hits = 0;
    for (int d = 0; d < darts; d++) {
        double x = (double)rand() / RAND_MAX;
        double y = (double)rand() / RAND_MAX;
        if (x * x + y * y <= 1.0)
            hits++;
    }
    return 4.0 * (double)hits / darts;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long darts_arg = parse_positive(argc, argv, 1, DEFAULT_DARTS_PER_ROUND);
    long rounds_arg = parse_positive(argc, argv, 2, DEFAULT_ROUNDS);
    if (argc > 3 || darts_arg < 0 || rounds_arg < 0) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: %s [darts_per_round] [rounds]\n"
                    "  darts_per_round  darts each rank throws per round (positive, default %d)\n"
                    "  rounds           number of rounds (positive, default %d)\n",
                    argv[0], DEFAULT_DARTS_PER_ROUND, DEFAULT_ROUNDS);
        MPI_Finalize();
        return 2;
    }
    int darts_per_round = (int)darts_arg;
    int rounds = (int)rounds_arg;

    /* A per-rank seed: ranks throw different darts, and every run is the same. */
    srand(SEED + (unsigned)rank);

    double pi_sum = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int round = 0; round < rounds; round++) {
        double estimate = throw_darts(darts_per_round);
        if (rank == 0) {
            double round_sum = estimate;
            for (int worker = 1; worker < size; worker++) {
                double worker_estimate;
                MPI_Recv(&worker_estimate, 1, MPI_DOUBLE, worker, TAG_ESTIMATE, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                round_sum += worker_estimate;
            }
            pi_sum += round_sum / size;
        } else {
            MPI_Send(&estimate, 1, MPI_DOUBLE, 0, TAG_ESTIMATE, MPI_COMM_WORLD);
        }
    }
    double elapsed = MPI_Wtime() - t0;

    if (rank == 0) {
        double pi = pi_sum / rounds;
        printf("pi_dartboard: ranks=%d darts_per_round=%d rounds=%d\n", size, darts_per_round,
               rounds);
        printf("pi=%.10f error=%.3e darts=%lld\n", pi, fabs(pi - 3.14159265358979323846),
               (long long)darts_per_round * rounds * size);
        printf("elapsed_s=%.6e\n", elapsed);
    }
    MPI_Finalize();
    return 0;
}
