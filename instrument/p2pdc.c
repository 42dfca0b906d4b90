/*
 * p2pdc.c: the P2PDC interface (p2pdc.h) over MPI. One peer per MPI rank.
 *
 * Three duplicates of MPI_COMM_WORLD keep the runtime's traffic apart from the program's and
 * from each other: `data` carries P2Psend messages (one tag), `conv` the termination epochs of
 * P2Pconverged, `ctl` the blocking collectives (P2Pallreduce, P2Pbarrier, the quiescence
 * exchange); `group` (the hybrid group of this rank) keeps a group's decisions in step. Messages to a sync peer are MPI_Isends of a private copy, kept in a list until
 * they complete. Messages to an async peer go through a per-peer slot: at most one MPI_Isend
 * in flight, at most one message staged behind it (a newer send replaces it).
 * Arrivals that the program has not asked for yet are received by drain(): into a FIFO queue
 * for a sync peer, into a one-message slot (the latest wins) for an async peer.
 *
 * Quiescence (P2Pfinalize, P2Pset_scheme): every rank counts the messages it posted to each
 * peer and the termination epochs it posted; a nonblocking all-to-all exchanges the counts,
 * and each rank keeps receiving until it has received what was sent to it, its own sends are
 * complete and it has posted (and completed) as many epochs as the rank that posted most.
 * A barrier then keeps any rank from sending the next phase's messages while another is still
 * draining the previous phase's. Afterwards no message is in flight and the communicators are
 * in step.
 */
#define _POSIX_C_SOURCE 200809L /* sched_yield */

#include "p2pdc.h"

#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_DATA 0
#define DEFAULT_GROUP 2
/* An idle peer (see idle_wait) waits at most this long per iteration, and at least this long
 * when what wakes it is a message. */
#define IDLE_LIMIT_NS 10000000L
#define IDLE_MIN_NS 1000000L
#define IDLE_FIRST_PAUSE_NS 10000L
#define IDLE_LONGEST_PAUSE_NS 1000000L

/* A message received before the program asked for it (sync peers). */
struct message {
    struct message *next;
    size_t bytes;
    unsigned char data[];
};

/* A send to a sync peer: its request and the copy it sends. */
struct sync_send {
    MPI_Request request;
    void *copy;
};

struct peer {
    /* receiving from a sync peer: arrivals not yet received by the program, oldest first */
    struct message *head, *tail;
    /* receiving from an async peer: the latest arrival */
    unsigned char *slot;
    size_t slot_bytes, slot_capacity;
    int slot_fresh;
    /* sending to an async peer: the message in flight and the one staged behind it */
    MPI_Request in_flight;
    unsigned char *flight_buf, *staged_buf;
    size_t flight_capacity, staged_capacity, staged_bytes;
    int has_staged;
    /* messages posted to this peer and received from it, for quiescence */
    long long sent, received;
};

static struct {
    int started, owns_mpi;
    int rank, size, scheme, group_size;
    MPI_Comm data, conv, ctl, group;
    struct peer *peers;
    struct sync_send *sends;
    size_t send_count, send_capacity;
    /* P2Pconverged */
    MPI_Request conv_request;
    int conv_in, conv_out, conv_acc, conv_done;
    int conv_completed; /* the last epoch posted has completed (its result in conv_out) */
    long long epochs;
    /* a message from an async peer arrived since the previous P2Pconverged call; a message
     * from any peer arrived since idle_wait began */
    int arrived_async, arrived;
} rt;

static void fail(const char *call, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "p2pdc: rank %d: %s: ", rt.rank, call);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    fflush(stderr);
    if (rt.started)
        MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

static void check(int rc, const char *call, const char *mpi_call)
{
    if (rc == MPI_SUCCESS)
        return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", rc);
    fail(call, "%s failed: %s", mpi_call, text);
}

