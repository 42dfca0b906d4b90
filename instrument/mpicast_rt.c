/*
 * mpicast_rt.c: the trace runtime linked into programs instrumented by `mpicast trace`.
 *
 * Block counters (mpicast_rt.h) plus PMPI wrappers. At every MPI call the replay understands
 * (traces/FORMAT.md) the wrapper calls the real routine, then writes the compute burst since the
 * previous event (`compute blocks ID xK ...`: only the counters that changed) and the event
 * itself, with peers and roots as ranks of the call's communicator, bytes = count x type size,
 * tags, `comm=ID` for communicators other than the world, and request ids.
 *
 * Compactness: lines go through a folding window (the last WINDOW items, 64 by default). When
 * the last p items repeat the p items before them they become `loop 2` ... `end`; when the p items
 * after a loop equal its body, its count grows. Loops are items themselves, so patterns nest
 * (a time-step loop with a reduction every k steps folds into two levels). Items that leave
 * the window are written out. With MPICAST_TIME_BLOCKS=1 each burst carries its measured
 * duration (`time=S`, the thread's CPU time: a rank that waits for a core, as ranks do when
 * there are more of them than cores, is not charged the wait; the simulation shares the cores
 * itself); folding ignores the durations and writes each folded line's mean. The counters
 * cost time of their own: rank-R.stats gives the rank's span (MPI_Init's return to
 * MPI_Finalize's call) on the wall clock and on the thread's CPU time, and its number of counter
 * increments, which `mpicast trace` compares with the spans of a plain run to find what one
 * increment cost.
 *
 * Polls that find nothing (MPI_Test and its kin, which are no event then) run MPI's progress
 * engine: without MPICAST_TIME_BLOCKS a burst in which some ran is followed by `compute S`,
 * their number times the mean thread CPU time of those timed (a poll loop like HPCC's
 * RandomAccess makes millions of them, half a microsecond each here).
 *
 * Request ids are the smallest id not in use by an outstanding request, so that every
 * iteration of a loop uses the same ids and folds. Communicators created by Comm_split,
 * Comm_split_type, Comm_dup, Comm_create, Cart_create and Cart_sub get an id agreed by the
 * members of the parent (one MPI_Allreduce of the next free id at creation) and a
 * `comm ID RANKS` line, after the collectives OpenMPI runs over the parent to make it and a
 * `ctor split|dup MEMBERS` line (the member's own work there, which the platform prices). Calls with MPI_PROC_NULL as peer write nothing (a Sendrecv with one
 * null side becomes a send or a recv). MPI_Comm_rank, MPI_Comm_size, MPI_Wtime and the like
 * are not wrapped: they end no burst.
 *
 * Output: MPICAST_TRACE_DIR/rank-R.trace.part, renamed to rank-R.trace at MPI_Finalize, plus
 * rank-R.stats (counts and the estimated cost of the clock reads). A rank that crashes
 * (SIGSEGV, SIGABRT, ...), is killed (SIGTERM, SIGINT), calls MPI_Abort or exits without
 * MPI_Finalize writes what it has to the .part file; no memory is allocated on that path. A
 * trace file that cannot be created costs one warning on stderr; the program runs on untraced.
 * Single-threaded MPI use only (MPI_THREAD_MULTIPLE programs would interleave lines).
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpicast_rt.h"

#define MAX_WINDOW 256

/* ---- state ----------------------------------------------------------------------------- */

static int rt_env;  /* MPICAST_TRACE_DIR is set: the extra collectives run on every rank */
static int rt_on;   /* this rank writes a trace */
static int rt_busy; /* the window is being changed (a signal then writes only what is out) */
static int rt_time; /* MPICAST_TIME_BLOCKS=1 */
static int rt_rank, rt_size;
static int window = 64;
static char part_path[4096], final_path[4096], stats_path[4096];
static unsigned long long *last_counts;
static double t_exit; /* when the previous event's MPI call returned */
static unsigned long long n_events, n_bursts, n_clock_reads, n_lines, n_write_errors;
static double clock_ns, t_span0, t_cpu0;

/* The thread's CPU time: what a burst costs, whoever else wanted the core meanwhile. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    n_clock_reads++;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Monotonic seconds, for the rank's span (MPI_Init's return to MPI_Finalize's call). */
static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- timed calls ------------------------------------------------------------------------- */

static unsigned long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

unsigned long long __mpicast_call_begin(unsigned int k)
{
    unsigned long long n = ++__mpicast_cn[k];
    if (n > 1024 && (n & 15) != 0)
        return 0;
    return mono_ns();
}

void __mpicast_call_end(struct __mpicast_ct *t)
{
    if (t->t0 == 0)
        return;
    __mpicast_cns[t->k] += mono_ns() - t->t0;
    __mpicast_ctn[t->k]++;
}

