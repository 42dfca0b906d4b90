/*
 * p2pdc.h: the P2PDC programming interface, implemented over MPI (instrument/p2pdc.c).
 *
 * P2PDC (seed 004, section III) is a peer-to-peer environment for parallel iterative methods.
 * Its programs communicate with three operations only, P2Psend, P2Preceive and P2Pwait, and
 * choose a scheme of computation; the environment picks the communication mode between two
 * peers from the scheme. This runtime gives such programs the same interface on top of MPI, so
 * that they build with mpicc and run under mpirun (one peer per MPI rank), and so that mpicast
 * can analyse them (src/frontend/mpi.rs knows the three signatures below: the peer is argument
 * 0, the byte count argument 2).
 *
 * Schemes, chosen at run time by P2Pinit: a `--scheme=sync|async|hybrid` program argument
 * (removed from argv), else the environment variable P2PDC_SCHEME, else sync. In the hybrid
 * scheme peers are cut into groups of P2PDC_GROUP consecutive ranks (default 2): peer p is in
 * group p / P2PDC_GROUP.
 *
 *   sync    every P2Preceive blocks until the next message from that peer arrives; messages
 *           from one peer are received in the order they were sent, none is lost.
 *   async   P2Preceive never blocks: it returns the most recent message from that peer if one
 *           arrived since the last call, older ones being dropped. P2Psend never blocks
 *           either: at most one message per destination is in flight; a message sent while
 *           the previous one is still in flight waits in a one-message slot, where a later
 *           send replaces it (the receiver would drop the older one anyway). The latest
 *           message sent is always delivered.
 *   hybrid  sync between peers of the same group, async between peers of different groups
 *           (synchronous inside a cluster, asynchronous at the global level).
 *
 * Message matching: there are no tags. The messages one peer sends to another form a single
 * stream (one halo per neighbour, as in P2PDC's iterative methods); a program that sends two
 * kinds of data to the same peer must send them in one message, or, in the sync scheme, rely
 * on their order.
 *
 * Progress: every call into the runtime (P2Psend, P2Preceive, P2Pwait, P2Pconverged) also
 * receives whatever messages have arrived, into per-peer queues (sync peers) or one-message
 * slots (async peers), so two peers that both wait for their sends before receiving cannot
 * deadlock, and posts the messages waiting in async slots.
 *
 * Errors (an invalid peer, a message whose size differs from the receive's, an MPI failure)
 * print `p2pdc: rank R: <call>: <what failed>` on stderr and abort the job.
 */
#ifndef P2PDC_H
#define P2PDC_H

#include <stddef.h>

/* Schemes of computation (P2Pscheme, P2Pset_scheme). */
enum { P2P_SYNC = 1, P2P_ASYNC = 2, P2P_HYBRID = 3 };

/* Reduction operators (P2Pallreduce). */
enum { P2P_SUM = 1, P2P_MIN = 2, P2P_MAX = 3 };

/* Starts the runtime (MPI_Init unless MPI is already initialised) and chooses the scheme from
 * `--scheme=` in argv (the argument is removed) or P2PDC_SCHEME, and the hybrid group size
 * from P2PDC_GROUP. Returns 0, or 2 after printing (on rank 0) what was wrong with the scheme
 * or the group size and the valid choices; the runtime is then still started, and the caller
 * should P2Pfinalize and exit with status 2. */
int P2Pinit(int *argc, char ***argv);

/* Collective. Completes every send, receives (and drops) every message still on its way, so
 * that no message is left in flight, then ends the runtime (MPI_Finalize if P2Pinit called
 * MPI_Init). Warns on stderr about messages from sync peers that were never received. */
int P2Pfinalize(void);

int P2Prank(void); /* this peer, 0 .. P2Psize() - 1 */
int P2Psize(void); /* the number of peers */
int P2Pscheme(void); /* P2P_SYNC, P2P_ASYNC or P2P_HYBRID */
const char *P2Pscheme_name(int scheme); /* "sync", "async", "hybrid" ("?" otherwise) */
int P2Pgroup_size(void); /* peers per group in the hybrid scheme */
int P2Pgroup(int peer); /* the group of `peer`: peer / P2Pgroup_size() */
int P2Psynchronous_with(int peer); /* 1 when messages with `peer` follow sync semantics */