static void *allocate(size_t bytes, const char *call)
{
    void *p = malloc(bytes > 0 ? bytes : 1);
    if (p == NULL)
        fail(call, "out of memory (%zu bytes)", bytes);
    return p;
}

/* Grows *buf to at least `bytes` bytes (contents not kept). */
static void reserve(unsigned char **buf, size_t *capacity, size_t bytes, const char *call)
{
    if (*capacity >= bytes && *buf != NULL)
        return;
    free(*buf);
    *buf = allocate(bytes, call);
    *capacity = bytes;
}

static void require_started(const char *call)
{
    if (!rt.started) {
        fprintf(stderr, "p2pdc: %s: called before P2Pinit (or after P2Pfinalize)\n", call);
        exit(1);
    }
}

static int synchronous_with(int peer)
{
    switch (rt.scheme) {
    case P2P_SYNC:
        return 1;
    case P2P_HYBRID:
        return peer / rt.group_size == rt.rank / rt.group_size;
    default:
        return 0;
    }
}

static struct peer *peer_at(int peer, const char *call)
{
    if (peer < 0 || peer >= rt.size || peer == rt.rank)
        fail(call, "peer %d is not another peer (0 .. %d, this peer is %d)", peer, rt.size - 1,
             rt.rank);
    return &rt.peers[peer];
}

static int message_size(size_t bytes, const char *call)
{
    if (bytes > INT_MAX)
        fail(call, "%zu bytes: messages are limited to %d bytes", bytes, INT_MAX);
    return (int)bytes;
}

/* ---- Progress ------------------------------------------------------------------------- */

/* Defined by mpicast's trace runtime when the program runs under `mpicast trace`; absent (null)
 * otherwise. */
extern void mpicast_rt_async_recv(void) __attribute__((weak));

/* Receives every message that has arrived into the sync queue or async slot of its sender. */
static void drain(const char *call)
{
    for (;;) {
        int arrived = 0;
        MPI_Status status;
        check(MPI_Iprobe(MPI_ANY_SOURCE, TAG_DATA, rt.data, &arrived, &status), call, "MPI_Iprobe");
        if (!arrived)
            return;
        int count = 0;
        check(MPI_Get_count(&status, MPI_BYTE, &count), call, "MPI_Get_count");
        int source = status.MPI_SOURCE;
        struct peer *p = &rt.peers[source];
        void *into;
        if (synchronous_with(source)) {
            struct message *m = allocate(sizeof *m + (size_t)count, call);
            m->next = NULL;
            m->bytes = (size_t)count;
            if (p->tail != NULL)
                p->tail->next = m;
            else
                p->head = m;
            p->tail = m;
            into = m->data;
        } else {
            reserve(&p->slot, &p->slot_capacity, (size_t)count, call);
            p->slot_bytes = (size_t)count;
            p->slot_fresh = 1;
            into = p->slot;
        }
        rt.arrived = 1;
        if (!synchronous_with(source))
            rt.arrived_async = 1;
        if (!synchronous_with(source) && mpicast_rt_async_recv != NULL)
            mpicast_rt_async_recv(); /* traced as an asynchronous receive */
        check(MPI_Recv(into, count, MPI_BYTE, source, TAG_DATA, rt.data, MPI_STATUS_IGNORE), call,
              "MPI_Recv");
        p->received++;
    }
}

/* Completes the async send in flight to `peer` if it is done, then posts the staged one. */
static void advance_async_send(int peer, const char *call)
{
    struct peer *p = &rt.peers[peer];
    if (p->in_flight != MPI_REQUEST_NULL) {
        int done = 0;
        check(MPI_Test(&p->in_flight, &done, MPI_STATUS_IGNORE), call, "MPI_Test");
        if (!done)
            return;
    }
    if (!p->has_staged)
        return;
    unsigned char *buf = p->flight_buf;
    size_t capacity = p->flight_capacity;
    p->flight_buf = p->staged_buf;
    p->flight_capacity = p->staged_capacity;
    p->staged_buf = buf;
    p->staged_capacity = capacity;
    p->has_staged = 0;
    check(MPI_Isend(p->flight_buf, (int)p->staged_bytes, MPI_BYTE, peer, TAG_DATA, rt.data,
                    &p->in_flight),
          call, "MPI_Isend");
    p->sent++;
}

