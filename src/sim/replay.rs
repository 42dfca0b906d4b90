//! Trace replay with MPI semantics, in this process (the child side of [`crate::sim::replay`]).
//!
//! One SimGrid actor per rank streams its trace file and plays it.
//!
//! Matching. MPI matches a message to a receive by (communicator, source, tag) in posting order,
//! with ANY_SOURCE and ANY_TAG; SimGrid mailboxes cannot express that. Matching therefore happens
//! in shared Rust state, per receiver: a queue of posted receives and a queue of unexpected
//! messages (envelopes). Whoever arrives first (the send or the receive) queues an entry naming a
//! mailbox taken from a pool and issues its SimGrid operation on it; whoever arrives second takes
//! the entry and issues its own operation on the same mailbox, so SimGrid pairs exactly the two.
//! The mailbox goes back to the pool once both operations are issued (an actor can be descheduled
//! between queueing and issuing; the count of issued operations makes that safe).
//!
//! Protocols. Below the eager threshold the sender goes on at once and the transfer starts with
//! the send, as MPI's eager protocol puts the data on the wire: a message sent before its
//! receive is posted goes through a mailbox whose permanent receiver (s4u's `set_receiver`) is
//! the destination rank, taken from that rank's own pool, and the receive takes it, over or
//! under way. (SMPI's default, `smpi/async-small-thresh` 0, starts it at the receive: on the
//! emulated xDSL line, 20 ms one way, obstacle3d's halo exchange and allreduce then took 74 ms
//! an iteration in the replay and 54 ms in the runs.) From the threshold on, the sender blocks
//! until the transfer completes, started when the receive is posted (rendezvous). Eager sends
//! are not SimGrid-detached (3.32 keeps detached comms in one global list scanned linearly at
//! each completion); the sender keeps the handle and waits it, without blocking, once the
//! receiver has the message.
//!
//! Collectives are point-to-point algorithms on a separate context per communicator (user
//! messages never match them), see [`coll`](super::coll).

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;
use std::rc::Rc;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::model::trace::{
    Compute, HostStats, LinkStats, Mapping, Peer, RankMark, RankStats, ReplayJob, ReplayResult, Tag,
    TimelineEvent, TraceAction, COMM_WORLD,
};
use crate::sim::coll::{self, PointToPoint};
use crate::sim::engine::{self, Comm, Engine, EngineOptions, Host, Link, Mailbox};
use crate::sim::job::DEFAULT_NETWORK_MODEL;
use crate::trace::pack::TraceDir;
use crate::trace::{rank_file, TraceReader};

/// A matching context: a communicator's point-to-point traffic or its collectives' traffic.
pub(crate) type Ctx = u64;

pub(crate) fn p2p_ctx(comm: u32) -> Ctx {
    u64::from(comm) * 2
}
fn coll_ctx(comm: u32) -> Ctx {
    u64::from(comm) * 2 + 1
}

/// Shared by the two sides of one message.
struct Link2 {
    mbox: Mailbox,
    /// Simulated time the second side arrived (NaN until then).
    matched_at: Cell<f64>,
    /// SimGrid operations issued on `mbox` (the mailbox is recycled at 2).
    issued: Cell<u8>,
    /// The receiver's wait returned: the transfer is over.
    received: Cell<bool>,
    /// The message's size, once a send is matched with it (the receiver's overhead).
    bytes: Cell<u64>,
    /// The rank whose eager mailboxes `mbox` is one of (None: the shared pool's).
    eager_for: Option<u32>,
}

struct Posted {
    src: Option<u32>,
    tag: Option<i32>,
    ctx: Ctx,
    link: Rc<Link2>,
}

struct Envelope {
    src: u32,
    tag: i32,
    ctx: Ctx,
    bytes: u64,
    link: Rc<Link2>,
}

#[derive(Default)]
struct Queues {
    posted: VecDeque<Posted>,
    unexpected: Unexpected,
}

type Unexpected = crate::sim::unexpected::Unexpected<Envelope>;

impl crate::sim::unexpected::Envelope for Envelope {
    fn src(&self) -> u32 {
        self.src
    }
    fn tag(&self) -> i32 {
        self.tag
    }
    fn ctx(&self) -> Ctx {
        self.ctx
    }
}

/// What a rank is blocked on, for the deadlock report.
#[derive(Clone, Debug)]
struct Pending {
    recv: bool,
    /// World rank of the peer (None: any source).
    peer: Option<u32>,
    tag: Option<i32>,
    ctx: Ctx,
    bytes: u64,
}

#[derive(Default)]
struct RankStatus {
    action: &'static str,
    line: u64,
    blocked: Vec<Pending>,
    finished: bool,
}

struct World {
    queues: Vec<Queues>,
    pool: Vec<Mailbox>,
    /// Per rank, spare mailboxes whose permanent receiver it is: an eager message sent before
    /// its receive is posted goes through one, so that its transfer starts with the send.
    eager_pools: Vec<Vec<Mailbox>>,
    /// Every rank's actor.
    actors: Vec<engine::Actor>,
    next_mbox: u64,
    status: Vec<RankStatus>,
    stats: Vec<Option<RankStats>>,
    errors: Vec<String>,
    warnings: Vec<String>,
    messages: u64,
    bytes: f64,
    timeline: Vec<TimelineEvent>,
    links: Vec<Link>,
    /// Per-link bytes, counted from each message's route (SimGrid's link-load plugin crashes
    /// when a deadlock leaves unmatched communications behind).
    link_index: HashMap<Link, usize>,
    link_bytes: Vec<f64>,
    /// With loop marks: per span between two successive marks, each link's bytes.
    link_marked: Vec<Vec<f64>>,
    /// With inner loop marks: per run of the inner loop, each link's bytes between its last
    /// two marks.
    link_inner_marked: Vec<Vec<f64>>,
    routes: HashMap<(Host, Host), Vec<usize>>,
    rank_host: Vec<Host>,
    /// Flops each rank executed (hosts' computed flops without SimGrid's host-load plugin,
    /// whose callbacks run at every start and end of an execution).
    rank_flops: Vec<f64>,
    count_links: bool,
    /// Ranks that made asynchronous receives: messages left for them at the end are expected.
    async_rx: Vec<bool>,
    /// Sends not made because the previous send with the same request was still in flight.
    superseded_sends: u64,
    /// (receiver, sender) pairs where the receiver made asynchronous receives from the sender.
    async_pairs: HashSet<(u32, u32)>,
}

impl World {
    fn mailbox(&mut self) -> Mailbox {
        self.pool.pop().expect("spare_mailbox() filled the pool")
    }
}

/// Makes sure the pool holds a mailbox. Creating one is a SimGrid simcall, which lets other
/// actors run: no borrow of the world may be held across it.
fn spare_mailbox(world: &RefCell<World>) {
    let id = {
        let mut w = world.borrow_mut();
        if w.pool.is_empty() {
            w.next_mbox += 1;
            Some(w.next_mbox)
        } else {
            None
        }
    };
    if let Some(id) = id {
        let m = Mailbox::by_name(&format!("mpicast-m{id}"));
        world.borrow_mut().pool.push(m);
    }
}