static int cmp_ull(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

/* What timing a call adds to its time: the median of 1,001 timings of nothing, through the
 * same calls an instrumented file makes (not inlined here), on the spare last slot. */
static double call_clock_ns(void)
{
    static unsigned long long d[1001];
    unsigned long long (*volatile begin)(unsigned int) = __mpicast_call_begin;
    void (*volatile end)(struct __mpicast_ct *) = __mpicast_call_end;
    unsigned int k = __mpicast_ncalls;
    for (int i = 0; i < 1001; i++) {
        __mpicast_cn[k] = 0;
        unsigned long long before = __mpicast_cns[k];
        struct __mpicast_ct t = {k, begin(k)};
        end(&t);
        d[i] = __mpicast_cns[k] - before;
    }
    qsort(d, 1001, sizeof d[0], cmp_ull);
    return (double)d[500];
}

/* ---- output: a static buffer and write(2), usable from a signal handler ----------------- */

static int out_fd = -1;
static char out_buf[1 << 16];
static size_t out_len;
static unsigned long long out_total;

static void out_flush(void)
{
    size_t off = 0;
    while (off < out_len) {
        ssize_t n = write(out_fd, out_buf + off, out_len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            n_write_errors++;
            break;
        }
        off += (size_t)n;
    }
    out_total += off;
    out_len = 0;
}

static void out_bytes(const char *s, size_t n)
{
    while (n > 0) {
        size_t room = sizeof out_buf - out_len;
        if (room == 0) {
            out_flush();
            room = sizeof out_buf;
        }
        size_t k = n < room ? n : room;
        memcpy(out_buf + out_len, s, k);
        out_len += k;
        s += k;
        n -= k;
    }
}

static size_t fmt_u64(char *b, unsigned long long v)
{
    char t[24];
    size_t n = 0;
    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        b[i] = t[n - 1 - i];
    return n;
}

static size_t fmt_i64(char *b, long long v)
{
    if (v < 0) {
        b[0] = '-';
        return 1 + fmt_u64(b + 1, (unsigned long long)(-(v + 1)) + 1);
    }
    return fmt_u64(b, (unsigned long long)v);
}

/* Seconds with 4 significant digits, `1.234e-05`; no printf (signal handlers use it). */
static size_t fmt_sci(char *b, double v)
{
    if (!(v > 0.0) || v > 1e300) {
        b[0] = '0';
        return 1;
    }
    int e = 0;
    while (v >= 10.0) {
        v /= 10.0;
        e++;
    }
    while (v < 1.0) {
        v *= 10.0;
        e--;
    }
    unsigned long long m = (unsigned long long)(v * 1000.0 + 0.5);
    if (m >= 10000) {
        m /= 10;
        e++;
    }
    size_t n = 0;
    b[n++] = (char)('0' + m / 1000);
    b[n++] = '.';
    b[n++] = (char)('0' + m / 100 % 10);
    b[n++] = (char)('0' + m / 10 % 10);
    b[n++] = (char)('0' + m % 10);
    b[n++] = 'e';
    b[n++] = e < 0 ? '-' : '+';
    if (e < 0)
        e = -e;
    if (e < 10)
        b[n++] = '0';
    n += fmt_u64(b + n, (unsigned long long)e);
    return n;
}

/* ---- lines under construction ------------------------------------------------------------ */

typedef struct {
    char *p;
    size_t len, cap;
    int bad; /* out of memory: the line is dropped */
} line_t;

static void ln_bytes(line_t *l, const char *s, size_t n)
{
    if (l->bad)
        return;
    if (l->len + n + 1 > l->cap) {
        size_t cap = l->cap ? l->cap : 96;
        while (cap < l->len + n + 1)
            cap *= 2;
        char *q = realloc(l->p, cap);
        if (q == NULL) {
            l->bad = 1;
            return;
        }
        l->p = q;
        l->cap = cap;
    }
    memcpy(l->p + l->len, s, n);
    l->len += n;
    l->p[l->len] = '\0';
}

static void ln_str(line_t *l, const char *s) { ln_bytes(l, s, strlen(s)); }

static void ln_u64(line_t *l, unsigned long long v)
{
    char b[24];
    ln_bytes(l, b, fmt_u64(b, v));
}

static void ln_i64(line_t *l, long long v)
{
    char b[24];
    ln_bytes(l, b, fmt_i64(b, v));
}

/* `key=VALUE` with a leading space. */
static void ln_opt(line_t *l, const char *key, long long v)
{
    ln_str(l, " ");
    ln_str(l, key);
    ln_str(l, "=");
    ln_i64(l, v);
}

/* ---- the folding window ------------------------------------------------------------------ */

typedef struct node {
    unsigned long long hash;
    struct node **body; /* loop: its items */
    char *text;         /* line: the text without its time */
    double tsum;        /* line: summed durations of the occurrences merged into it */
    unsigned long long occ;
    unsigned long long count; /* loop: repetitions */
    unsigned int len;         /* line: text length */
    unsigned int n;           /* loop: number of items */
    unsigned char loop, timed;
} node;

static node *win[MAX_WINDOW + 2];
static int nwin;

static unsigned long long mix(unsigned long long h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

static void rehash(node *x)
{
    unsigned long long h = 0xcbf29ce484222325ULL;
    if (x->loop) {
        for (unsigned i = 0; i < x->n; i++)
            h = (h ^ x->body[i]->hash) * 0x100000001b3ULL;
        h = mix(h ^ mix(x->count + 0x9e3779b97f4a7c15ULL));
    } else {
        for (unsigned i = 0; i < x->len; i++)
            h = (h ^ (unsigned char)x->text[i]) * 0x100000001b3ULL;
        h = mix(h + x->timed);
    }
    x->hash = h;
}

static int node_eq(const node *a, const node *b)
{
    if (a->hash != b->hash || a->loop != b->loop)
        return 0;
    if (!a->loop)
        return a->len == b->len && a->timed == b->timed && memcmp(a->text, b->text, a->len) == 0;
    if (a->count != b->count || a->n != b->n)
        return 0;
    for (unsigned i = 0; i < a->n; i++)
        if (!node_eq(a->body[i], b->body[i]))
            return 0;
    return 1;
}

static int seq_eq(node *const *a, node *const *b, int p)
{
    for (int i = p - 1; i >= 0; i--)
        if (!node_eq(a[i], b[i]))
            return 0;
    return 1;
}

/* Adds the durations of `src` (equal in structure) to `dst`. */
static void merge(node *dst, const node *src)
{
    if (dst->loop) {
        for (unsigned i = 0; i < dst->n; i++)
            merge(dst->body[i], src->body[i]);
    } else {
        dst->tsum += src->tsum;
        dst->occ += src->occ;
    }
}

static void free_node(node *x)
{
    if (x->loop) {
        for (unsigned i = 0; i < x->n; i++)
            free_node(x->body[i]);
        free(x->body);
    } else {
        free(x->text);
    }
    free(x);
}

static void indent(int depth)
{
    static const char spaces[] = "                                ";
    size_t n = (size_t)(depth < 16 ? depth : 16) * 2;
    out_bytes(spaces, n);
}

/* Writes an item (no allocation: signal handlers use it). */
static void emit(const node *x, int depth)
{
    char b[48];
    indent(depth);
    if (!x->loop) {
        out_bytes(x->text, x->len);
        if (x->timed == 1) {
            out_bytes(" time=", 6);
            out_bytes(b, fmt_sci(b, x->occ ? x->tsum / (double)x->occ : 0.0));
        } else if (x->timed == 2) {
            /* `compute SECONDS`: the polls' wall time (lines folded into a loop: the mean). */
            out_bytes(" ", 1);
            out_bytes(b, fmt_sci(b, x->occ ? x->tsum / (double)x->occ : 0.0));
        }
        out_bytes("\n", 1);
        n_lines++;
        return;
    }
    out_bytes("loop ", 5);
    out_bytes(b, fmt_u64(b, x->count));
    out_bytes("\n", 1);
    for (unsigned i = 0; i < x->n; i++)
        emit(x->body[i], depth + 1);
    indent(depth);
    out_bytes("end\n", 4);
    n_lines += 2;
}

/* Folds repetitions at the end of the window until none is left. */
static void fold(void)
{
    for (;;) {
        int n = nwin, done = 0;
        /* The p items after a loop equal its body: one more repetition. */
        for (int p = 1; p < n && !done; p++) {
            node *l = win[n - 1 - p];
            if (!l->loop || l->n != (unsigned)p || !seq_eq(l->body, win + n - p, p))
                continue;
            for (int i = 0; i < p; i++) {
                merge(l->body[i], win[n - p + i]);
                free_node(win[n - p + i]);
            }
            nwin = n - p;
            l->count++;
            rehash(l);
            done = 1;
        }
        /* The last p items repeat the p before them: a loop of 2. */
        for (int p = 1; 2 * p <= n && !done; p++) {
            if (!seq_eq(win + n - 2 * p, win + n - p, p))
                continue;
            node *l = calloc(1, sizeof *l);
            node **body = malloc((size_t)p * sizeof *body);
            if (l == NULL || body == NULL) {
                free(l);
                free(body);
                return;
            }
            for (int i = 0; i < p; i++) {
                body[i] = win[n - 2 * p + i];
                merge(body[i], win[n - p + i]);
                free_node(win[n - p + i]);
            }
            l->loop = 1;
            l->body = body;
            l->n = (unsigned)p;
            l->count = 2;
            rehash(l);
            nwin = n - 2 * p;
            win[nwin++] = l;
            done = 1;
        }
        if (!done)
            return;
    }
}

/* Takes the line's text; `timed`: it carries a duration of `seconds` (1: `time=S` after the
 * text, 2: the seconds after the text, `compute S`). */
static void push_line(line_t *l, int timed, double seconds)
{
    if (l->bad || !rt_on) {
        free(l->p);
        return;
    }
    node *x = calloc(1, sizeof *x);
    if (x == NULL) {
        free(l->p);
        return;
    }
    x->text = l->p;
    x->len = (unsigned)l->len;
    x->timed = (unsigned char)timed;
    x->tsum = seconds;
    x->occ = 1;
    rehash(x);
    rt_busy = 1;
    win[nwin++] = x;
    fold();
    while (nwin > window) {
        emit(win[0], 0);
        free_node(win[0]);
        memmove(win, win + 1, (size_t)(nwin - 1) * sizeof *win);
        nwin--;
    }
    rt_busy = 0;
}

/* ---- bursts and events ------------------------------------------------------------------- */

static double poll_cpu_s, poll_total_s, cpu_clock_ns;
static unsigned long long n_polls, poll_calls, poll_timed, poll_pending;

/* The counters that changed since the previous burst, and its duration in time mode. */
static void burst(double t_in)
{
    line_t l = {0};
    int any = 0;
    ln_str(&l, "compute blocks");
    for (unsigned k = 0; k < __mpicast_nids; k++) {
        unsigned long long v = __mpicast_bc[__mpicast_ids[k]];
        if (v != last_counts[k]) {
            ln_str(&l, " ");
            ln_u64(&l, __mpicast_ids[k]);
            ln_str(&l, "x");
            ln_u64(&l, v - last_counts[k]);
            last_counts[k] = v;
            any = 1;
        }
    }
    if (rt_time || any) {
        n_bursts++;
        push_line(&l, rt_time, t_in - t_exit);
    } else {
        free(l.p);
    }
    /* The wall time of the polls that found nothing since the previous event (not with
     * --time-blocks: the bursts' time holds it). */
    if (poll_pending > 0 && poll_timed > 0) {
        double s = (double)poll_pending * poll_cpu_s / (double)poll_timed;
        line_t p = {0};
        ln_str(&p, "compute");
        push_line(&p, 2, s);
        poll_total_s += s;
        poll_pending = 0;
    }
}

/* Polls (MPI_Test, MPI_Testany, MPI_Testall, MPI_Testsome) that find nothing are no event
 * but part of the burst around them: MPI's progress engine runs (with mpi_yield_when_idle the
 * process yields), about half a microsecond each on a 2-core VM with 2 ranks. They are
 * charged at the mean thread CPU time of those timed, the first 16 and one in 16 after (the
 * wall clock would charge a rank the time it yielded to another on its core; reading the CPU
 * clock is a system call, of which one is taken off each timing). poll_start's value goes to
 * poll_end: 0, not timed; `found`: the poll completed something. */
static double poll_start(void)
{
    if (!rt_on || rt_time)
        return 0.0;
    unsigned long long n = ++poll_calls;
    return n <= 16 || (n & 15) == 0 ? now() : -1.0;
}

static void poll_end(double t0, int found)
{
    if (t0 == 0.0 || found || !rt_on)
        return;
    if (t0 > 0.0) {
        double d = now() - t0 - cpu_clock_ns * 1e-9;
        poll_cpu_s += d > 0.0 ? d : 0.0;
        poll_timed++;
    }
    poll_pending++;
    n_polls++;
}

/* The runtime's own work after MPI calls (the burst's line, the call's, folding, writing),
 * timed on a sample of events: the first 16, then one in 16. `mpicast trace` leaves it, with
 * the clock reads, out of what it finds the counters cost (ranks that call MPI a million times
 * spend more on this than on their counters). */
static double book_s;
static unsigned long long book_n;

/* The burst before the call that entered at `t_in`, then the call's line. */
static void event(double t_in, line_t *l)
{
    double t_book = rt_time && (n_events < 16 || (n_events & 15) == 0) ? now() : 0.0;
    burst(t_in);
    push_line(l, 0, 0.0);
    n_events++;
    if (rt_time) {
        t_exit = now();
        if (t_book > 0.0) {
            book_s += t_exit - t_book;
            book_n++;
        }
    }
}

static double enter(void) { return rt_on && rt_time ? now() : 0.0; }

static unsigned long long type_bytes(long long count, MPI_Datatype type)
{
    int size = 0;
    if (count <= 0 || type == MPI_DATATYPE_NULL)
        return 0;
    PMPI_Type_size(type, &size);
    return size > 0 ? (unsigned long long)count * (unsigned long long)size : 0;
}

/* ---- communicators ----------------------------------------------------------------------- */

typedef struct {
    MPI_Comm handle;
    unsigned id;
} comm_entry;

static comm_entry *comms;
static int ncomms, cap_comms;
static unsigned next_comm_id = 1;
static unsigned next_local_id = 1u << 20;

static void comm_add(MPI_Comm handle, unsigned id)
{
    if (ncomms == cap_comms) {
        int cap = cap_comms ? 2 * cap_comms : 16;
        comm_entry *q = realloc(comms, (size_t)cap * sizeof *q);
        if (q == NULL)
            return;
        comms = q;
        cap_comms = cap;
    }
    comms[ncomms].handle = handle;
    comms[ncomms].id = id;
    ncomms++;
}

/* `comm ID RANKS`: the members' world ranks in communicator order, ranges folded (0-3,8). */
static void comm_line(line_t *l, unsigned id, MPI_Comm c)
{
    int n = 0;
    PMPI_Comm_size(c, &n);
    int *in = malloc((size_t)(n > 0 ? n : 1) * sizeof *in);
    int *out = malloc((size_t)(n > 0 ? n : 1) * sizeof *out);
    MPI_Group g, wg;
    ln_str(l, "comm ");
    ln_u64(l, id);
    ln_str(l, " ");
    if (in == NULL || out == NULL) {
        l->bad = 1;
        free(in);
        free(out);
        return;
    }
    for (int i = 0; i < n; i++)
        in[i] = i;
    PMPI_Comm_group(c, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    PMPI_Group_translate_ranks(g, n, in, wg, out);
    PMPI_Group_free(&g);
    PMPI_Group_free(&wg);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && out[j + 1] == out[j] + 1)
            j++;
        if (i > 0)
            ln_str(l, ",");
        ln_i64(l, out[i]);
        if (j > i) {
            ln_str(l, "-");
            ln_i64(l, out[j]);
        }
        i = j + 1;
    }
    free(in);
    free(out);
}

/* The trace id of a communicator. One not created through a wrapper gets a local id (ranks
 * may disagree on it; a comment says so). */
static unsigned comm_id(MPI_Comm c)
{
    if (c == MPI_COMM_WORLD)
        return 0;
    for (int i = ncomms - 1; i >= 0; i--)
        if (comms[i].handle == c)
            return comms[i].id;
    unsigned id = next_local_id++;
    comm_add(c, id);
    line_t l = {0};
    comm_line(&l, id, c);
    ln_str(&l, " # created outside the traced routines: the id may differ between members");
    push_line(&l, 0, 0.0);
    return id;
}

static void ln_comm(line_t *l, MPI_Comm c)
{
    unsigned id = comm_id(c);
    if (id != 0)
        ln_opt(l, "comm", id);
}

/* After a communicator constructor over `parent`: agree on an id, declare the new one. */
static int comm_size(MPI_Comm c);

/* The first line of a call comes after its burst (`event`); the call's further lines follow it. */
static void event_of_call(double t_in, line_t *l, int *first)
{
    if (*first) {
        event(t_in, l);
        *first = 0;
    } else {
        push_line(l, 0, 0.0);
        n_events++;
    }
}

/* A constructor's own collectives over its parent, as OpenMPI 4.1 runs them (the members
 * synchronise there): a split's allgather of colour and key (`gathers`), then the context id's
 * two allreduces and the activation's one (frontend/mpi.rs, constructor_collectives, says the
 * same for the static path). */
static void constructor_events(double t_in, MPI_Comm parent, MPI_Comm created, int gathers, int *first)
{
    if (!rt_on || comm_size(parent) < 2)
        return;
    for (int k = gathers ? -1 : 0; k < 3; k++) {
        line_t l = {0};
        ln_str(&l, k < 0 ? "allgather 8" : "allreduce 4");
        ln_comm(&l, parent);
        event_of_call(t_in, &l, first);
    }
    /* The member's own work beyond those collectives, by the new communicator's size. */
    line_t l = {0};
    ln_str(&l, gathers ? "ctor split " : "ctor dup ");
    ln_u64(&l, created == MPI_COMM_NULL ? 0ULL : (unsigned long long)comm_size(created));
    event_of_call(t_in, &l, first);
}

static void comm_created(double t_in, MPI_Comm parent, MPI_Comm created, int gathers)
{
    if (!rt_env)
        return;
    int inter = 0;
    PMPI_Comm_test_inter(parent, &inter);
    if (inter)
        return;
    int first = 1;
    constructor_events(t_in, parent, created, gathers, &first);
    unsigned mine = next_comm_id, agreed = mine;
    PMPI_Allreduce(&mine, &agreed, 1, MPI_UNSIGNED, MPI_MAX, parent);
    next_comm_id = agreed + 1;
    if (created != MPI_COMM_NULL && rt_on) {
        comm_add(created, agreed);
        line_t l = {0};
        comm_line(&l, agreed, created);
        event_of_call(t_in, &l, &first);
    }
    /* A constructor's own work is costed from the machine table and the platform (its
     * comm_create op, its `ctor` line), the id's agreement is the runtime's: neither is in a
     * burst. Without a line here (a parent of one rank and no communicator made) the burst
     * before the call is still open and leaves the call's time out. */
    if (rt_on && rt_time) {
        if (first)
            t_exit += now() - t_in;
        else
            t_exit = now();
    }
}

/* ---- requests ---------------------------------------------------------------------------- */

typedef struct {
    MPI_Request handle;
    /* Where the program keeps it: an MPI may hand out one handle for two outstanding requests
     * (a completed send), and the variable then tells them apart. */
    const MPI_Request *where;
    unsigned long long id;
} req_entry;

static req_entry *reqs;
static int nreqs, cap_reqs;
static unsigned long long *id_bits;
static size_t id_words;

static unsigned long long id_alloc(void)
{
    for (size_t w = 0; w < id_words; w++) {
        if (~id_bits[w]) {
            unsigned b = (unsigned)__builtin_ctzll(~id_bits[w]);
            id_bits[w] |= 1ULL << b;
            return w * 64 + b;
        }
    }
    size_t words = id_words ? 2 * id_words : 4;
    unsigned long long *q = realloc(id_bits, words * sizeof *q);
    if (q == NULL)
        return (unsigned long long)-1;
    memset(q + id_words, 0, (words - id_words) * sizeof *q);
    id_bits = q;
    unsigned long long id = id_words * 64;
    id_words = words;
    id_bits[id / 64] |= 1ULL;
    return id;
}

static void id_free(unsigned long long id)
{
    if (id / 64 < id_words)
        id_bits[id / 64] &= ~(1ULL << (id % 64));
}

/* Registers a new request; returns its id, or -1 when it cannot be tracked. */
static long long req_add(MPI_Request h, const MPI_Request *where)
{
    if (nreqs == cap_reqs) {
        int cap = cap_reqs ? 2 * cap_reqs : 64;
        req_entry *q = realloc(reqs, (size_t)cap * sizeof *q);
        if (q == NULL)
            return -1;
        reqs = q;
        cap_reqs = cap;
    }
    unsigned long long id = id_alloc();
    if (id == (unsigned long long)-1)
        return -1;
    reqs[nreqs].handle = h;
    reqs[nreqs].where = where;
    reqs[nreqs].id = id;
    nreqs++;
    return (long long)id;
}

/* The id of an outstanding request kept at `where`, or -1 (MPI_PROC_NULL peers, untraced
 * calls): the entry with this handle registered from this variable, else the latest with this
 * handle (the program copied its requests elsewhere). */
static long long req_find(MPI_Request h, const MPI_Request *where)
{
    if (h == MPI_REQUEST_NULL)
        return -1;
    long long any = -1;
    for (int i = nreqs - 1; i >= 0; i--) {
        if (reqs[i].handle != h)
            continue;
        if (reqs[i].where == where)
            return (long long)reqs[i].id;
        if (any < 0)
            any = (long long)reqs[i].id;
    }
    return any;
}

static void req_done(long long id)
{
    if (id < 0)
        return;
    for (int i = nreqs - 1; i >= 0; i--) {
        if (reqs[i].id == (unsigned long long)id) {
            reqs[i] = reqs[nreqs - 1];
            nreqs--;
            id_free((unsigned long long)id);
            return;
        }
    }
}

/* ---- start and end ----------------------------------------------------------------------- */

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT};
#define NFATAL (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction old_actions[NFATAL];