/* Releases the sync sends that have completed. */
static void reclaim_sync_sends(const char *call)
{
    size_t kept = 0;
    for (size_t i = 0; i < rt.send_count; i++) {
        int done = 0;
        check(MPI_Test(&rt.sends[i].request, &done, MPI_STATUS_IGNORE), call, "MPI_Test");
        if (done)
            free(rt.sends[i].copy);
        else
            rt.sends[kept++] = rt.sends[i];
    }
    rt.send_count = kept;
}

static void progress(const char *call)
{
    drain(call);
    for (int q = 0; q < rt.size; q++)
        if (q != rt.rank)
            advance_async_send(q, call);
    reclaim_sync_sends(call);
}

/* ---- Start, end, schemes -------------------------------------------------------------- */

static int parse_scheme(const char *text)
{
    if (strcmp(text, "sync") == 0)
        return P2P_SYNC;
    if (strcmp(text, "async") == 0)
        return P2P_ASYNC;
    if (strcmp(text, "hybrid") == 0)
        return P2P_HYBRID;
    return 0;
}

const char *P2Pscheme_name(int scheme)
{
    switch (scheme) {
    case P2P_SYNC:
        return "sync";
    case P2P_ASYNC:
        return "async";
    case P2P_HYBRID:
        return "hybrid";
    default:
        return "?";
    }
}

static void dup_comm(MPI_Comm *comm)
{
    check(MPI_Comm_dup(MPI_COMM_WORLD, comm), "P2Pinit", "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN), "P2Pinit", "MPI_Comm_set_errhandler");
}

int P2Pinit(int *argc, char ***argv)
{
    if (rt.started)
        fail("P2Pinit", "called twice");
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        if (MPI_Init(argc, argv) != MPI_SUCCESS) {
            fprintf(stderr, "p2pdc: P2Pinit: MPI_Init failed\n");
            exit(1);
        }
        rt.owns_mpi = 1;
    }
    rt.started = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rt.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &rt.size);
    dup_comm(&rt.data);
    dup_comm(&rt.conv);
    dup_comm(&rt.ctl);
    rt.peers = calloc((size_t)rt.size, sizeof *rt.peers);
    if (rt.peers == NULL)
        fail("P2Pinit", "out of memory");
    for (int q = 0; q < rt.size; q++)
        rt.peers[q].in_flight = MPI_REQUEST_NULL;
    rt.conv_request = MPI_REQUEST_NULL;
    rt.conv_acc = 1;
    rt.conv_completed = 1;

    /* The scheme: `--scheme=NAME` (removed from argv), else P2PDC_SCHEME, else sync. */
    const char *scheme_text = getenv("P2PDC_SCHEME");
    const char *scheme_from = "P2PDC_SCHEME";
    if (argc != NULL && argv != NULL && *argv != NULL) {
        const char *prefix = "--scheme=";
        size_t prefix_length = strlen(prefix);
        for (int i = 1; i < *argc; i++) {
            if (strncmp((*argv)[i], prefix, prefix_length) != 0)
                continue;
            scheme_text = (*argv)[i] + prefix_length;
            scheme_from = "--scheme";
            for (int j = i; j < *argc; j++)
                (*argv)[j] = (*argv)[j + 1]; /* argv[argc] is NULL */
            (*argc)--;
            i--;
        }
    }
    int status = 0;
    rt.scheme = P2P_SYNC;
    /* An empty P2PDC_SCHEME means the default; an empty --scheme= is a mistake. */
    if (scheme_text != NULL && (scheme_text[0] != '\0' || strcmp(scheme_from, "--scheme") == 0)) {
        int scheme = parse_scheme(scheme_text);
        if (scheme == 0) {
            if (rt.rank == 0)
                fprintf(stderr,
                        "p2pdc: %s: unknown scheme '%s' (valid choices: sync, async, hybrid)\n",
                        scheme_from, scheme_text);
            status = 2;
        } else {
            rt.scheme = scheme;
        }
    }
    rt.group_size = DEFAULT_GROUP;
    const char *group_text = getenv("P2PDC_GROUP");
    if (group_text != NULL && group_text[0] != '\0') {
        char *end;
        errno = 0;
        long group = strtol(group_text, &end, 10);
        if (errno != 0 || end == group_text || *end != '\0' || group <= 0 || group > INT_MAX) {
            if (rt.rank == 0)
                fprintf(stderr, "p2pdc: P2PDC_GROUP: '%s' is not a positive integer\n",
                        group_text);
            status = 2;
        } else {
            rt.group_size = (int)group;
        }
    }
    check(MPI_Comm_split(MPI_COMM_WORLD, rt.rank / rt.group_size, rt.rank, &rt.group), "P2Pinit",
          "MPI_Comm_split");
    check(MPI_Comm_set_errhandler(rt.group, MPI_ERRORS_RETURN), "P2Pinit",
          "MPI_Comm_set_errhandler");
    return status;
}