/// Makes sure rank `to`'s eager pool holds a mailbox (simcalls: as for [`spare_mailbox`]).
fn spare_eager_mailbox(world: &RefCell<World>, to: u32) {
    let (id, actor) = {
        let mut w = world.borrow_mut();
        if !w.eager_pools[to as usize].is_empty() || w.status[to as usize].finished {
            return;
        }
        w.next_mbox += 1;
        (w.next_mbox, w.actors[to as usize])
    };
    let m = Mailbox::by_name(&format!("mpicast-m{id}"));
    m.set_receiver(Some(actor));
    world.borrow_mut().eager_pools[to as usize].push(m);
}

/// Marks one side's operation as issued; the second one recycles the mailbox.
fn issued(world: &RefCell<World>, link: &Link2) {
    let n = link.issued.get() + 1;
    link.issued.set(n);
    if n == 2 {
        let mut w = world.borrow_mut();
        match link.eager_for {
            Some(r) => w.eager_pools[r as usize].push(link.mbox),
            None => w.pool.push(link.mbox),
        }
    }
}

/// An operation matched in the shared state whose SimGrid side `Rank::complete_with` issues
/// blocking: a receive, or a rendezvous send of `send_wire` bytes.
struct Blocking {
    link: Rc<Link2>,
    pending: Pending,
    send_wire: Option<u64>,
}

/// An outstanding point-to-point operation of one rank.
pub(crate) struct Req {
    /// None once locally complete (eager sends).
    comm: Option<Comm>,
    link: Rc<Link2>,
    pending: Pending,
}

/// What both replays read of a job's options and platform.
pub(crate) struct Opts {
    pub eager_threshold: u64,
    pub reduce_flops_per_byte: f64,
    /// `ReplayOptions::copy_ns_per_byte`.
    pub copy_ns_per_byte: Vec<[f64; 2]>,
    /// SimGrid's timing precision (`precision/timing`, 1e-9 s unless `--cfg` sets it): the
    /// shortest compute done by sleeping.
    pub min_sleep_s: f64,
    pub block_seconds: HashMap<u32, f64>,
    pub timeline: bool,
    /// The marked iterations of `ReplayOptions::marks` (empty: none).
    pub mark_at: Vec<u64>,
    /// The marked iterations of its inner loop, in each run (empty: none).
    pub inner_at: Vec<u64>,
    /// The platform's per-message overheads (`platform::message_overheads`): the sender's
    /// before each send, the receiver's after each receive.
    pub os: crate::platform::smpi::FactorList,
    pub or: crate::platform::smpi::FactorList,
    /// The platform's communicator constructors' own work (`platform::ctor_costs`), charged
    /// as compute at each `ctor` action.
    pub ctor: crate::platform::CtorCosts,
}

impl Opts {
    /// A job's options, with the overheads of its platform (`text`, the platform file's).
    pub(crate) fn new(job: &ReplayJob, text: &str) -> Result<Opts> {
        let (os, or) = crate::platform::message_overheads(text).map_err(|e| anyhow::anyhow!("{}:{e}", job.platform.display()))?;
        let ctor = crate::platform::ctor_costs(text).map_err(|e| anyhow::anyhow!("{}:{e}", job.platform.display()))?;
        Ok(Opts {
            eager_threshold: job.options.eager_threshold_bytes,
            reduce_flops_per_byte: job.options.reduce_flops_per_byte,
            copy_ns_per_byte: job.options.copy_ns_per_byte.clone(),
            min_sleep_s: job
                .cfg
                .iter()
                .rev()
                .find_map(|c| c.strip_prefix("precision/timing:").or_else(|| c.strip_prefix("surf/precision:")))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(1e-9),
            block_seconds: job.options.block_seconds.iter().copied().collect(),
            timeline: job.options.timeline,
            mark_at: job.options.marks.as_ref().map(|m| m.at.clone()).unwrap_or_default(),
            inner_at: job.options.marks.as_ref().and_then(|m| m.inner.as_ref()).map(|i| i.at.clone()).unwrap_or_default(),
            os,
            or,
            ctor,
        })
    }
}

/// Rank `r`'s trace, its loops marked as the job asks, its header checked.
pub(crate) fn open_rank(job: &ReplayJob, dir: &TraceDir, r: u32) -> Result<TraceReader> {
    let n = job.ranks;
    let mut reader = dir.reader(r)?;
    if let Some(m) = &job.options.marks {
        reader.mark_loop(m.loop_index);
        if let Some(i) = &m.inner {
            reader.mark_inner(i.loop_index);
        }
    }
    if reader.header.rank != r || reader.header.size != n {
        bail!(
            "{}:1: header says rank {} size {}, expected rank {r} size {n}",
            reader.file(),
            reader.header.rank,
            reader.header.size
        );
    }
    Ok(reader)
}

/// A communicator as seen by one rank: its members (world ranks) and this rank's index.
#[derive(Clone)]
struct CommView {
    id: u32,
    /// None: the world (member i is world rank i).
    members: Option<Rc<Vec<u32>>>,
    me: u32,
    size: u32,
}

impl CommView {
    fn world_rank(&self, r: u32) -> u32 {
        match &self.members {
            None => r,
            Some(m) => m[r as usize],
        }
    }
}

/// One rank's replay state.
struct Rank {
    me: u32,
    world: Rc<RefCell<World>>,
    opts: Rc<Opts>,
    speed: f64,
    /// Alone on a core of a host of constant speed: computes by sleeping (`run_replay`).
    sleeps: bool,
    reqs: HashMap<u64, Req>,
    tested_done: HashSet<u64>,
    /// Eager sends in flight: the sender holds the SimGrid handle until the receiver is done.
    eager: Vec<(Rc<Link2>, Comm)>,
    comms: HashMap<u32, CommView>,
    world_size: u32,
    compute_s: f64,
    comm_s: f64,
    wait_s: f64,
    messages_sent: u64,
    bytes_sent: u64,
    /// The send being posted is an MPI_Bsend: buffered whatever its size.
    force_buffered: bool,
    /// Figures at the loop marks passed so far.
    marks: Vec<RankMark>,
    /// Figures at the inner loop's marks passed so far, run after run.
    inner_marks: Vec<RankMark>,
    /// Flops of computes too short to simulate on their own, not done yet (`MIN_COMPUTE_S`).
    carried_flops: f64,
}

/// Computes shorter than this (seconds) are not simulated on their own: their flops are carried
/// into the rank's next compute. Skeletons and traces hold a compute between every two MPI
/// calls, and between the sends and receives of a halo those are a few statements, 0.3 to 2 ns;
/// each was an execution (two simcalls and a scheduling round) costing as much wall time as a
/// message. Carried, a rank's events come at most this much early, its compute time is kept
/// whole, and jacobi2d's exchange of 64 B messages (about 1 us each) moves by a fraction of a
/// percent.
pub const MIN_COMPUTE_S: f64 = 1e-8;

/// Why an actor stopped early (the message goes to the shared error list).
struct Stop(String);

impl Rank {
    // ---- point to point ---------------------------------------------------------------------