/* Writes whatever the rank has to the .part file (no allocation). */
static void dump_partial(void)
{
    if (!rt_on)
        return;
    rt_on = 0;
    if (!rt_busy)
        for (int i = 0; i < nwin; i++)
            emit(win[i], 0);
    out_flush();
}

static void on_fatal(int sig)
{
    int saved = errno;
    dump_partial();
    for (unsigned i = 0; i < NFATAL; i++)
        if (fatal_signals[i] == sig)
            sigaction(sig, &old_actions[i], NULL);
    errno = saved;
    raise(sig);
}

static void at_exit(void) { dump_partial(); }

static void write_stats(int complete)
{
    char text[1024];
    unsigned long long increments = 0;
    for (unsigned k = 0; k < __mpicast_nids; k++)
        increments += __mpicast_bc[__mpicast_ids[k]];
    int n = snprintf(text, sizeof text,
                     "complete=%d\nevents=%llu\nbursts=%llu\nlines=%llu\nbytes=%llu\n"
                     "clock_reads=%llu\nclock_ns=%.2f\ntiming_overhead_s=%.6e\nspan_s=%.9f\n"
                     "cpu_span_s=%.9f\nincrements=%llu\nwrite_errors=%llu\npolls=%llu\npoll_s=%.9f\n"
                     "bookkeeping_s=%.9f\n",
                     complete, n_events, n_bursts, n_lines, out_total, n_clock_reads, clock_ns,
                     (double)n_clock_reads * clock_ns * 1e-9, wall_now() - t_span0, now() - t_cpu0, increments,
                     n_write_errors, n_polls, poll_total_s,
                     book_n > 0 ? book_s / (double)book_n * (double)n_events : 0.0);
    int fd = open(stats_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    if (n > 0 && write(fd, text, (size_t)n) < 0)
        n_write_errors++;
    /* The address probes that saw an access: the bytes from the lowest address to the highest,
     * the accesses seen, and those that found their line among the 64 the probe touched last. */
    for (unsigned k = 0; k < __mpicast_nprobes; k++) {
        if (__mpicast_seen[k] == 0)
            continue;
        unsigned long long lo = ~__mpicast_nlo[k], hi = __mpicast_hi[k];
        n = snprintf(text, sizeof text, "probe.%u=%llu %u %u\n", k, hi >= lo ? hi - lo : 0ULL, __mpicast_seen[k],
                     __mpicast_reused[k]);
        if (n > 0 && write(fd, text, (size_t)n) < 0)
            n_write_errors++;
    }
    /* The timed calls that ran: nanoseconds over the timed ones, how many were timed, how
     * many ran. */
    int any_call = 0;
    for (unsigned k = 0; k < __mpicast_ncalls; k++) {
        if (__mpicast_cn[k] == 0)
            continue;
        if (!any_call) {
            any_call = 1;
            n = snprintf(text, sizeof text, "call_clock_ns=%.1f\n", call_clock_ns());
            if (n > 0 && write(fd, text, (size_t)n) < 0)
                n_write_errors++;
        }
        n = snprintf(text, sizeof text, "call.%u=%llu %llu %llu\n", k, __mpicast_cns[k], __mpicast_ctn[k], __mpicast_cn[k]);
        if (n > 0 && write(fd, text, (size_t)n) < 0)
            n_write_errors++;
    }
    /* The hooked loops that were entered: entries, and those whose exit a predictor misses
     * (the last entry finished here, as the next entry's hook would). */
    for (unsigned j = 0; j < __mpicast_nloops; j++) {
        unsigned k = __mpicast_loops[j];
        const unsigned long long *e = &__mpicast_le[4 * (unsigned long long)k];
        if (e[0] == 0)
            continue;
        unsigned long long d = __mpicast_bc[k] - e[1];
        unsigned long long misses = e[3] + ((e[0] > 1 && d != e[2]) || d > 32);
        n = snprintf(text, sizeof text, "loop.%u=%llu %llu\n", k, e[0], misses);
        if (n > 0 && write(fd, text, (size_t)n) < 0)
            n_write_errors++;
    }
    close(fd);
}

static void rt_start(void)
{
    const char *dir = getenv("MPICAST_TRACE_DIR");
    if (dir == NULL || dir[0] == '\0')
        return;
    rt_env = 1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rt_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &rt_size);
    const char *t = getenv("MPICAST_TIME_BLOCKS");
    rt_time = t != NULL && strcmp(t, "1") == 0;
    const char *w = getenv("MPICAST_WINDOW");
    if (w != NULL && atoi(w) > 0)
        window = atoi(w) < MAX_WINDOW ? atoi(w) : MAX_WINDOW;
    snprintf(part_path, sizeof part_path, "%s/rank-%d.trace.part", dir, rt_rank);
    snprintf(final_path, sizeof final_path, "%s/rank-%d.trace", dir, rt_rank);
    snprintf(stats_path, sizeof stats_path, "%s/rank-%d.stats", dir, rt_rank);
    last_counts = calloc(__mpicast_nids ? __mpicast_nids : 1, sizeof *last_counts);
    /* Counts from MPI_Init on, as the span and the first burst's time: what ran before it
     * (argument parsing, a setup loop, the entries of the blocks around the call) is not. */
    if (last_counts != NULL)
        for (unsigned k = 0; k < __mpicast_nids; k++)
            last_counts[k] = __mpicast_bc[__mpicast_ids[k]];
    out_fd = open(part_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out_fd < 0 || last_counts == NULL) {
        fprintf(stderr, "mpicast: rank %d: cannot write %s (%s); this rank runs without a trace\n",
                rt_rank, part_path, strerror(errno));
        return;
    }
    rt_on = 1;
    char b[32];
    out_bytes("mpicast-trace 1 rank ", 21);
    out_bytes(b, fmt_u64(b, (unsigned long long)rt_rank));
    out_bytes(" size ", 6);
    out_bytes(b, fmt_u64(b, (unsigned long long)rt_size));
    out_bytes("\n", 1);
    /* The cost of one clock read: for the overhead estimate in rank-R.stats, and taken off
     * each timed poll. */
    {
        double t0 = now();
        for (int i = 0; i < 1000; i++)
            (void)now();
        cpu_clock_ns = (now() - t0) / 1001.0 * 1e9;
        if (rt_time)
            clock_ns = cpu_clock_ns;
        n_clock_reads = 0;
    }
    for (unsigned i = 0; i < NFATAL; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sigemptyset(&sa.sa_mask);
        sigaction(fatal_signals[i], &sa, &old_actions[i]);
    }
    atexit(at_exit);
    t_span0 = wall_now();
    t_cpu0 = now();
    t_exit = rt_time ? now() : 0.0;
}