/* Drops every message waiting for the program; warns about sync ones (a program bug). */
static void drop_unread(const char *call)
{
    for (int q = 0; q < rt.size; q++) {
        struct peer *p = &rt.peers[q];
        long unread = 0;
        while (p->head != NULL) {
            struct message *m = p->head;
            p->head = m->next;
            free(m);
            unread++;
        }
        p->tail = NULL;
        p->slot_fresh = 0;
        if (unread > 0)
            fprintf(stderr,
                    "p2pdc: rank %d: %s: %ld message(s) from peer %d were never received "
                    "(dropped)\n",
                    rt.rank, call, unread, q);
    }
}

/* See the file comment: afterwards no message is in flight and every rank has posted and
 * completed the same number of termination epochs. */
static void quiesce(const char *call)
{
    int n = rt.size;
    long long *out = allocate(2 * (size_t)n * sizeof *out, call);
    long long *in = allocate(2 * (size_t)n * sizeof *in, call);
    for (int q = 0; q < n; q++) {
        rt.peers[q].has_staged = 0; /* never posted: nothing to deliver */
        out[2 * q] = rt.peers[q].sent;
        out[2 * q + 1] = rt.epochs;
    }
    MPI_Request exchange;
    check(MPI_Ialltoall(out, 2, MPI_LONG_LONG, in, 2, MPI_LONG_LONG, rt.ctl, &exchange), call,
          "MPI_Ialltoall");
    int exchanged = 0;
    long long epochs_wanted = rt.epochs;
    for (;;) {
        progress(call);
        if (!exchanged) {
            check(MPI_Test(&exchange, &exchanged, MPI_STATUS_IGNORE), call, "MPI_Test");
            if (exchanged)
                for (int q = 0; q < n; q++)
                    if (in[2 * q + 1] > epochs_wanted)
                        epochs_wanted = in[2 * q + 1];
        }
        if (exchanged) {
            if (rt.conv_request != MPI_REQUEST_NULL) {
                int done = 0;
                check(MPI_Test(&rt.conv_request, &done, MPI_STATUS_IGNORE), call, "MPI_Test");
            }
            if (rt.conv_request == MPI_REQUEST_NULL && rt.epochs < epochs_wanted) {
                rt.conv_in = 0;
                check(MPI_Iallreduce(&rt.conv_in, &rt.conv_out, 1, MPI_INT, MPI_MIN, rt.conv,
                                     &rt.conv_request),
                      call, "MPI_Iallreduce");
                rt.epochs++;
                continue;
            }
            int quiet = rt.send_count == 0 && rt.conv_request == MPI_REQUEST_NULL &&
                        rt.epochs == epochs_wanted;
            for (int q = 0; q < n && quiet; q++)
                quiet = rt.peers[q].received == in[2 * q] &&
                        rt.peers[q].in_flight == MPI_REQUEST_NULL;
            if (quiet)
                break;
        }
        sched_yield();
    }
    free(out);
    free(in);
    /* A rank that is quiet must not send the next phase's messages before every rank is
     * quiet: a rank still draining would take them for old ones and drop them. Pending
     * transfers to the ranks still draining progress inside the barrier. */
    check(MPI_Barrier(rt.ctl), call, "MPI_Barrier");
    drop_unread(call);
    rt.conv_done = 0;
    rt.conv_acc = 1;
    rt.conv_completed = 1;
    rt.conv_out = 0;
    rt.arrived_async = 0;
}

