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

#ifdef __cplusplus
}
#endif

#endif