static void rt_finish(void)
{
    rt_busy = 1;
    for (int i = 0; i < nwin; i++) {
        emit(win[i], 0);
        free_node(win[i]);
    }
    nwin = 0;
    rt_busy = 0;
    out_flush();
    rt_on = 0;
    close(out_fd);
    out_fd = -1;
    write_stats(1);
    if (rename(part_path, final_path) != 0)
        fprintf(stderr, "mpicast: rank %d: cannot rename %s: %s\n", rt_rank, part_path,
                strerror(errno));
}

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    rt_start();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    rt_start();
    return rc;
}

int MPI_Finalize(void)
{
    if (rt_on) {
        burst(enter());
        rt_finish();
    }
    return PMPI_Finalize();
}

int MPI_Abort(MPI_Comm comm, int code)
{
    if (rt_on) {
        burst(enter());
        dump_partial();
    }
    return PMPI_Abort(comm, code);
}

/* ---- point to point ---------------------------------------------------------------------- */

static void ln_peer(line_t *l, int peer)
{
    ln_str(l, " ");
    if (peer == MPI_ANY_SOURCE)
        ln_str(l, "any");
    else
        ln_i64(l, peer);
}

static void ln_tag(line_t *l, const char *key, int tag)
{
    if (tag == MPI_ANY_TAG) {
        ln_str(l, " ");
        ln_str(l, key);
        ln_str(l, "=any");
    } else if (tag != 0) {
        ln_opt(l, key, tag);
    }
}