int P2Pfinalize(void)
{
    require_started("P2Pfinalize");
    quiesce("P2Pfinalize");
    for (int q = 0; q < rt.size; q++) {
        struct peer *p = &rt.peers[q];
        free(p->slot);
        free(p->flight_buf);
        free(p->staged_buf);
    }
    free(rt.peers);
    free(rt.sends);
    MPI_Comm_free(&rt.data);
    MPI_Comm_free(&rt.conv);
    MPI_Comm_free(&rt.ctl);
    MPI_Comm_free(&rt.group);
    int owns_mpi = rt.owns_mpi;
    memset(&rt, 0, sizeof rt);
    if (owns_mpi)
        MPI_Finalize();
    return 0;
}

int P2Pset_scheme(int scheme)
{
    require_started("P2Pset_scheme");
    if (parse_scheme(P2Pscheme_name(scheme)) != scheme)
        fail("P2Pset_scheme", "unknown scheme %d (valid: P2P_SYNC, P2P_ASYNC, P2P_HYBRID)",
             scheme);
    quiesce("P2Pset_scheme");
    rt.scheme = scheme;
    return 0;
}

int P2Prank(void)
{
    require_started("P2Prank");
    return rt.rank;
}

int P2Psize(void)
{
    require_started("P2Psize");
    return rt.size;
}

int P2Pscheme(void)
{
    require_started("P2Pscheme");
    return rt.scheme;
}

int P2Pgroup_size(void)
{
    require_started("P2Pgroup_size");
    return rt.group_size;
}

int P2Pgroup(int peer)
{
    require_started("P2Pgroup");
    if (peer < 0 || peer >= rt.size)
        fail("P2Pgroup", "peer %d is not a peer (0 .. %d)", peer, rt.size - 1);
    return peer / rt.group_size;
}

int P2Psynchronous_with(int peer)
{
    require_started("P2Psynchronous_with");
    peer_at(peer, "P2Psynchronous_with");
    return synchronous_with(peer);
}

/* ---- The three communication operations ------------------------------------------------ */

int P2Psend(int peer, const void *buf, size_t bytes)
{
    const char *call = "P2Psend";
    require_started(call);
    struct peer *p = peer_at(peer, call);
    int count = message_size(bytes, call);
    if (synchronous_with(peer)) {
        if (rt.send_count == rt.send_capacity) {
            size_t capacity = rt.send_capacity > 0 ? 2 * rt.send_capacity : 8;
            struct sync_send *grown = realloc(rt.sends, capacity * sizeof *grown);
            if (grown == NULL)
                fail(call, "out of memory");
            rt.sends = grown;
            rt.send_capacity = capacity;
        }
        struct sync_send *s = &rt.sends[rt.send_count];
        s->copy = allocate(bytes, call);
        if (bytes > 0)
            memcpy(s->copy, buf, bytes);
        check(MPI_Isend(s->copy, count, MPI_BYTE, peer, TAG_DATA, rt.data, &s->request), call,
              "MPI_Isend");
        rt.send_count++;
        p->sent++;
    } else {
        reserve(&p->staged_buf, &p->staged_capacity, bytes, call);
        if (bytes > 0)
            memcpy(p->staged_buf, buf, bytes);
        p->staged_bytes = bytes;
        p->has_staged = 1;
        advance_async_send(peer, call);
    }
    drain(call);
    return 0;
}

