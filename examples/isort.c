/*
 * isort: parallel bucket sort of integer keys, in the manner of the NAS IS benchmark.
 *
 * Every rank generates keys_per_rank keys in [0, MAX_KEY) with its own LCG; as in NAS IS
 * a key is the mean of four uniform draws, so keys cluster around MAX_KEY / 2 and the
 * middle ranks receive more keys than the outer ones. Rank r owns the key range
 * [ceil(r * MAX_KEY / size), ceil((r + 1) * MAX_KEY / size)). Each iteration:
 *   1. count the keys bound for each rank and exchange the counts (MPI_Alltoall),
 *   2. bucket the keys by destination and exchange them (MPI_Alltoallv),
 *   3. counting-sort the received keys over the owned range.
 * Every iteration sorts the same generated keys, as NAS IS reruns the same ranking.
 *
 * After the last iteration the result is verified: each rank's keys are sorted and
 * inside its range, the non-empty ranks' (min, max) are in order (MPI_Allgather), no
 * key was lost, and the sum of the sorted keys equals the sum of the generated ones.
 *
 * usage: isort [keys_per_rank] [iters]
 * prints (rank 0): verified=<0|1> keys=<total> checksum=<sum of the sorted keys>
 *                  elapsed_s=<seconds of the iterations>
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_KEYS_PER_RANK (1 << 18)
#define DEFAULT_ITERS 10
#define MAX_KEYS_PER_RANK (1 << 26)
#define MAX_KEY (1 << 16)
#define SEED 314159265ULL

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

static void *alloc_bytes(size_t bytes)
{
    void *p = malloc(bytes > 0 ? bytes : 1); /* malloc(0) may return NULL */
    if (p == NULL) {
        fprintf(stderr, "isort: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* Knuth's MMIX LCG; the top 16 bits are its best ones. */
static unsigned lcg_next(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(*state >> 48);
}

/* Lowest key owned by rank r: ceil(r * MAX_KEY / size), so that owner(key) below agrees. */
static int range_start(int r, int size)
{
    return (int)(((long long)r * MAX_KEY + size - 1) / size);
}

/* The rank that owns `key`: floor(key * size / MAX_KEY). */
static int owner(int key, int size)
{
    return (int)((long long)key * size / MAX_KEY);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long keys_arg = parse_positive(argc, argv, 1, DEFAULT_KEYS_PER_RANK);
    long iters_arg = parse_positive(argc, argv, 2, DEFAULT_ITERS);
    if (argc > 3 || keys_arg < 0 || keys_arg > MAX_KEYS_PER_RANK || iters_arg < 0) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: %s [keys_per_rank] [iters]\n"
                    "  keys_per_rank  keys generated on each rank, 1..%d (default %d)\n"
                    "  iters          sorting iterations (positive, default %d)\n",
                    argv[0], MAX_KEYS_PER_RANK, DEFAULT_KEYS_PER_RANK, DEFAULT_ITERS);
        MPI_Finalize();
        return 2;
    }
    int nkeys = (int)keys_arg;
    int iters = (int)iters_arg;

    int *keys = alloc_bytes((size_t)nkeys * sizeof *keys);
    uint64_t state = SEED + (uint64_t)rank;
    long long generated_sum = 0;
    for (int i = 0; i < nkeys; i++) {
        unsigned draws = 0;
        for (int d = 0; d < 4; d++)
            draws += lcg_next(&state);
        keys[i] = (int)(draws / 4);
        generated_sum += keys[i];
    }

    int lo = range_start(rank, size);
    int hi = range_start(rank + 1, size);
    int *send_counts = alloc_bytes((size_t)size * sizeof(int));
    int *send_displs = alloc_bytes((size_t)size * sizeof(int));
    int *recv_counts = alloc_bytes((size_t)size * sizeof(int));
    int *recv_displs = alloc_bytes((size_t)size * sizeof(int));
    int *fill = alloc_bytes((size_t)size * sizeof(int));
    int *bucketed = alloc_bytes((size_t)nkeys * sizeof(int));
    int *key_count = alloc_bytes((size_t)(hi - lo) * sizeof(int));
    int *received = NULL, *sorted = NULL;
    int received_capacity = 0;
    int nreceived = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        /* 1. How many keys go to each rank. */
        for (int r = 0; r < size; r++)
            send_counts[r] = 0;
        for (int i = 0; i < nkeys; i++)
            send_counts[owner(keys[i], size)]++;
        MPI_Alltoall(send_counts, 1, MPI_INT, recv_counts, 1, MPI_INT, MPI_COMM_WORLD);

        /* 2. Bucket by destination, then exchange. */
        send_displs[0] = 0;
        recv_displs[0] = 0;
        for (int r = 1; r < size; r++) {
            send_displs[r] = send_displs[r - 1] + send_counts[r - 1];
            recv_displs[r] = recv_displs[r - 1] + recv_counts[r - 1];
        }
        nreceived = recv_displs[size - 1] + recv_counts[size - 1];
        if (nreceived > received_capacity) {
            free(received);
            free(sorted);
            received = alloc_bytes((size_t)nreceived * sizeof(int));
            sorted = alloc_bytes((size_t)nreceived * sizeof(int));
            received_capacity = nreceived;
        }
        for (int r = 0; r < size; r++)
            fill[r] = send_displs[r];
        for (int i = 0; i < nkeys; i++)
            bucketed[fill[owner(keys[i], size)]++] = keys[i];
        MPI_Alltoallv(bucketed, send_counts, send_displs, MPI_INT, received, recv_counts,
                      recv_displs, MPI_INT, MPI_COMM_WORLD);

        /* 3. Counting sort over the owned range [lo, hi). */
        for (int v = 0; v < hi - lo; v++)
            key_count[v] = 0;
        for (int i = 0; i < nreceived; i++)
            key_count[received[i] - lo]++;
        int pos = 0;
        for (int v = 0; v < hi - lo; v++)
            for (int c = 0; c < key_count[v]; c++)
                sorted[pos++] = lo + v;
    }
    double elapsed = MPI_Wtime() - t0;

    /* Verification. Locally: in range and non-decreasing. */
    int local_ok = 1;
    long long local_sum = 0;
    for (int i = 0; i < nreceived; i++) {
        if (sorted[i] < lo || sorted[i] >= hi || (i > 0 && sorted[i - 1] > sorted[i]))
            local_ok = 0;
        local_sum += sorted[i];
    }
    /* Across ranks: every non-empty rank's minimum is at least the previous non-empty maximum. */
    int bounds[3] = {nreceived, nreceived > 0 ? sorted[0] : 0,
                     nreceived > 0 ? sorted[nreceived - 1] : 0};
    int *all_bounds = alloc_bytes((size_t)size * 3 * sizeof(int));
    MPI_Allgather(bounds, 3, MPI_INT, all_bounds, 3, MPI_INT, MPI_COMM_WORLD);
    int order_ok = 1;
    int previous_max = -1;
    for (int r = 0; r < size; r++) {
        if (all_bounds[3 * r] == 0)
            continue;
        if (all_bounds[3 * r + 1] < previous_max)
            order_ok = 0;
        previous_max = all_bounds[3 * r + 2];
    }
    long long local_stats[3] = {nreceived, local_sum, generated_sum}, stats[3];
    MPI_Allreduce(local_stats, stats, 3, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    int all_local_ok;
    MPI_Allreduce(&local_ok, &all_local_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    long long total_keys = (long long)nkeys * size;
    int verified = all_local_ok && order_ok && stats[0] == total_keys && stats[1] == stats[2];

    if (rank == 0) {
        printf("isort: ranks=%d keys_per_rank=%d iters=%d max_key=%d\n", size, nkeys, iters,
               MAX_KEY);
        printf("verified=%d keys=%lld checksum=%lld\n", verified, stats[0], stats[1]);
        printf("elapsed_s=%.6e\n", elapsed);
    }
    free(keys);
    free(send_counts);
    free(send_displs);
    free(recv_counts);
    free(recv_displs);
    free(fill);
    free(bucketed);
    free(key_count);
    free(received);
    free(sorted);
    free(all_bounds);
    MPI_Finalize();
    return verified ? 0 : 1;
}