/* `send TO BYTES [tag=T] [comm=C] [buffered=1]`; buffered: an MPI_Bsend, whose sender goes on
 * once the message is in the attached buffer. */
static void send_event(double t, int buffered, int dest, unsigned long long bytes, int tag,
                       MPI_Comm comm)
{
    line_t l = {0};
    ln_str(&l, "send");
    ln_peer(&l, dest);
    ln_str(&l, " ");
    ln_u64(&l, bytes);
    ln_tag(&l, "tag", tag);
    ln_comm(&l, comm);
    if (buffered)
        ln_str(&l, " buffered=1");
    event(t, &l);
}

/* Set by the P2PDC runtime (instrument/p2pdc.c) just before the MPI_Recv of a message it found
 * with MPI_Iprobe for an asynchronous receive: that receive is written `arecv` (replay takes
 * what has been sent by then and never waits for more). */
static int async_next;

void mpicast_rt_async_recv(void)
{
    async_next = 1;
}

static void recv_event(double t, int source, unsigned long long bytes, int tag, MPI_Comm comm)
{
    line_t l = {0};
    ln_str(&l, async_next ? "arecv" : "recv");
    async_next = 0;
    ln_peer(&l, source);
    ln_str(&l, " ");
    ln_u64(&l, bytes);
    ln_tag(&l, "tag", tag);
    ln_comm(&l, comm);
    event(t, &l);
}