int P2Preceive(int peer, void *buf, size_t bytes)
{
    const char *call = "P2Preceive";
    require_started(call);
    struct peer *p = peer_at(peer, call);
    int count = message_size(bytes, call);
    if (synchronous_with(peer)) {
        struct message *m = p->head;
        if (m != NULL) {
            if (m->bytes != bytes)
                fail(call, "the message from peer %d has %zu bytes, the receive expects %zu", peer,
                     m->bytes, bytes);
            if (bytes > 0)
                memcpy(buf, m->data, bytes);
            p->head = m->next;
            if (p->head == NULL)
                p->tail = NULL;
            free(m);
            return 1;
        }
        /* Nothing queued: the next message to arrive from `peer` is the one. */
        MPI_Status status;
        int rc = MPI_Recv(buf, count, MPI_BYTE, peer, TAG_DATA, rt.data, &status);
        int got = -1;
        if (rc == MPI_SUCCESS)
            MPI_Get_count(&status, MPI_BYTE, &got);
        if (rc != MPI_SUCCESS || got != count) {
            if (rc == MPI_SUCCESS || rc == MPI_ERR_TRUNCATE)
                fail(call, "the message from peer %d does not have the %zu bytes the receive expects",
                     peer, bytes);
            check(rc, call, "MPI_Recv");
        }
        p->received++;
        return 1;
    }
    progress(call);
    if (!p->slot_fresh)
        return 0;
    if (p->slot_bytes != bytes)
        fail(call, "the message from peer %d has %zu bytes, the receive expects %zu", peer,
             p->slot_bytes, bytes);
    if (bytes > 0)
        memcpy(buf, p->slot, bytes);
    p->slot_fresh = 0;
    return 1;
}

int P2Pwait(void)
{
    const char *call = "P2Pwait";
    require_started(call);
    for (;;) {
        progress(call);
        if (rt.send_count == 0)
            return 0;
        sched_yield();
    }
}

/* ---- Termination and collectives ------------------------------------------------------- */

/* 1 when the last epoch posted has completed (then its result is in conv_out). */
static int epoch_completed(const char *call)
{
    if (rt.conv_request != MPI_REQUEST_NULL) {
        int done = 0;
        check(MPI_Test(&rt.conv_request, &done, MPI_STATUS_IGNORE), call, "MPI_Test");
        rt.conv_completed = done;
    }
    return rt.conv_completed;
}

/* One step of the epoch protocol (async and hybrid): 1 when an epoch has completed with 1. */
static int epoch_step(int local, const char *call)
{
    rt.conv_acc = rt.conv_acc && local;
    if (!epoch_completed(call))
        return 0;
    if (rt.conv_out)
        return 1;
    /* Post the next epoch with what this peer saw since it posted the previous one. */
    rt.conv_in = rt.conv_acc;
    rt.conv_acc = 1;
    rt.conv_completed = 0;
    check(MPI_Iallreduce(&rt.conv_in, &rt.conv_out, 1, MPI_INT, MPI_MIN, rt.conv,
                         &rt.conv_request),
          call, "MPI_Iallreduce");
    rt.epochs++;
    return epoch_completed(call) && rt.conv_out;
}

static long long elapsed_ns(const struct timespec *since)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)(now.tv_sec - since->tv_sec) * 1000000000LL + (now.tv_nsec - since->tv_nsec);
}