    /// Posts a send of `bytes` to world rank `to`.
    pub(crate) fn post_send(&mut self, to: u32, bytes: u64, tag: i32, ctx: Ctx) -> Req {
        self.post_send_or_defer(to, bytes, tag, ctx, false).0
    }

    /// `post_send`; with `defer`, a rendezvous send is matched but not issued: its wire size
    /// comes back for the caller to send blocking (`complete_with`).
    fn post_send_or_defer(&mut self, to: u32, bytes: u64, tag: i32, ctx: Ctx, defer: bool) -> (Req, Option<u64>) {
        self.overhead(self.opts.os.eval(bytes, 0.0));
        let me = self.me;
        self.messages_sent += 1;
        self.bytes_sent += bytes;
        // Messages to a rank that receives from this one asynchronously are buffered whatever
        // their size: its runtime polls for them (P2PDC's drain), which completes the send.
        let buffered = self.force_buffered
            || bytes < self.opts.eager_threshold
            || self.world.borrow().async_pairs.contains(&(to, self.me));
        spare_mailbox(&self.world);
        if buffered {
            spare_eager_mailbox(&self.world, to);
        }
        let link = {
            let mut w = self.world.borrow_mut();
            w.messages += 1;
            w.bytes += bytes as f64;
            let q = &mut w.queues[to as usize].posted;
            let hit = q.iter().position(|p| {
                p.ctx == ctx && p.src.is_none_or(|s| s == me) && p.tag.is_none_or(|t| t == tag)
            });
            match hit {
                Some(i) => {
                    let p = q.remove(i).expect("index from position");
                    p.link.matched_at.set(engine::now());
                    p.link.bytes.set(bytes);
                    p.link
                }
                None => {
                    // An eager message before its receive: on the wire at once, as MPI's eager
                    // protocol sends it (the receiver's mailbox takes it; a rank that finished
                    // has none).
                    let (mbox, eager_for) = match buffered.then(|| w.eager_pools[to as usize].pop()).flatten() {
                        Some(m) => (m, Some(to)),
                        None => (w.mailbox(), None),
                    };
                    let link = Rc::new(Link2 {
                        mbox,
                        matched_at: Cell::new(f64::NAN),
                        issued: Cell::new(0),
                        received: Cell::new(false),
                        bytes: Cell::new(bytes),
                        eager_for,
                    });
                    w.queues[to as usize].unexpected.push(Envelope {
                        src: me,
                        tag,
                        ctx,
                        bytes,
                        link: Rc::clone(&link),
                    });
                    link
                }
            }
        };
        // Eager sends are not detached: SimGrid 3.32 removes each finished detached comm from a
        // global list by a linear scan (O(ranks) per message at scale). The sender keeps the
        // handle instead and drops it once the receiver has the message.
        // A 0-byte MPI message still carries its envelope; SimGrid's SMPI model gives a 0-byte
        // transfer no latency factor, so it would take half what SMPI itself simulates.
        let wire = bytes.max(1);
        let deferred = !buffered && defer;
        let comm = if buffered {
            let c = link.mbox.put_bare_async(wire);
            self.eager.push((Rc::clone(&link), c));
            if self.eager.len() >= 8 {
                self.sweep_eager();
            }
            None
        } else if deferred {
            None
        } else {
            Some(link.mbox.put_bare_async(wire))
        };
        if !deferred {
            issued(&self.world, &link);
        }
        self.count_link_bytes(to, bytes);
        let req = Req {
            comm,
            link,
            pending: Pending {
                recv: false,
                peer: Some(to),
                tag: Some(tag),
                ctx,
                bytes,
            },
        };
        (req, deferred.then_some(wire))
    }

    /// Releases the handles of eager sends whose receiver has the message.
    fn sweep_eager(&mut self) {
        let mut i = 0;
        while i < self.eager.len() {
            if self.eager[i].0.received.get() {
                // Waiting (the transfer is over: no blocking) rather than only dropping the
                // handle: SimGrid forgets the comm from the actor's activity list on wait.
                let (_, mut c) = self.eager.swap_remove(i);
                c.wait();
            } else {
                i += 1;
            }
        }
    }

    fn count_link_bytes(&self, to: u32, bytes: u64) {
        let mut w = self.world.borrow_mut();
        if !w.count_links {
            return;
        }
        let key = (w.rank_host[self.me as usize], w.rank_host[to as usize]);
        if !w.routes.contains_key(&key) {
            // Route lookups are plain calls (no simcall): safe under the borrow.
            let route: Vec<usize> = key
                .0
                .route_links(key.1)
                .iter()
                .filter_map(|l| w.link_index.get(l).copied())
                .collect();
            w.routes.insert(key, route);
        }
        let span = self.marks.len().checked_sub(1);
        // Between the last two marks of a run of the inner loop: that run's place.
        let per = self.opts.inner_at.len();
        let inner_run = (per >= 2 && self.inner_marks.len() % per == per - 1).then(|| self.inner_marks.len() / per);
        let World {
            routes,
            link_bytes,
            link_marked,
            link_inner_marked,
            links,
            ..
        } = &mut *w;
        let marked = span.and_then(|s| link_marked.get_mut(s));
        let route = &routes[&key];
        for &i in route {
            link_bytes[i] += bytes as f64;
        }
        if let Some(m) = marked {
            for &i in route {
                m[i] += bytes as f64;
            }
        }
        if let Some(run) = inner_run {
            if link_inner_marked.len() <= run {
                link_inner_marked.resize(run + 1, vec![0.0; links.len()]);
            }
            for &i in route {
                link_inner_marked[run][i] += bytes as f64;
            }
        }
    }

    /// Records the figures of every marked iteration the reader has passed.
    fn take_marks(&mut self, passed: u64) {
        while let Some(&m) = self.opts.mark_at.get(self.marks.len()) {
            if passed <= m {
                break;
            }
            let mark = self.mark();
            self.marks.push(mark);
        }
    }

    /// Records the figures of every marked iteration of the inner loop the reader has passed:
    /// `runs` runs of it started, `passed` marks passed in the last.
    fn take_inner_marks(&mut self, (runs, passed): (u64, u64)) {
        let per = self.opts.inner_at.len();
        loop {
            let (run, j) = (self.inner_marks.len() / per, self.inner_marks.len() % per);
            if run as u64 >= runs || (run as u64 + 1 == runs && passed <= self.opts.inner_at[j]) {
                break;
            }
            let mark = self.mark();
            self.inner_marks.push(mark);
        }
    }

    /// The rank's figures now.
    fn mark(&self) -> RankMark {
        RankMark {
            at_s: engine::now(),
            compute_s: self.compute_s,
            comm_s: self.comm_s,
            wait_s: self.wait_s,
            messages_sent: self.messages_sent,
            bytes_sent: self.bytes_sent,
            flops: self.world.borrow().rank_flops[self.me as usize],
        }
    }

    /// Posts a receive from world rank `from` (None: any source).
    pub(crate) fn post_recv(&mut self, from: Option<u32>, tag: Option<i32>, ctx: Ctx) -> Req {
        let (link, bytes) = self.match_recv(from, tag, ctx);
        let comm = link.mbox.get_bare_async();
        issued(&self.world, &link);
        Req {
            comm: Some(comm),
            link,
            pending: Pending {
                recv: true,
                peer: from,
                tag,
                ctx,
                bytes,
            },
        }
    }

