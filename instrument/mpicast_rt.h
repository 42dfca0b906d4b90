/*
 * mpicast_rt.h: the interface between an instrumented program and the mpicast trace runtime
 * (mpicast_rt.c). `mpicast trace` inserts `__mpicast_bc[I]++;` at the start of every block it
 * counts (I: the block's index in the analysis) and declares the array at the top of each
 * instrumented file, exactly as below. The array itself and the list of counted block ids are
 * defined in a small generated file (mpicast_blocks.c) compiled next to the runtime:
 *
 *     unsigned long long __mpicast_bc[NBLOCKS];
 *     const unsigned int __mpicast_ids[] = { ids of the counted blocks };
 *     const unsigned int __mpicast_nids = number of counted blocks;
 *
 * Irregular references (`h[key[i]]`) are wrapped as `__MPICAST_AT(K, &(h[key[i]]))`
 * (the reference itself; the macro is in the instrumenter's prologue): the first 2^20 accesses
 * of probe K keep its highest address in __mpicast_hi[K] and the complement of its lowest in
 * __mpicast_nlo[K], counted in __mpicast_seen[K], and in __mpicast_reused[K] those whose cache
 * line was among the 64 it touched last (__mpicast_lines[64K..64K+63], direct-mapped: line
 * number plus one); the generated file defines the arrays and __mpicast_nprobes, and the
 * runtime writes `probe.K=BYTES SEEN REUSED` (BYTES: highest minus lowest address) into the
 * rank's statistics.
 *
 * Calls into code the analysis does not see (a library's) are wrapped as
 * `__MPICAST_CB(J) cblas_dgemm(...) __MPICAST_CE`: __mpicast_call_begin(J) counts the call in
 * __mpicast_cn[J] and returns the clock (CLOCK_MONOTONIC, ns) for the first 1,024 calls and one
 * in 16 after (0 for the others); __mpicast_call_end adds the time since to __mpicast_cns[J]
 * and counts the timed call in __mpicast_ctn[J]. The runtime writes `call.J=NS TIMED CALLS` and
 * `call_clock_ns=` (what one timing costs itself: the median of 1,001 timings of nothing on the
 * arrays' last slot, __mpicast_ncalls, one more than the calls).
 *
 * Counted loops get `__MPICAST_LE(K)` before them (the prologue's macro), once per entry:
 * four words per loop in __mpicast_le[4K..4K+3] hold its entries, its counter at the last
 * entry, the last entry's trip, and the entries whose trip differed from the one before (the
 * first has none) or exceeded 32 (exits a branch predictor misses). The generated file lists the hooked loops
 * (__mpicast_loops, __mpicast_nloops); the runtime finishes the last entry and writes
 * `loop.K=ENTRIES MISSES`.
 *
 * The runtime interposes MPI through PMPI: at every MPI call that the replay understands it
 * writes the counters that changed since the previous call as one `compute blocks` line, then
 * the call itself (traces/FORMAT.md). Environment:
 *     MPICAST_TRACE_DIR    where rank-R.trace.part is written (renamed to rank-R.trace at
 *                          MPI_Finalize); unset: the program runs untraced
 *     MPICAST_TIME_BLOCKS  1: also measure each burst (the thread's CPU time), `time=S`
 *     MPICAST_WINDOW       loop-folding window in lines (default 64, at most 256)
 */
#ifndef MPICAST_RT_H
#define MPICAST_RT_H

#ifdef __cplusplus
extern "C" {
#endif

extern unsigned long long __mpicast_bc[];
extern const unsigned int __mpicast_ids[];
extern const unsigned int __mpicast_nids;
extern unsigned long long __mpicast_hi[], __mpicast_nlo[], __mpicast_lines[];
extern unsigned int __mpicast_seen[], __mpicast_reused[];
extern const unsigned int __mpicast_nprobes;
extern unsigned long long __mpicast_cn[], __mpicast_ctn[], __mpicast_cns[];
extern const unsigned int __mpicast_ncalls;
extern unsigned long long __mpicast_le[];
extern const unsigned int __mpicast_loops[];
extern const unsigned int __mpicast_nloops;
struct __mpicast_ct {
    unsigned int k;
    unsigned long long t0;
};
unsigned long long __mpicast_call_begin(unsigned int k);
void __mpicast_call_end(struct __mpicast_ct *t);

#ifdef __cplusplus
}
#endif

#endif