#define SEND_WRAPPER(NAME, BUFFERED)                                                           \
    int NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)   \
    {                                                                                          \
        double t = enter();                                                                    \
        int rc = P##NAME(buf, count, type, dest, tag, comm);                                   \
        if (rt_on && dest != MPI_PROC_NULL)                                                    \
            send_event(t, BUFFERED, dest, type_bytes(count, type), tag, comm);                 \
        return rc;                                                                             \
    }

SEND_WRAPPER(MPI_Send, 0)
SEND_WRAPPER(MPI_Ssend, 0)
SEND_WRAPPER(MPI_Rsend, 0)
SEND_WRAPPER(MPI_Bsend, 1)

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    double t = enter();
    int rc = PMPI_Recv(buf, count, type, source, tag, comm, status);
    if (rt_on && source != MPI_PROC_NULL)
        recv_event(t, source, type_bytes(count, type), tag, comm);
    return rc;
}

static void isend_event(double t, const MPI_Request *req, int dest, unsigned long long bytes, int tag,
                        MPI_Comm comm)
{
    long long id = req_add(*req, req);
    if (id < 0)
        return;
    line_t l = {0};
    ln_str(&l, "isend ");
    ln_i64(&l, id);
    ln_peer(&l, dest);
    ln_str(&l, " ");
    ln_u64(&l, bytes);
    ln_tag(&l, "tag", tag);
    ln_comm(&l, comm);
    event(t, &l);
}

#define ISEND_WRAPPER(NAME)                                                                    \
    int NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,   \
             MPI_Request *req)                                                                 \
    {                                                                                          \
        double t = enter();                                                                    \
        int rc = P##NAME(buf, count, type, dest, tag, comm, req);                              \
        if (rt_on && dest != MPI_PROC_NULL && rc == MPI_SUCCESS)                               \
            isend_event(t, req, dest, type_bytes(count, type), tag, comm);                     \
        return rc;                                                                             \
    }

ISEND_WRAPPER(MPI_Isend)
ISEND_WRAPPER(MPI_Issend)
ISEND_WRAPPER(MPI_Irsend)
ISEND_WRAPPER(MPI_Ibsend)

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    double t = enter();
    int rc = PMPI_Irecv(buf, count, type, source, tag, comm, req);
    if (rt_on && source != MPI_PROC_NULL && rc == MPI_SUCCESS) {
        long long id = req_add(*req, req);
        if (id >= 0) {
            line_t l = {0};
            ln_str(&l, "irecv ");
            ln_i64(&l, id);
            ln_peer(&l, source);
            ln_str(&l, " ");
            ln_u64(&l, type_bytes(count, type));
            ln_tag(&l, "tag", tag);
            ln_comm(&l, comm);
            event(t, &l);
        }
    }
    return rc;
}

/* `OP id id ...` for the ids >= 0 among `ids`; nothing when there is none. */
static void reqs_event(double t, const char *op, const long long *ids, int n)
{
    line_t l = {0};
    int any = 0;
    ln_str(&l, op);
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0)
            continue;
        ln_str(&l, " ");
        ln_i64(&l, ids[i]);
        req_done(ids[i]);
        any = 1;
    }
    if (any)
        event(t, &l);
    else
        free(l.p);
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    double t = enter();
    long long id = rt_on ? req_find(*req, req) : -1;
    int rc = PMPI_Wait(req, status);
    if (rt_on && id >= 0)
        reqs_event(t, "wait", &id, 1);
    return rc;
}

/* The ids of `n` requests (-1 for untracked ones); NULL when tracing is off. */
static long long *find_ids(int n, const MPI_Request *r)
{
    if (!rt_on || n <= 0)
        return NULL;
    long long *ids = malloc((size_t)n * sizeof *ids);
    if (ids != NULL)
        for (int i = 0; i < n; i++)
            ids[i] = req_find(r[i], &r[i]);
    return ids;
}