    /// A receive matched in the shared state (the earliest unexpected message that fits, else
    /// a posted receive): the mailbox both sides use and the message's size (0 when posted).
    /// Its SimGrid operation is the caller's to issue.
    fn match_recv(&mut self, from: Option<u32>, tag: Option<i32>, ctx: Ctx) -> (Rc<Link2>, u64) {
        let me = self.me as usize;
        spare_mailbox(&self.world);
        let (link, bytes) = {
            let mut w = self.world.borrow_mut();
            let hit = w.queues[me].unexpected.take(from, tag, ctx);
            match hit {
                Some(e) => {
                    e.link.matched_at.set(engine::now());
                    (e.link, e.bytes)
                }
                None => {
                    let mbox = w.mailbox();
                    let link = Rc::new(Link2 {
                        mbox,
                        matched_at: Cell::new(f64::NAN),
                        issued: Cell::new(0),
                        received: Cell::new(false),
                        bytes: Cell::new(0),
                        eager_for: None,
                    });
                    w.queues[me].posted.push_back(Posted {
                        src: from,
                        tag,
                        ctx,
                        link: Rc::clone(&link),
                    });
                    (link, 0)
                }
            }
        };
        (link, bytes)
    }

    /// Blocks until every request completes; splits the time into waiting (before the last
    /// partner arrived) and communication.
    pub(crate) fn complete(&mut self, reqs: &mut [Req]) {
        self.complete_with(reqs, None);
    }

    /// `complete`, with an operation matched but not issued yet (a receive from `match_recv`,
    /// a rendezvous send from `post_send_or_defer`) done first, blocking: one simcall for the
    /// operation and its wait.
    fn complete_with(&mut self, reqs: &mut [Req], blocking: Option<Blocking>) {
        if blocking.is_none()
            && reqs
                .iter()
                .all(|r| r.comm.as_ref().is_none_or(|c| c.is_done()))
        {
            for r in reqs.iter().filter(|r| r.pending.recv) {
                r.link.received.set(true);
            }
            self.receive_overheads(reqs.iter().filter(|r| r.pending.recv).map(|r| &*r.link));
            return;
        }
        {
            let mut w = self.world.borrow_mut();
            let st = &mut w.status[self.me as usize];
            st.blocked.clear();
            st.blocked.extend(blocking.iter().map(|b| b.pending.clone()));
            st.blocked.extend(
                reqs.iter()
                    .filter(|r| r.comm.is_some())
                    .map(|r| r.pending.clone()),
            );
        }
        let t0 = engine::now();
        if let Some(b) = &blocking {
            match b.send_wire {
                Some(wire) => b.link.mbox.put_bare(wire),
                None => b.link.mbox.get_bare(),
            }
            issued(&self.world, &b.link);
            if b.pending.recv {
                b.link.received.set(true);
            }
        }
        for r in reqs.iter_mut() {
            if let Some(c) = r.comm.as_mut() {
                c.wait();
            }
        }
        let t1 = engine::now();
        for r in reqs.iter().filter(|r| r.pending.recv) {
            r.link.received.set(true);
        }
        let matched = reqs
            .iter()
            .map(|r| r.link.matched_at.get())
            .chain(blocking.iter().map(|b| b.link.matched_at.get()))
            .filter(|m| !m.is_nan())
            .fold(t0, f64::max);
        let wait = (matched.min(t1) - t0).max(0.0);
        self.wait_s += wait;
        self.comm_s += (t1 - t0) - wait;
        self.world.borrow_mut().status[self.me as usize]
            .blocked
            .clear();
        let received = reqs.iter().filter(|r| r.pending.recv).map(|r| &*r.link);
        let blocking_recv = blocking.iter().filter(|b| b.pending.recv).map(|b| &*b.link);
        self.receive_overheads(received.chain(blocking_recv));
    }