/* An idle peer (its part converged: its last update was under tolerance; in the hybrid
 * scheme, every member of its group so) computes next what it just computed, or nearly: its
 * data change only by what its peers send, and its decision only when an epoch completes.
 * Spinning through such iterations is harmful when the machine is shared (more ranks than
 * cores, or other processes): the spinning peer keeps the peers whose data it waits for off
 * the processor, uses up the program's iteration limit while they are descheduled, and the
 * iteration stops unconverged at the limit. Two converged peers that keep sending each other
 * what they computed do exactly that if a message counts as work: under load, the middle
 * ranks of a 4-rank chain ran their 2,000 iterations while the end ones, asleep, ran a few
 * dozen, and every epoch saw an end rank's late news as an update over tolerance. So the
 * peer sleeps, with growing pauses, until the posted epoch completes, or a message has come
 * (`pending`: before this call) and IDLE_MIN_NS have passed, or for at most IDLE_LIMIT_NS (a
 * bound for programs whose peers would wake it by no message). A peer whose update was over
 * tolerance never waits: news travels at its pace. */
static void idle_wait(const char *call, int pending)
{
    rt.arrived = pending; /* a group peer's next message wakes this one too */
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long pause = IDLE_FIRST_PAUSE_NS;
    for (;;) {
        progress(call);
        long long waited = elapsed_ns(&start);
        if (epoch_completed(call) || waited >= IDLE_LIMIT_NS || (rt.arrived && waited >= IDLE_MIN_NS))
            return;
        struct timespec nap = {0, pause};
        nanosleep(&nap, NULL);
        pause = pause * 2 < IDLE_LONGEST_PAUSE_NS ? pause * 2 : IDLE_LONGEST_PAUSE_NS;
    }
}

int P2Pconverged(int local_converged)
{
    const char *call = "P2Pconverged";
    require_started(call);
    if (rt.conv_done)
        return 1;
    progress(call);
    int local = local_converged ? 1 : 0;
    int decided;
    if (rt.scheme == P2P_SYNC) {
        check(MPI_Allreduce(&local, &decided, 1, MPI_INT, MPI_MIN, rt.conv), call,
              "MPI_Allreduce");
        rt.epochs++;
    } else {
        decided = epoch_step(local, call);
        int busy = !local;
        if (rt.scheme == P2P_HYBRID) {
            /* The peers of a group iterate in step (their receives block), so they must stop
             * after the same iteration: a member that has seen the deciding epoch complete
             * stops the whole group. The others complete that epoch in the next quiescence.
             * They also rest together: the group is idle only when every member is. */
            int mine[2] = {decided, busy}, group[2];
            check(MPI_Allreduce(mine, group, 2, MPI_INT, MPI_MAX, rt.group), call,
                  "MPI_Allreduce");
            decided = group[0];
            busy = group[1];
        }
        if (!decided && !busy)
            idle_wait(call, rt.arrived_async);
        rt.arrived_async = 0;
    }
    rt.conv_done = decided;
    return decided;
}

double P2Pallreduce(double value, int op)
{
    const char *call = "P2Pallreduce";
    require_started(call);
    MPI_Op mpi_op;
    switch (op) {
    case P2P_SUM:
        mpi_op = MPI_SUM;
        break;
    case P2P_MIN:
        mpi_op = MPI_MIN;
        break;
    case P2P_MAX:
        mpi_op = MPI_MAX;
        break;
    default:
        fail(call, "unknown operator %d (valid: P2P_SUM, P2P_MIN, P2P_MAX)", op);
        return 0.0;
    }
    double result = 0.0;
    check(MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, mpi_op, rt.ctl), call, "MPI_Allreduce");
    return result;
}

void P2Pbarrier(void)
{
    require_started("P2Pbarrier");
    check(MPI_Barrier(rt.ctl), "P2Pbarrier", "MPI_Barrier");
}

double P2Ptime(void)
{
    return MPI_Wtime();
}