int MPI_Waitall(int n, MPI_Request reqs_[], MPI_Status statuses[])
{
    double t = enter();
    long long *ids = find_ids(n, reqs_);
    int rc = PMPI_Waitall(n, reqs_, statuses);
    if (ids != NULL && rt_on)
        reqs_event(t, "waitall", ids, n);
    free(ids);
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs_[], int *index, MPI_Status *status)
{
    double t = enter();
    long long *ids = find_ids(n, reqs_);
    int rc = PMPI_Waitany(n, reqs_, index, status);
    if (ids != NULL && rt_on && *index != MPI_UNDEFINED && *index >= 0 && *index < n)
        reqs_event(t, "wait", &ids[*index], 1);
    free(ids);
    return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs_[], int *outcount, int indices[], MPI_Status statuses[])
{
    double t = enter();
    long long *ids = find_ids(n, reqs_);
    int rc = PMPI_Waitsome(n, reqs_, outcount, indices, statuses);
    if (ids != NULL && rt_on && *outcount != MPI_UNDEFINED && *outcount > 0) {
        long long *done = malloc((size_t)*outcount * sizeof *done);
        if (done != NULL) {
            for (int i = 0; i < *outcount; i++)
                done[i] = ids[indices[i]];
            reqs_event(t, "waitall", done, *outcount);
            free(done);
        }
    }
    free(ids);
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    double t = enter(), p = poll_start();
    long long id = rt_on ? req_find(*req, req) : -1;
    int rc = PMPI_Test(req, flag, status);
    poll_end(p, *flag);
    if (rt_on && id >= 0 && *flag)
        reqs_event(t, "test", &id, 1);
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs_[], int *flag, MPI_Status statuses[])
{
    double t = enter();
    long long *ids = find_ids(n, reqs_);
    double p = poll_start();
    int rc = PMPI_Testall(n, reqs_, flag, statuses);
    poll_end(p, *flag);
    if (ids != NULL && rt_on && *flag) {
        for (int i = 0; i < n; i++)
            if (ids[i] >= 0)
                reqs_event(t, "test", &ids[i], 1);
    }
    free(ids);
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs_[], int *index, int *flag, MPI_Status *status)
{
    double t = enter();
    long long *ids = find_ids(n, reqs_);
    double p = poll_start();
    int rc = PMPI_Testany(n, reqs_, index, flag, status);
    poll_end(p, *flag && *index != MPI_UNDEFINED);
    if (ids != NULL && rt_on && *flag && *index != MPI_UNDEFINED && *index >= 0 && *index < n)
        reqs_event(t, "test", &ids[*index], 1);
    free(ids);
    return rc;
}

int MPI_Testsome(int n, MPI_Request reqs_[], int *outcount, int indices[], MPI_Status statuses[])
{
    double t = enter();
    long long *ids = find_ids(n, reqs_);
    double p = poll_start();
    int rc = PMPI_Testsome(n, reqs_, outcount, indices, statuses);
    poll_end(p, *outcount != 0);
    if (ids != NULL && rt_on && *outcount != MPI_UNDEFINED) {
        for (int i = 0; i < *outcount; i++)
            if (indices[i] >= 0 && indices[i] < n)
                reqs_event(t, "test", &ids[indices[i]], 1);
    }
    free(ids);
    return rc;
}

/* `cancel ID`: the replay drops a receive still unmatched at that point (MPI's own rule), so
 * the wait that follows in the program is not traced: the request is done here. */
int MPI_Cancel(MPI_Request *req)
{
    double t = enter();
    long long id = rt_on ? req_find(*req, req) : -1;
    int rc = PMPI_Cancel(req);
    if (rt_on && id >= 0 && rc == MPI_SUCCESS)
        reqs_event(t, "cancel", &id, 1);
    return rc;
}

int MPI_Request_free(MPI_Request *req)
{
    if (rt_on)
        req_done(req_find(*req, req));
    return PMPI_Request_free(req);
}

static void sendrecv_event(double t, int dest, unsigned long long sbytes, int stag, int source,
                           unsigned long long rbytes, int rtag, MPI_Comm comm)
{
    if (dest == MPI_PROC_NULL && source == MPI_PROC_NULL)
        return;
    if (dest == MPI_PROC_NULL) {
        recv_event(t, source, rbytes, rtag, comm);
        return;
    }
    if (source == MPI_PROC_NULL) {
        send_event(t, 0, dest, sbytes, stag, comm);
        return;
    }
    line_t l = {0};
    ln_str(&l, "sendrecv");
    ln_peer(&l, dest);
    ln_str(&l, " ");
    ln_u64(&l, sbytes);
    ln_peer(&l, source);
    ln_str(&l, " ");
    ln_u64(&l, rbytes);
    if (stag != 0)
        ln_opt(&l, "stag", stag);
    ln_tag(&l, "rtag", rtag);
    ln_comm(&l, comm);
    event(t, &l);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm,
                 MPI_Status *status)
{
    double t = enter();
    int rc = PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag,
                           comm, status);
    if (rt_on)
        sendrecv_event(t, dest, type_bytes(scount, stype), stag, source,
                       type_bytes(rcount, rtype), rtag, comm);
    return rc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag, int source,
                         int rtag, MPI_Comm comm, MPI_Status *status)
{
    double t = enter();
    int rc = PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status);
    if (rt_on) {
        unsigned long long b = type_bytes(count, type);
        sendrecv_event(t, dest, b, stag, source, b, rtag, comm);
    }
    return rc;
}

/* ---- collectives ------------------------------------------------------------------------- */

static int comm_size(MPI_Comm c)
{
    int n = 0;
    PMPI_Comm_size(c, &n);
    return n;
}

static int is_inter(MPI_Comm c)
{
    int inter = 0;
    PMPI_Comm_test_inter(c, &inter);
    return inter;
}

/* `OP BYTES [root=R] [comm=C]` */
static void coll_event(double t, const char *op, unsigned long long bytes, int root, MPI_Comm comm)
{
    if (is_inter(comm))
        return;
    line_t l = {0};
    ln_str(&l, op);
    if (bytes != (unsigned long long)-1) {
        ln_str(&l, " ");
        ln_u64(&l, bytes);
    }
    if (root >= 0)
        ln_opt(&l, "root", root);
    ln_comm(&l, comm);
    event(t, &l);
}

/* ` key=V,V,...` with runs as VxK. */
static void ln_counts(line_t *l, const char *key, const unsigned long long *v, int n)
{
    ln_str(l, " ");
    ln_str(l, key);
    ln_str(l, "=");
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[i])
            j++;
        if (i > 0)
            ln_str(l, ",");
        ln_u64(l, v[i]);
        if (j > i) {
            ln_str(l, "x");
            ln_u64(l, (unsigned long long)(j - i + 1));
        }
        i = j + 1;
    }
}

static unsigned long long *counts_bytes(const int *counts, MPI_Datatype type, int n)
{
    unsigned long long *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
    if (v != NULL && counts != NULL)
        for (int i = 0; i < n; i++)
            v[i] = type_bytes(counts[i], type);
    return v;
}

/* `OP counts=... [root=R] [comm=C]` (or send=/recv= for alltoallv). */
static void counts_event(double t, const char *op, const char *key, const unsigned long long *a,
                         const char *key2, const unsigned long long *b, int n, int root,
                         MPI_Comm comm)
{
    line_t l = {0};
    ln_str(&l, op);
    ln_counts(&l, key, a, n);
    if (key2 != NULL)
        ln_counts(&l, key2, b, n);
    if (root >= 0)
        ln_opt(&l, "root", root);
    ln_comm(&l, comm);
    event(t, &l);
}