    /// The receiver's per-message overhead (the platform's smpi/or) for each message received.
    fn receive_overheads<'l>(&mut self, links: impl Iterator<Item = &'l Link2>) {
        if self.opts.or.entries.is_empty() {
            return;
        }
        let s: f64 = links.map(|l| self.opts.or.eval(l.bytes.get(), 0.0)).sum();
        self.overhead(s);
    }

    /// MPI's own time around a message (the platform's smpi/os before a send, smpi/or after a
    /// receive, as SMPI applies them): a sleep, counted as communication.
    fn overhead(&mut self, s: f64) {
        if s >= self.opts.min_sleep_s {
            let t0 = engine::now();
            engine::sleep(s);
            self.comm_s += engine::now() - t0;
        }
    }

    fn send(&mut self, to: u32, bytes: u64, tag: i32, ctx: Ctx) {
        let (req, deferred) = self.post_send_or_defer(to, bytes, tag, ctx, true);
        match deferred {
            Some(wire) => {
                let Req { link, pending, .. } = req;
                self.complete_with(&mut [], Some(Blocking { link, pending, send_wire: Some(wire) }));
            }
            None => self.complete(&mut [req]),
        }
    }

    fn recv(&mut self, from: Option<u32>, tag: Option<i32>, ctx: Ctx) {
        let (link, bytes) = self.match_recv(from, tag, ctx);
        let pending = Pending { recv: true, peer: from, tag, ctx, bytes };
        self.complete_with(&mut [], Some(Blocking { link, pending, send_wire: None }));
    }

    /// An asynchronous receive: every message from `from` already sent is received (waiting for
    /// its transfer); a message not sent yet is not waited for.
    pub(crate) fn arecv(&mut self, from: u32, tag: Option<i32>, ctx: Ctx) {
        let me = self.me as usize;
        {
            let mut w = self.world.borrow_mut();
            w.async_rx[me] = true;
            w.async_pairs.insert((self.me, from));
        }
        let mut reqs = Vec::new();
        loop {
            let hit = self.world.borrow_mut().queues[me].unexpected.take(Some(from), tag, ctx);
            let Some(e) = hit else { break };
            e.link.matched_at.set(engine::now());
            let comm = e.link.mbox.get_bare_async();
            issued(&self.world, &e.link);
            reqs.push(Req {
                comm: Some(comm),
                link: e.link,
                pending: Pending { recv: true, peer: Some(from), tag, ctx, bytes: e.bytes },
            });
        }
        if !reqs.is_empty() {
            self.complete(&mut reqs);
        }
    }

    /// The receive is matched first, as a receive posted before the send; it is issued
    /// after the send, blocking (the same instant of simulated time).
    fn sendrecv(&mut self, to: u32, bytes: u64, from: u32, tag: i32, ctx: Ctx) {
        let (link, got) = self.match_recv(Some(from), Some(tag), ctx);
        let sr = self.post_send(to, bytes, tag, ctx);
        let pending = Pending { recv: true, peer: Some(from), tag: Some(tag), ctx, bytes: got };
        self.complete_with(&mut [sr], Some(Blocking { link, pending, send_wire: None }));
    }

    /// Reduction arithmetic on `bytes`, charged as compute.
    fn reduce_compute(&mut self, bytes: u64) {
        self.flops(bytes as f64 * self.opts.reduce_flops_per_byte);
    }

    fn flops(&mut self, flops: f64) {
        if flops > 0.0 {
            // A compute shorter than MIN_COMPUTE_S is carried into the rank's next one: see there.
            let flops = flops + std::mem::take(&mut self.carried_flops);
            if flops / self.speed < MIN_COMPUTE_S {
                self.carried_flops = flops;
                return;
            }
            self.execute(flops);
        }
    }

    /// Computes what the rank carries (at its end).
    fn flush_carried(&mut self) {
        let f = std::mem::take(&mut self.carried_flops);
        if f > 0.0 {
            self.execute(f);
        }
    }

    fn execute(&mut self, flops: f64) {
        let t0 = engine::now();
        let d = flops / self.speed;
        // SimGrid lengthens a sleep shorter than its timing precision to that precision.
        if self.sleeps && d >= self.opts.min_sleep_s {
            engine::sleep(d);
        } else {
            engine::execute(flops);
        }
        self.compute_s += engine::now() - t0;
        self.world.borrow_mut().rank_flops[self.me as usize] += flops;
    }

    // ---- actions ------------------------------------------------------------------------------

    fn comm(&self, id: u32) -> Result<CommView, Stop> {
        if id == COMM_WORLD {
            return Ok(CommView {
                id,
                members: None,
                me: self.me,
                size: self.world_size,
            });
        }
        self.comms
            .get(&id)
            .cloned()
            .ok_or_else(|| Stop(format!("communicator {id} used before its `comm` line")))
    }

    fn peer(c: &CommView, p: Peer) -> Result<Option<u32>, Stop> {
        match p {
            Peer::Any => Ok(None),
            Peer::Rank(r) if r < c.size => Ok(Some(c.world_rank(r))),
            Peer::Rank(r) => Err(Stop(format!(
                "rank {r} is not in communicator {} of size {}",
                c.id, c.size
            ))),
        }
    }

    fn dest(c: &CommView, r: u32) -> Result<u32, Stop> {
        Self::peer(c, Peer::Rank(r)).map(|p| p.expect("a rank"))
    }

    fn tag(t: Tag) -> Option<i32> {
        match t {
            Tag::Value(v) => Some(v),
            Tag::Any => None,
        }
    }

    fn add_req(&mut self, id: u64, r: Req) -> Result<(), Stop> {
        if self.reqs.contains_key(&id) {
            return Err(Stop(format!("request {id} is still outstanding")));
        }
        self.tested_done.remove(&id);
        self.reqs.insert(id, r);
        Ok(())
    }

    fn take_req(&mut self, id: u64) -> Result<Option<Req>, Stop> {
        match self.reqs.remove(&id) {
            Some(r) => Ok(Some(r)),
            None if self.tested_done.remove(&id) => Ok(None),
            None => Err(Stop(format!("no outstanding request {id}"))),
        }
    }

    fn play(&mut self, a: &TraceAction) -> Result<(), Stop> {
        use TraceAction as A;
        match a {
            A::Compute { compute } => {
                let flops = match compute {
                    Compute::Seconds(s) => s * self.speed,
                    Compute::Flops(f) => *f,
                    Compute::Blocks(blocks) => {
                        let mut s = 0.0;
                        for (id, n) in blocks {
                            let per = self.opts.block_seconds.get(id).ok_or_else(|| {
                                Stop(format!(
                                    "compute blocks: no time for block {id} (estimate the trace into seconds first, \
                                     or give a block table)"
                                ))
                            })?;
                            s += per * *n as f64;
                        }
                        s * self.speed
                    }
                    Compute::TimedBlocks { seconds, .. } if self.opts.block_seconds.is_empty() => seconds * self.speed,
                    Compute::TimedBlocks { blocks, .. } => {
                        let mut s = 0.0;
                        for (id, n) in blocks {
                            let per = self.opts.block_seconds.get(id).ok_or_else(|| {
                                Stop(format!("compute blocks: no time for block {id} in the block table"))
                            })?;
                            s += per * *n as f64;
                        }
                        s * self.speed
                    }
                };
                self.flops(flops);
            }
            A::CommDef { id, ranks } => {
                let me = ranks.position(self.me).ok_or_else(|| Stop(format!("comm {id}: rank {} is not a member", self.me)))?;
                if ranks.max().is_some_and(|r| r >= self.world_size) {
                    return Err(Stop(format!(
                        "comm {id}: members must be below {}",
                        self.world_size
                    )));
                }
                let size = ranks.len() as u32;
                // A communicator of every rank in order (a Cartesian one without reordering)
                // maps ranks like the world: no member list per rank (65,536 ranks would hold
                // 16 GiB of them).
                let identity = ranks.is_world(self.world_size);
                self.comms.insert(
                    *id,
                    CommView {
                        id: *id,
                        members: if identity { None } else { Some(Rc::new(ranks.to_vec())) },
                        me: me as u32,
                        size,
                    },
                );
            }
            A::Send {
                to,
                bytes,
                tag,
                comm,
                buffered,
            } => {
                let c = self.comm(*comm)?;
                let to = Self::dest(&c, *to)?;
                self.force_buffered = *buffered;
                self.send(to, *bytes, *tag, p2p_ctx(*comm));
                self.force_buffered = false;
            }
            A::Recv {
                from, tag, comm, ..
            } => {
                let c = self.comm(*comm)?;
                let from = Self::peer(&c, *from)?;
                self.recv(from, Self::tag(*tag), p2p_ctx(*comm));
            }
            A::Arecv { from, tag, comm, .. } => {
                let c = self.comm(*comm)?;
                let from = Self::peer(&c, Peer::Rank(*from))?;
                if let Some(from) = from {
                    self.arecv(from, Self::tag(*tag), p2p_ctx(*comm));
                }
            }
            A::Isend {
                req,
                to,
                bytes,
                tag,
                comm,
            } => {
                let c = self.comm(*comm)?;
                let to = Self::dest(&c, *to)?;
                if self.reqs.get(req).is_some_and(|r| !r.pending.recv) {
                    // The traced run had this send's request done (its id is free again); here
                    // the previous send is still in flight: it is waited for, as the traced run
                    // found it done.
                    let old = self.reqs.remove(req).expect("checked above");
                    self.world.borrow_mut().superseded_sends += 1;
                    self.complete(&mut [old]);
                }
                let r = self.post_send(to, *bytes, *tag, p2p_ctx(*comm));
                self.add_req(*req, r)?;
            }
            A::Irecv {
                req,
                from,
                tag,
                comm,
                ..
            } => {
                let c = self.comm(*comm)?;
                let from = Self::peer(&c, *from)?;
                let r = self.post_recv(from, Self::tag(*tag), p2p_ctx(*comm));
                self.add_req(*req, r)?;
            }
            A::Wait { req } => {
                if let Some(r) = self.take_req(*req)? {
                    self.complete(&mut [r]);
                }
            }
            A::Waitall { reqs } => {
                let mut rs = Vec::new();
                if reqs.is_empty() {
                    let mut ids: Vec<u64> = self.reqs.keys().copied().collect();
                    ids.sort_unstable();
                    for id in ids {
                        rs.extend(self.take_req(id)?);
                    }
                } else {
                    for id in reqs {
                        rs.extend(self.take_req(*id)?);
                    }
                }
                self.complete(&mut rs);
            }
            A::Test { req } => {
                // The traced run found the request done here and went on with its data (it
                // may post a new request under the same id): where the simulated transfer is
                // not over yet, the rank waits for it.
                match self.reqs.remove(req) {
                    Some(r) => {
                        self.complete(&mut [r]);
                        self.tested_done.insert(*req);
                    }
                    None if self.tested_done.contains(req) => {}
                    None => return Err(Stop(format!("no outstanding request {req}"))),
                }
            }
            A::Cancel { req } => {
                let Some(r) = self.take_req(*req)? else { return Ok(()) };
                // A receive no send has matched yet is withdrawn (its private mailbox is never
                // recycled, so nothing is ever put there); anything else completes as MPI's
                // wait after a failed cancel would.
                let withdrawn = r.pending.recv && {
                    let mut w = self.world.borrow_mut();
                    let q = &mut w.queues[self.me as usize].posted;
                    match q.iter().position(|p| Rc::ptr_eq(&p.link, &r.link)) {
                        Some(i) => q.remove(i).is_some(),
                        None => false,
                    }
                };
                if !withdrawn {
                    self.complete(&mut [r]);
                }
            }
            A::Sendrecv {
                to,
                send_bytes,
                send_tag,
                from,
                recv_tag,
                comm,
                ..
            } => {
                let c = self.comm(*comm)?;
                let to = Self::dest(&c, *to)?;
                let from = Self::peer(&c, *from)?;
                let rr = self.post_recv(from, Self::tag(*recv_tag), p2p_ctx(*comm));
                let sr = self.post_send(to, *send_bytes, *send_tag, p2p_ctx(*comm));
                self.complete(&mut [rr, sr]);
            }
            A::Ctor { kind, members } => {
                let s = self.opts.ctor.seconds(*kind, *members);
                self.flops(s * self.speed);
            }
            other => {
                let c = self.comm(coll::comm_of(other).expect("point-to-point actions are handled above"))?;
                let mut traffic = CollTraffic {
                    rank: self,
                    comm: &c,
                };
                coll::run(&mut traffic, other).map_err(Stop)?;
            }
        }
        Ok(())
    }

    fn finish(&mut self, host: &str) {
        self.flush_carried();
        // Requests never waited for: complete them (MPI_Finalize would) and say so.
        if !self.reqs.is_empty() {
            let mut ids: Vec<u64> = self.reqs.keys().copied().collect();
            ids.sort_unstable();
            self.world.borrow_mut().warnings.push(format!(
                "rank {}: {} request(s) never waited for (first: {}), completed at the end",
                self.me,
                ids.len(),
                ids[0]
            ));
            let mut rs: Vec<Req> = ids.iter().filter_map(|id| self.reqs.remove(id)).collect();
            self.complete(&mut rs);
        }
        {
            let mut w = self.world.borrow_mut();
            w.status[self.me as usize].finished = true;
            w.stats[self.me as usize] = Some(RankStats {
                rank: self.me,
                host: host.to_string(),
                finish_s: engine::now(),
                compute_s: self.compute_s,
                comm_s: self.comm_s,
                wait_s: self.wait_s,
                messages_sent: self.messages_sent,
                bytes_sent: self.bytes_sent,
                marks: std::mem::take(&mut self.marks),
                inner_marks: std::mem::take(&mut self.inner_marks),
            });
        }
        // The rank is done (its eager sends are, for MPI), but SimGrid cancels an exiting actor's
        // communications: the actor stays until its eager messages are received. One that never
        // is only shows in the warnings (the simulation ends with this actor blocked here).
        for (_, mut c) in self.eager.drain(..) {
            c.wait();
        }
    }
}