/* Sends `bytes` bytes at `buf` to `peer` (not this peer). Never blocks: the buffer is copied,
 * so the caller may reuse it at once. Returns 0. */
int P2Psend(int peer, const void *buf, size_t bytes);

/* Receives the next message from `peer` into `buf`; its size must be `bytes`.
 * With a sync peer: blocks until the message is there; returns 1.
 * With an async peer: never blocks; returns 1 after copying in the most recent message that
 * arrived since the last call (dropping older ones), or 0, leaving `buf` untouched, when none
 * arrived. */
int P2Preceive(int peer, void *buf, size_t bytes);

/* Waits until every message sent to a sync peer has been delivered (its copy is released),
 * receiving meanwhile. Messages to async peers are only progressed, never waited for: waiting
 * for them would tie this peer to the slowest one, which the asynchronous scheme avoids.
 * Returns 0. */
int P2Pwait(void);

/* The global convergence decision, called by every peer once per iteration with its local
 * verdict (1 when its own part has converged). Returns 1 on every peer once the iteration
 * may stop, else 0. Once it has returned 1 it returns 1 until the next P2Pset_scheme.
 *
 * sync scheme: blocking; 1 exactly when every peer passes local_converged = 1 in this same
 * call (an MPI_Allreduce with MIN), so all peers stop after the same iteration.
 *
 * async scheme: does not wait for other peers' iterations (but see idle peers below).
 * Decisions are taken in numbered epochs, each an MPI_Iallreduce (MIN) on a communicator of
 * its own. A peer posts epoch e + 1 in the call that finds epoch e complete (epoch 1 in its
 * first call). Its contribution to an epoch is 1
 * only if local_converged was 1 in every call since it posted the previous epoch, so a peer
 * that converged on stale data and then moved again reports 0. When an epoch completes with
 * 1 (every peer reported sustained local convergence in that epoch), every peer returns 1
 * in the call that observes it, so all stop after that same epoch, though after different
 * numbers of iterations.
 *
 * hybrid scheme: the same epochs, and the peers of a group, which iterate in step, also
 * agree (a blocking MPI_Allreduce MAX inside the group, the only wait) to stop after the same
 * iteration: a member's receive would otherwise wait for a group peer that has stopped. The
 * peers of a group must therefore call P2Pconverged equally often.
 *
 * Idle peers: a call with local_converged = 1 that finds no message from an async peer
 * received since the previous call (hybrid: at every member of the group) has nothing new to
 * compute, since its next iteration would repeat this one. Instead of returning at once, it
 * sleeps, with growing pauses (10 us to 1 ms), until a message arrives or the posted epoch
 * completes, for at most 10 ms. Spinning instead keeps the peers it waits for off a shared
 * processor and spends the program's iteration limit on repeated iterations.
 *
 * The async decision is not a consistent snapshot: data in flight when it is taken are not
 * looked at, so the final iterate may be somewhat less converged than each peer's local test
 * says (check it, e.g. with a synchronous residual after P2Pset_scheme). */
int P2Pconverged(int local_converged);

/* Collective, blocking: the global sum, minimum or maximum of `value` (for results after the
 * iteration; any scheme). */
double P2Pallreduce(double value, int op);

/* Collective, blocking. Completes every send, receives and drops every message still in
 * flight or unread (so nothing sent before the call is received after it), resets
 * P2Pconverged, and switches to `scheme` (P2P_SYNC, P2P_ASYNC or P2P_HYBRID; anything else
 * aborts). A program typically switches to sync after an asynchronous iteration to exchange
 * its final data and check the solution. Returns 0. */
int P2Pset_scheme(int scheme);

void P2Pbarrier(void); /* collective, blocking */
double P2Ptime(void); /* wall-clock seconds (MPI_Wtime) */

#endif