int MPI_Barrier(MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Barrier(comm);
    if (rt_on)
        coll_event(t, "barrier", (unsigned long long)-1, -1, comm);
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Bcast(buf, count, type, root, comm);
    if (rt_on)
        coll_event(t, "bcast", type_bytes(count, type), root, comm);
    return rc;
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
    if (rt_on)
        coll_event(t, "reduce", type_bytes(count, type), root, comm);
    return rc;
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
    if (rt_on)
        coll_event(t, "allreduce", type_bytes(count, type), -1, comm);
    return rc;
}

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Scan(sbuf, rbuf, count, type, op, comm);
    if (rt_on)
        coll_event(t, "scan", type_bytes(count, type), -1, comm);
    return rc;
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Exscan(sbuf, rbuf, count, type, op, comm);
    if (rt_on)
        coll_event(t, "scan", type_bytes(count, type), -1, comm);
    return rc;
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    if (rt_on) {
        unsigned long long b =
            sbuf == MPI_IN_PLACE ? type_bytes(rcount, rtype) : type_bytes(scount, stype);
        coll_event(t, "gather", b, root, comm);
    }
    return rc;
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    if (rt_on) {
        int me = -1;
        PMPI_Comm_rank(comm, &me);
        unsigned long long b = me == root || rbuf == MPI_IN_PLACE ? type_bytes(scount, stype)
                                                                 : type_bytes(rcount, rtype);
        coll_event(t, "scatter", b, root, comm);
    }
    return rc;
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    if (rt_on) {
        unsigned long long b =
            sbuf == MPI_IN_PLACE ? type_bytes(rcount, rtype) : type_bytes(scount, stype);
        coll_event(t, "allgather", b, -1, comm);
    }
    return rc;
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    if (rt_on) {
        unsigned long long b =
            sbuf == MPI_IN_PLACE ? type_bytes(rcount, rtype) : type_bytes(scount, stype);
        coll_event(t, "alltoall", b, -1, comm);
    }
    return rc;
}

/* Only the root knows a gatherv's or scatterv's counts: it broadcasts them (in bytes) after
 * the call, on every rank whenever tracing is requested, so that every rank writes the list. */
static unsigned long long *root_counts(const int *counts, MPI_Datatype type, int root,
                                       MPI_Comm comm, int n)
{
    int me = -1;
    PMPI_Comm_rank(comm, &me);
    unsigned long long *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
    unsigned long long dummy[1];
    if (me == root && v != NULL && counts != NULL)
        for (int i = 0; i < n; i++)
            v[i] = type_bytes(counts[i], type);
    /* Every rank takes part, even one that could not allocate (it then drops the line). */
    PMPI_Bcast(v != NULL ? (void *)v : (void *)dummy, v != NULL ? n : 0, MPI_UNSIGNED_LONG_LONG,
               root, comm);
    return v;
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
    if (rt_env && !is_inter(comm)) {
        int n = comm_size(comm);
        unsigned long long *v = root_counts(rcounts, rtype, root, comm, n);
        if (rt_on && v != NULL)
            counts_event(t, "gatherv", "counts", v, NULL, NULL, n, root, comm);
        free(v);
    }
    return rc;
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype,
                 void *rbuf, int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
    if (rt_env && !is_inter(comm)) {
        int n = comm_size(comm);
        unsigned long long *v = root_counts(scounts, stype, root, comm, n);
        if (rt_on && v != NULL)
            counts_event(t, "scatterv", "counts", v, NULL, NULL, n, root, comm);
        free(v);
    }
    return rc;
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
    if (rt_on && !is_inter(comm)) {
        int n = comm_size(comm);
        unsigned long long *v = counts_bytes(rcounts, rtype, n);
        if (v != NULL)
            counts_event(t, "allgatherv", "counts", v, NULL, NULL, n, -1, comm);
        free(v);
    }
    return rc;
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                  MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
    if (rt_on && !is_inter(comm)) {
        int n = comm_size(comm);
        unsigned long long *r = counts_bytes(rcounts, rtype, n);
        unsigned long long *s =
            sbuf == MPI_IN_PLACE ? counts_bytes(rcounts, rtype, n) : counts_bytes(scounts, stype, n);
        if (r != NULL && s != NULL)
            counts_event(t, "alltoallv", "send", s, "recv", r, n, -1, comm);
        free(r);
        free(s);
    }
    return rc;
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type,
                       MPI_Op op, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm);
    if (rt_on && !is_inter(comm)) {
        int n = comm_size(comm);
        unsigned long long *v = counts_bytes(rcounts, type, n);
        if (v != NULL)
            counts_event(t, "reduce_scatter", "counts", v, NULL, NULL, n, -1, comm);
        free(v);
    }
    return rc;
}

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype type,
                             MPI_Op op, MPI_Comm comm)
{
    double t = enter();
    int rc = PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, type, op, comm);
    if (rt_on && !is_inter(comm)) {
        int n = comm_size(comm);
        unsigned long long *v = calloc((size_t)(n > 0 ? n : 1), sizeof *v);
        if (v != NULL) {
            for (int i = 0; i < n; i++)
                v[i] = type_bytes(rcount, type);
            counts_event(t, "reduce_scatter", "counts", v, NULL, NULL, n, -1, comm);
        }
        free(v);
    }
    return rc;
}

/* ---- communicator constructors ----------------------------------------------------------- */

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    double t = enter();
    int rc = PMPI_Comm_split(comm, color, key, newcomm);
    comm_created(t, comm, *newcomm, 1);
    return rc;
}

int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    double t = enter();
    int rc = PMPI_Comm_split_type(comm, type, key, info, newcomm);
    comm_created(t, comm, *newcomm, 1);
    return rc;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    double t = enter();
    int rc = PMPI_Comm_dup(comm, newcomm);
    comm_created(t, comm, *newcomm, 0);
    return rc;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    double t = enter();
    int rc = PMPI_Comm_create(comm, group, newcomm);
    comm_created(t, comm, *newcomm, 0);
    return rc;
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *newcomm)
{
    double t = enter();
    int rc = PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm);
    comm_created(t, comm, *newcomm, 0);
    return rc;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain[], MPI_Comm *newcomm)
{
    double t = enter();
    int rc = PMPI_Cart_sub(comm, remain, newcomm);
    comm_created(t, comm, *newcomm, 1);
    return rc;
}

int MPI_Comm_free(MPI_Comm *comm)
{
    double t = enter();
    for (int i = ncomms - 1; i >= 0; i--) {
        if (comms[i].handle == *comm) {
            comms[i] = comms[ncomms - 1];
            ncomms--;
            break;
        }
    }
    int rc = PMPI_Comm_free(comm);
    /* Freeing is part of the comm_create op (made and freed): out of the burst around it. */
    if (rt_on && rt_time)
        t_exit += now() - t;
    return rc;
}