/// One rank's collective traffic on one communicator, the point-to-point operations `coll`
/// builds collectives from: communicator ranks mapped to world ranks, on the communicator's
/// collective context.
struct CollTraffic<'a> {
    rank: &'a mut Rank,
    comm: &'a CommView,
}

impl PointToPoint for CollTraffic<'_> {
    fn size(&self) -> u32 {
        self.comm.size
    }
    fn rank(&self) -> u32 {
        self.comm.me
    }
    fn send(&mut self, to: u32, bytes: u64, tag: i32) {
        let w = self.comm.world_rank(to);
        self.rank.send(w, bytes, tag, coll_ctx(self.comm.id));
    }
    fn recv(&mut self, from: u32, tag: i32) {
        let w = self.comm.world_rank(from);
        self.rank.recv(Some(w), Some(tag), coll_ctx(self.comm.id));
    }
    fn sendrecv(&mut self, to: u32, bytes: u64, from: u32, tag: i32) {
        let (wt, wf) = (self.comm.world_rank(to), self.comm.world_rank(from));
        self.rank
            .sendrecv(wt, bytes, wf, tag, coll_ctx(self.comm.id));
    }
    fn reduce(&mut self, bytes: u64) {
        self.rank.reduce_compute(bytes);
    }
    fn copy(&mut self, bytes: u64) {
        let s = crate::model::trace::copy_seconds(&self.rank.opts.copy_ns_per_byte, bytes);
        self.rank.flops(s * self.rank.speed);
    }
}

/// The name of an action's first word, for reports.
pub(crate) fn action_name(a: &TraceAction) -> &'static str {
    use TraceAction as A;
    match a {
        A::Compute { .. } => "compute",
        A::CommDef { .. } => "comm",
        A::Send { .. } => "send",
        A::Recv { .. } => "recv",
        A::Arecv { .. } => "arecv",
        A::Isend { .. } => "isend",
        A::Irecv { .. } => "irecv",
        A::Wait { .. } => "wait",
        A::Waitall { .. } => "waitall",
        A::Test { .. } => "test",
        A::Cancel { .. } => "cancel",
        A::Sendrecv { .. } => "sendrecv",
        A::Barrier { .. } => "barrier",
        A::Bcast { .. } => "bcast",
        A::Reduce { .. } => "reduce",
        A::Allreduce { .. } => "allreduce",
        A::Gather { .. } => "gather",
        A::Gatherv { .. } => "gatherv",
        A::Scatter { .. } => "scatter",
        A::Scatterv { .. } => "scatterv",
        A::Allgather { .. } => "allgather",
        A::Allgatherv { .. } => "allgatherv",
        A::Alltoall { .. } => "alltoall",
        A::Alltoallv { .. } => "alltoallv",
        A::ReduceScatter { .. } => "reduce_scatter",
        A::Scan { .. } => "scan",
        A::Ctor { .. } => "ctor",
    }
}

fn rank_body(mut rank: Box<Rank>, mut reader: TraceReader, host: String) {
    let me = rank.me as usize;
    let world = Rc::clone(&rank.world);
    let timeline = rank.opts.timeline;
    loop {
        let next = reader.next_action();
        if !rank.opts.mark_at.is_empty() {
            rank.take_marks(reader.marks_passed());
            if !rank.opts.inner_at.is_empty() {
                rank.take_inner_marks(reader.inner_marks_passed());
            }
        }
        let (a, line) = match next {
            Ok(Some(x)) => x,
            Ok(None) => break,
            Err(e) => {
                world.borrow_mut().errors.push(e.to_string());
                return;
            }
        };
        {
            let mut w = world.borrow_mut();
            let st = &mut w.status[me];
            st.action = action_name(&a);
            st.line = line;
        }
        let t0 = engine::now();
        if let Err(Stop(msg)) = rank.play(&a) {
            world
                .borrow_mut()
                .errors
                .push(format!("{}:{line}: {msg}", reader.file()));
            return;
        }
        if timeline {
            let t1 = engine::now();
            if t1 > t0 {
                world.borrow_mut().timeline.push(TimelineEvent {
                    rank: rank.me,
                    kind: action_name(&a).to_string(),
                    start_s: t0,
                    end_s: t1,
                });
            }
        }
    }
    rank.finish(&host);
}

/// Hosts in natural name order (node-2 before node-10).
fn natural_key(s: &str) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut digits = String::new();
    for ch in s.chars() {
        if ch.is_ascii_digit() {
            digits.push(ch);
        } else {
            if !digits.is_empty() {
                out.push((
                    std::mem::take(&mut text),
                    digits.parse().unwrap_or(u64::MAX),
                ));
                digits.clear();
            }
            text.push(ch);
        }
    }
    out.push((
        text,
        if digits.is_empty() {
            0
        } else {
            digits.parse().unwrap_or(u64::MAX)
        },
    ));
    out
}

pub(crate) fn map_ranks(eng: &Engine, mapping: &Mapping, ranks: u32) -> Result<Vec<Host>> {
    let mut hosts: Vec<(Vec<(String, u64)>, Host)> = eng
        .hosts()
        .into_iter()
        .map(|h| (natural_key(&h.name()), h))
        .collect();
    hosts.sort_by(|a, b| a.0.cmp(&b.0));
    let hosts: Vec<Host> = hosts.into_iter().map(|(_, h)| h).collect();
    if hosts.is_empty() {
        bail!("the platform has no hosts");
    }
    let n = ranks as usize;
    Ok(match mapping {
        Mapping::RoundRobin => (0..n).map(|r| hosts[r % hosts.len()]).collect(),
        Mapping::Block => {
            let per = n.div_ceil(hosts.len());
            (0..n).map(|r| hosts[r / per]).collect()
        }
        Mapping::Hosts { hosts: names } => {
            if names.len() != n {
                bail!("the mapping names {} hosts for {} ranks", names.len(), n);
            }
            names
                .iter()
                .enumerate()
                .map(|(r, name)| eng.host(name).with_context(|| format!("mapping, rank {r}")))
                .collect::<Result<_>>()?
        }
    })
}

fn describe_ctx(ctx: Ctx) -> String {
    let comm = ctx / 2;
    if ctx % 2 == 1 {
        format!("collective traffic, comm {comm}")
    } else {
        format!("comm {comm}")
    }
}

fn describe(p: &Pending) -> String {
    let peer = p
        .peer
        .map_or("any rank".to_string(), |r| format!("rank {r}"));
    let tag = p.tag.map_or("any tag".to_string(), |t| format!("tag {t}"));
    if p.recv {
        format!("a message from {peer} ({tag}, {})", describe_ctx(p.ctx))
    } else {
        format!(
            "{peer} to receive {} B ({tag}, {})",
            p.bytes,
            describe_ctx(p.ctx)
        )
    }
}

/// Above this many ranks a replay runs its actors on small stacks without guard pages.
pub const LARGE_REPLAY: u32 = 16384;
/// SimGrid callocs each stack; glibc clears what calloc returns unless the heap just grew for
/// it, which the child's MALLOC_TOP_PAD_=0 makes the common case (`sim::child`): without it every
/// page of every stack was resident (65,536 ranks of the halo benchmark: 5.5 GB; with it 2.1 GB,
/// at 32 KiB as at 64). 16 KiB replayed the halo benchmark, pi_dartboard and jacobi2d (sendrecv,
/// allreduce, reduce, barrier) at 20,000 ranks; an overflow is a silent SIGSEGV of the child.
const LARGE_REPLAY_STACK_KIB: usize = 64;

/// Runs a replay job in this process (once per process).
pub fn run_replay(job: &ReplayJob) -> Result<ReplayResult> {
    let started = Instant::now();
    let n = job.ranks;
    if n == 0 {
        bail!("no ranks to replay");
    }
    let mut cfg = vec![DEFAULT_NETWORK_MODEL.to_string()];
    if n > LARGE_REPLAY {
        // Linux allows 65,530 memory maps per process by default, and SimGrid maps each actor's
        // stack separately (two maps with its guard page). Without guard pages the stacks come
        // from malloc, which the child's MALLOC_MMAP_THRESHOLD_ keeps on the heap, and they are
        // smaller: a large replay needs neither many maps nor gigabytes of stacks.
        cfg.push("contexts/guard-size:0".to_string());
        crate::sim::engine::set_actor_stack_kib(LARGE_REPLAY_STACK_KIB);
    }
    cfg.extend(job.cfg.iter().cloned());
    let eng = Engine::init(&EngineOptions {
        cfg,
        host_load: false,
        link_load: false,
        verbose: false,
    })?;
    eng.load_platform(&job.platform)?;
    let placement = map_ranks(&eng, &job.mapping, n)?;
    let links = if job.options.link_usage {
        eng.links()
    } else {
        Vec::new()
    };

    let world = Rc::new(RefCell::new(World {
        queues: (0..n).map(|_| Queues::default()).collect(),
        pool: Vec::new(),
        eager_pools: vec![Vec::new(); n as usize],
        actors: Vec::with_capacity(n as usize),
        next_mbox: 0,
        status: (0..n).map(|_| RankStatus::default()).collect(),
        stats: vec![None; n as usize],
        errors: Vec::new(),
        warnings: Vec::new(),
        messages: 0,
        bytes: 0.0,
        timeline: Vec::new(),
        link_index: links.iter().enumerate().map(|(i, l)| (*l, i)).collect(),
        link_bytes: vec![0.0; links.len()],
        link_marked: match &job.options.marks {
            Some(m) if job.options.link_usage => vec![vec![0.0; links.len()]; m.at.len().saturating_sub(1)],
            _ => Vec::new(),
        },
        link_inner_marked: Vec::new(),
        links,
        routes: HashMap::new(),
        rank_host: placement.clone(),
        rank_flops: vec![0.0; n as usize],
        count_links: job.options.link_usage,
        async_rx: vec![false; n as usize],
        superseded_sends: 0,
        async_pairs: HashSet::new(),
    }));
    let text = std::fs::read_to_string(&job.platform).unwrap_or_default();
    let opts = Rc::new(Opts::new(job, &text)?);

    // Ranks alone on their cores compute by sleeping: the time is the same (an execution on a
    // host with a free core runs at one core's speed) and one simcall replaces SimGrid's five for
    // an execution (pi_dartboard at 4,096 ranks: 840,000 simcalls, 450,000 of them for its
    // 90,000 executions). Not where a host runs more ranks than cores (they share them), nor on
    // platforms whose hosts' speed or state changes over time.
    let varying = text.is_empty() || ["speed_file", "availability_file", "state_file", "<trace", "<profile"].iter().any(|k| text.contains(k));
    let mut on_host: HashMap<Host, usize> = HashMap::new();
    for h in &placement {
        *on_host.entry(*h).or_insert(0) += 1;
    }
    let dir = TraceDir::open(&job.trace_dir)?;
    for r in 0..n {
        let host = placement[r as usize];
        let sleeps = !varying && on_host[&host] <= host.core_count();
        let reader = open_rank(job, &dir, r)?;
        let rank = Box::new(Rank {
            me: r,
            world: Rc::clone(&world),
            opts: Rc::clone(&opts),
            speed: host.speed_flops(),
            sleeps,
            reqs: HashMap::new(),
            tested_done: HashSet::new(),
            eager: Vec::new(),
            comms: HashMap::new(),
            world_size: n,
            compute_s: 0.0,
            comm_s: 0.0,
            wait_s: 0.0,
            messages_sent: 0,
            bytes_sent: 0,
            force_buffered: false,
            marks: Vec::new(),
            inner_marks: Vec::new(),
            carried_flops: 0.0,
        });
        let host_name = host.name();
        let actor = eng.spawn(&format!("rank-{r}"), host, move || {
            rank_body(rank, reader, host_name)
        })?;
        world.borrow_mut().actors.push(actor);
    }
    eng.run();
    // Not the clock: ranks that finished may still hold eager sends nobody receives.
    let makespan = {
        let w = world.borrow();
        w.stats
            .iter()
            .flatten()
            .map(|s| s.finish_s)
            .fold(0.0, f64::max)
    };
    let end_clock = eng.clock();

    let mut w = world.borrow_mut();
    if let Some(e) = w.errors.first() {
        let more = if w.errors.len() > 1 {
            format!(" (and {} more errors)", w.errors.len() - 1)
        } else {
            String::new()
        };
        bail!("{e}{more}");
    }
    let stuck: Vec<usize> = (0..n as usize).filter(|&r| !w.status[r].finished).collect();
    if !stuck.is_empty() {
        let mut parts = Vec::new();
        for &r in stuck.iter().take(8) {
            let st = &w.status[r];
            let file = rank_file(&job.trace_dir, r as u32);
            let file = file
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            let what: Vec<String> = st.blocked.iter().take(3).map(describe).collect();
            let more = if st.blocked.len() > 3 {
                format!(" and {} more", st.blocked.len() - 3)
            } else {
                String::new()
            };
            parts.push(format!(
                "rank {r} in `{}` ({file}:{}) waits for {}{more}",
                st.action,
                st.line,
                if what.is_empty() {
                    "nothing known".to_string()
                } else {
                    what.join(", ")
                }
            ));
        }
        let more = if stuck.len() > 8 {
            format!("; and {} more ranks", stuck.len() - 8)
        } else {
            String::new()
        };
        bail!(
            "deadlock at t={end_clock:.6} s: {} of {n} ranks never finished: {}{more}",
            stuck.len(),
            parts.join("; ")
        );
    }
    let mut warnings = std::mem::take(&mut w.warnings);
    // Messages left for a rank that receives asynchronously were superseded: expected.
    let superseded: usize = w.queues.iter().zip(&w.async_rx).filter(|(_, a)| **a).map(|(q, _)| q.unexpected.len()).sum();
    if superseded > 0 {
        warnings.push(format!("{superseded} message(s) to asynchronous receivers were never taken (superseded by later ones)"));
    }
    if w.superseded_sends > 0 {
        warnings.push(format!(
            "{} isend(s) reused a request whose previous send was still in flight here, unlike in the traced run: that send was waited for first",
            w.superseded_sends
        ));
    }
    let unreceived: usize = w.queues.iter().zip(&w.async_rx).filter(|(_, a)| !**a).map(|(q, _)| q.unexpected.len()).sum();
    if unreceived > 0 {
        let (dst, e) = w
            .queues
            .iter()
            .enumerate()
            .filter(|(d, _)| !w.async_rx[*d])
            .find_map(|(d, q)| q.unexpected.front().map(|e| (d, e)))
            .expect("one exists");
        warnings.push(format!(
            "{unreceived} message(s) never received (first: rank {} to rank {dst}, {} B, tag {}, {})",
            e.src,
            e.bytes,
            e.tag,
            describe_ctx(e.ctx)
        ));
    }

    let ranks: Vec<RankStats> = w
        .stats
        .iter_mut()
        .map(|s| s.take().expect("every rank finished"))
        .collect();
    let mut per_host: HashMap<String, u32> = HashMap::new();
    for r in &ranks {
        *per_host.entry(r.host.clone()).or_default() += 1;
    }
    let mut host_flops: HashMap<Host, f64> = HashMap::new();
    for (h, f) in w.rank_host.iter().zip(&w.rank_flops) {
        *host_flops.entry(*h).or_default() += f;
    }
    let hosts = eng
        .hosts()
        .into_iter()
        .map(|h| {
            let name = h.name();
            let cap = h.speed_flops() * h.core_count() as f64 * makespan;
            let computed = host_flops.get(&h).copied().unwrap_or(0.0);
            HostStats {
                ranks: per_host.get(&name).copied().unwrap_or(0),
                cores: h.core_count(),
                speed_flops: h.speed_flops(),
                computed_flops: computed,
                cpu_use: if cap > 0.0 { computed / cap } else { 0.0 },
                name,
            }
        })
        .collect();
    let links = w
        .links
        .iter()
        .zip(&w.link_bytes)
        .enumerate()
        .map(|(i, (l, &bytes))| {
            let cap = l.bandwidth_bytes_per_s() * makespan;
            LinkStats {
                name: l.name(),
                bandwidth_bytes_per_s: l.bandwidth_bytes_per_s(),
                bytes,
                utilisation: if cap > 0.0 { bytes / cap } else { 0.0 },
                marked_bytes: w.link_marked.iter().map(|m| m[i]).collect(),
                inner_marked_bytes: w.link_inner_marked.iter().map(|m| m[i]).collect(),
            }
        })
        .collect();
    Ok(ReplayResult {
        makespan_s: makespan,
        ranks,
        hosts,
        links,
        messages: w.messages,
        bytes: w.bytes,
        wall_s: started.elapsed().as_secs_f64(),
        warnings,
        timeline: std::mem::take(&mut w.timeline),
        folded: None,
    })
}

/// Reads a mapping file: one host name per rank, in rank order; `#` comments and blank lines
/// are skipped.
pub fn read_mapping_file(path: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read the mapping", path.display()))?;
    let mut hosts = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.split('#').next().unwrap_or("").trim();
        if l.is_empty() {
            continue;
        }
        if l.split_whitespace().count() != 1 {
            bail!(
                "{}:{}: expected one host name, found {l:?}",
                path.display(),
                i + 1
            );
        }
        hosts.push(l.to_string());
    }
    Ok(hosts)
}
