//! The analytic replay (`--analytic`): the traces played with the MPI semantics of
//! [`replay`](super::replay) (matching by communicator, source and tag in posting order, eager and
//! rendezvous protocols, the same collective algorithms, the platform's per-message overheads),
//! timed by formula in one event queue instead of by SimGrid's actors and solver.
//!
//! SimGrid loads the platform and answers the routes; nothing is simulated by it. Every rank is a
//! small state machine (no stack), resumed by one priority queue of times: a rank runs until it
//! advances its clock (a compute, an overhead) or waits for a message, so sends and receives are
//! matched in the order of simulated time.
//!
//! A message of `s` bytes (1 for an empty one) on a route of latency L and bottleneck bandwidth B
//! takes SMPI's `lat_factor(s) L + s / (bw_factor(s) B)` (bounded by TCP-gamma / 2L where the
//! configuration sets one), from the moment both sides are there; an eager message from its
//! send (the receive takes over its transfer, as in the SimGrid replay). That is SimGrid's time where
//! no other transfer shares a link. Where transfers meet, each shared link (not fat pipes)
//! accounts the bytes given to it, and a transfer's end, an event of its own, moves for the
//! transfers given to its links after it (`Sim::transfer_event`): SimGrid's bandwidth sharing,
//! approximated. Hosts running more ranks than cores compute at cores / ranks of their speed
//! throughout.
//! Cross traffic (`network/crosstraffic`) loads the links of the way back at 5%, as SimGrid's
//! CM02 model does. SimGrid stays the reference; this
//! replay is an option for sizes SimGrid cannot reach in reasonable time (LogGOPSim's approach:
//! one event queue, no stack per rank).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use anyhow::{bail, Result};

use crate::model::trace::{
    Compute, HostStats, LinkStats, Peer, RankList, RankMark, RankStats, ReplayJob, ReplayResult, Tag, TimelineEvent,
    TraceAction, COMM_WORLD,
};
use crate::platform::smpi::FactorList;
use crate::sim::coll::{self, PointToPoint};
use crate::sim::engine::{Engine, EngineOptions, Host, Link};
use crate::sim::job::DEFAULT_NETWORK_MODEL;
use crate::sim::queue::EventQueue;
use crate::sim::replay::{action_name, map_ranks, open_rank, p2p_ctx, Ctx, Opts, MIN_COMPUTE_S};
use crate::trace::{rank_file, TraceReader};

/// SimGrid 3.32's defaults for the SMPI network model, thresholds ascending.
const DEFAULT_BW_FACTOR: &str =
    "0:0.812084;257:0.338112;732:0.341987;1426:0.608902;3484:0.77493;5776:1.08739;9376:0.58729;15424:0.697866;65472:0.940694";
const DEFAULT_LAT_FACTOR: &str =
    "0:2.01467;257:1.95341;732:1.9503;1426:1.61075;3484:1.88101;5776:2.18796;9376:2.59299;15424:3.48845;65472:11.6436";
const DEFAULT_TCP_GAMMA: f64 = 4_194_304.0;
/// What a transfer weighs on the links of the way back with network/crosstraffic (SimGrid's
/// CM02 model).
const CROSS_WEIGHT: f64 = 0.05;

const NONE: u32 = u32::MAX;

type IntMap<K, V> = crate::model::hash::FastMap<K, V>;
type IntSet<K> = crate::model::hash::FastSet<K>;

fn coll_ctx(comm: u32) -> Ctx {
    u64::from(comm) * 2 + 1
}

/// One side of one message.
struct Op {
    /// Simulated time the operation completes (NaN: not known yet, the other side is not there).
    done: f64,
    /// Simulated time the second side arrived (NaN until then).
    matched: f64,
    recv: bool,
    /// The message's size (a receive's once matched).
    bytes: u64,
    /// The rank waiting for it (NONE: nobody yet).
    waiter: u32,
    peer: Option<u32>,
    tag: Option<i32>,
    ctx: Ctx,
}

struct PostedRecv {
    src: Option<u32>,
    tag: Option<i32>,
    ctx: Ctx,
    op: u32,
}

struct Envelope {
    src: u32,
    tag: i32,
    ctx: Ctx,
    bytes: u64,
    /// A rendezvous send's operation (completes with the transfer); None for an eager one,
    /// complete when posted.
    op: Option<u32>,
    /// An eager message's transfer, under way since the send (its receive operation, which the
    /// receive takes over): MPI's eager protocol puts the data on the wire at once.
    arrival: Option<u32>,
}

/// Messages that arrived before their receive, in arrival order: a short list while few wait (a
/// message or two ahead of its receive, the common case), indexed by source once many do.
#[derive(Default)]
struct Unexpected {
    few: VecDeque<Envelope>,
    many: Option<Indexed>,
}

/// Beyond this many waiting messages they are indexed by source.
const FEW_UNEXPECTED: usize = 32;

fn fits(e: &Envelope, from: Option<u32>, tag: Option<i32>, ctx: Ctx) -> bool {
    e.ctx == ctx && from.is_none_or(|s| s == e.src) && tag.is_none_or(|t| t == e.tag)
}

impl Unexpected {
    fn push(&mut self, e: Envelope) {
        if let Some(m) = self.many.as_mut() {
            m.push(e);
            return;
        }
        self.few.push_back(e);
        if self.few.len() > FEW_UNEXPECTED {
            let mut m = Indexed::default();
            for e in self.few.drain(..) {
                m.push(e);
            }
            self.many = Some(m);
        }
    }

    /// The earliest message from `from` (any source: None) with this tag and context.
    fn take(&mut self, from: Option<u32>, tag: Option<i32>, ctx: Ctx) -> Option<Envelope> {
        if let Some(m) = self.many.as_mut() {
            let e = m.take(from, tag, ctx);
            if m.is_empty() {
                self.many = None;
            }
            return e;
        }
        let i = self.few.iter().position(|e| fits(e, from, tag, ctx))?;
        self.few.remove(i)
    }

    fn len(&self) -> usize {
        self.many.as_ref().map_or(self.few.len(), |m| m.len())
    }

    fn first(&self) -> Option<&Envelope> {
        match &self.many {
            Some(m) => m.front(),
            None => self.few.front(),
        }
    }
}

/// Many waiting messages, by source and in arrival order.
type Indexed = crate::sim::unexpected::Unexpected<Envelope>;

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

#[derive(Default)]
struct Inbox {
    posted: VecDeque<PostedRecv>,
    unexpected: Unexpected,
}

/// What a rank does next, smaller than a trace action: an action is expanded into these.
enum Micro {
    Compute(f64),
    /// MPI's own time around a message (smpi/os, smpi/or), counted as communication.
    Overhead(f64),
    Send { to: u32, bytes: u64, tag: i32, ctx: Ctx, req: Option<u64>, buffered: bool },
    Recv { from: Option<u32>, tag: Option<i32>, ctx: Ctx, req: Option<u64> },
    Arecv { from: u32, tag: Option<i32>, ctx: Ctx },
    /// Every operation the blocking calls above posted without a request.
    WaitTemps,
    /// These requests (empty: every outstanding one, in id order).
    WaitReqs(Vec<u64>),
    Test(u64),
    Cancel(u64),
    /// An isend's request id still names a send in flight: that send is waited for first.
    Supersede(u64),
    /// The end of the trace: carried flops, requests never waited for, the rank's figures.
    Finish,
}

/// A wait in progress.
struct Waiting {
    ops: Vec<u32>,
    t0: f64,
    /// Operations whose completion is not known yet.
    unknown: u32,
    latest: f64,
}

/// A communicator's members as its `comm` lines list them, checked once for all of them.
struct Members {
    /// As the trace lists them (runs: compared in a few words).
    runs: RankList,
    /// Each member, and each member's rank in the communicator (empty for every world rank in
    /// order, which maps ranks like the world).
    list: Vec<u32>,
    index: IntMap<u32, u32>,
    identity: bool,
}

#[derive(Clone)]
struct CommView {
    id: u32,
    members: Option<std::rc::Rc<Members>>,
    me: u32,
    size: u32,
}

impl CommView {
    fn world_rank(&self, r: u32) -> u32 {
        match &self.members {
            None => r,
            Some(m) => m.list[r as usize],
        }
    }
}

struct RankState {
    reader: Option<TraceReader>,
    clock: f64,
    micros: VecDeque<Micro>,
    /// The rest of the collective being played, one step expanded into micro-steps at a time
    /// (in world ranks; a million-rank allreduce holds 20 steps a rank, not 80 micro-steps).
    steps: VecDeque<Step>,
    /// The context of those steps.
    steps_ctx: Ctx,
    temps: Vec<u32>,
    /// An empty list kept for the next wait's operations.
    spare: Vec<u32>,
    reqs: IntMap<u64, u32>,
    tested_done: IntSet<u64>,
    /// The communicators it declared (a few: searched in order).
    comms: Vec<CommView>,
    waiting: Option<Waiting>,
    /// Seconds per flop (1 / speed, slowed down where the host runs more ranks than cores).
    sec_per_flop: f64,
    speed: f64,
    carried_flops: f64,
    flops: f64,
    compute_s: f64,
    comm_s: f64,
    wait_s: f64,
    messages_sent: u64,
    bytes_sent: u64,
    marks: Vec<RankMark>,
    inner_marks: Vec<RankMark>,
    /// The action being played: its name, line and start (deadlock reports, the timeline).
    action: (&'static str, u64, f64),
    finished: bool,
}

struct Route {
    /// Links that serve one transfer at a time (not fat pipes), by index.
    shared: Box<[u32]>,
    all: Box<[u32]>,
    latency: f64,
    bandwidth: f64,
}

struct Net {
    links: Vec<Link>,
    link_bw: Vec<f64>,
    link_shared: Vec<bool>,
    link_index: HashMap<Link, u32>,
    free_at: Vec<f64>,
    /// Bytes and transfers given to each link so far (what later transfers add to a busy link).
    bytes_in: Vec<f64>,
    count_in: Vec<u64>,
    hosts: Vec<Host>,
    /// Routes by host pair, and their index in `route_list` (a lookup per message: one probe).
    routes: IntMap<(u32, u32), u32>,
    route_list: Vec<Route>,
    bw_factor: FactorList,
    lat_factor: FactorList,
    tcp_gamma: f64,
    /// SimGrid's network/crosstraffic: a transfer also loads the links of the way back (its
    /// acknowledgements) at 5% of its rate.
    crosstraffic: bool,
}

impl Net {
    fn link(&mut self, l: Link) -> u32 {
        if let Some(&i) = self.link_index.get(&l) {
            return i;
        }
        let i = self.links.len() as u32;
        self.links.push(l);
        self.link_bw.push(l.bandwidth_bytes_per_s());
        self.link_shared.push(l.is_shared());
        self.free_at.push(0.0);
        self.bytes_in.push(0.0);
        self.count_in.push(0);
        self.link_index.insert(l, i);
        i
    }

    fn route(&mut self, from: u32, to: u32) -> u32 {
        if let Some(&i) = self.routes.get(&(from, to)) {
            return i;
        }
        let links = self.hosts[from as usize].route_links(self.hosts[to as usize]);
        let idx: Vec<u32> = links.iter().map(|l| self.link(*l)).collect();
        let latency = links.iter().map(|l| l.latency_s()).sum();
        let bandwidth = idx.iter().map(|&i| self.link_bw[i as usize]).fold(f64::INFINITY, f64::min);
        let shared = idx.iter().copied().filter(|&i| self.link_shared[i as usize]).collect();
        self.route_list.push(Route { shared, all: idx.into(), latency, bandwidth });
        let i = (self.route_list.len() - 1) as u32;
        self.routes.insert((from, to), i);
        i
    }

    /// A transfer of `bytes` from host `from` to host `to` whose two sides are there at `at`:
    /// when its data arrives unless later transfers slow it down (`Sim::transfer_event`).
    fn transfer(&mut self, from: u32, to: u32, bytes: u64, at: f64) -> Transfer {
        let wire = bytes.max(1);
        let (bf, lf, gamma) = (self.bw_factor.eval(wire, 1.0), self.lat_factor.eval(wire, 1.0), self.tcp_gamma);
        let there = self.route(from, to) as usize;
        let back = if self.crosstraffic { Some(self.route(to, from) as usize) } else { None };
        let route = &self.route_list[there];
        let latency = route.latency * lf;
        let mut bw = route.bandwidth * bf;
        if gamma > 0.0 && route.latency > 0.0 {
            bw = bw.min(gamma / (2.0 * route.latency));
        }
        let data_at = at + latency;
        let mut end = if bw.is_finite() { data_at + wire as f64 / bw } else { data_at };
        // Each shared link carries the bytes given to it at its rate, one transfer's after the
        // other's: a transfer ends no earlier than its link has carried what came before it.
        let back: &[u32] = match back {
            Some(b) => &self.route_list[b].shared,
            None => &[],
        };
        let weighted = route.shared.iter().map(|&l| (l, 1.0)).chain(back.iter().map(|&l| (l, CROSS_WEIGHT)));
        for (l, w) in weighted {
            let free = self.free_at[l as usize].max(data_at) + w * wire as f64 / (self.link_bw[l as usize] * bf);
            self.free_at[l as usize] = free;
            end = end.max(free);
        }
        let mut t = Transfer { recv: NONE, send: None, wire: wire as f64, bf, rate: bw, end, checks: 0, n: 0, marks: [(0, 0.0, 0); MARKED_LINKS] };
        for &l in route.shared.iter().take(MARKED_LINKS) {
            let li = l as usize;
            t.marks[t.n as usize] = (l, self.bytes_in[li], self.count_in[li]);
            t.n += 1;
            self.bytes_in[li] += wire as f64;
            self.count_in[li] += 1;
        }
        t
    }
}

/// Links of a route whose later load a transfer follows (the first ones: a cluster's route
/// crosses at most three).
const MARKED_LINKS: usize = 4;

/// A transfer in flight: its operations complete when its event comes.
struct Transfer {
    recv: u32,
    send: Option<u32>,
    wire: f64,
    bf: f64,
    /// Its rate alone on its route, bytes/s.
    rate: f64,
    /// When its data arrives with the links' load at its start.
    end: f64,
    /// Times its end was checked against what came after it.
    checks: u8,
    n: u8,
    /// (link, bytes given to the link before it, transfers before it).
    marks: [(u32, f64, u64); MARKED_LINKS],
}

/// Times a transfer's end moves at most for transfers that came after it.
const MAX_CHECKS: u8 = 2;

/// Queue entries of transfers carry this bit (ranks do not).
const TRANSFER: u32 = 1 << 31;

struct Sim {
    opts: Opts,
    transfers: Vec<Transfer>,
    free_transfers: Vec<u32>,
    ranks: Vec<RankState>,
    rank_host: Vec<u32>,
    inbox: Vec<Inbox>,
    ops: Vec<Op>,
    free_ops: Vec<u32>,
    net: Net,
    queue: EventQueue,
    now: f64,
    messages: u64,
    bytes: f64,
    errors: Vec<String>,
    warnings: Vec<String>,
    superseded_sends: u64,
    async_rx: Vec<bool>,
    async_pairs: HashSet<(u32, u32)>,
    count_links: bool,
    link_bytes: IntMap<u32, f64>,
    link_marked: Vec<IntMap<u32, f64>>,
    link_inner_marked: Vec<IntMap<u32, f64>>,
    timeline: Vec<TimelineEvent>,
    /// The last member list seen for each communicator id.
    members: IntMap<u32, std::rc::Rc<Members>>,
    /// Reused for each action's steps.
    scratch: Vec<Micro>,
}


/// Collective steps as `coll` plays them, recorded in order (the algorithms' traffic does not
/// depend on time).
#[derive(Default)]
struct Recorder {
    size: u32,
    rank: u32,
    steps: Vec<Step>,
}

enum Step {
    Send(u32, u64, i32),
    Recv(u32, i32),
    SendRecv(u32, u64, u32, i32),
    Reduce(u64),
    Copy(u64),
}

impl PointToPoint for Recorder {
    fn size(&self) -> u32 {
        self.size
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn send(&mut self, to: u32, bytes: u64, tag: i32) {
        self.steps.push(Step::Send(to, bytes, tag));
    }
    fn recv(&mut self, from: u32, tag: i32) {
        self.steps.push(Step::Recv(from, tag));
    }
    fn sendrecv(&mut self, to: u32, bytes: u64, from: u32, tag: i32) {
        self.steps.push(Step::SendRecv(to, bytes, from, tag));
    }
    fn reduce(&mut self, bytes: u64) {
        self.steps.push(Step::Reduce(bytes));
    }
    fn copy(&mut self, bytes: u64) {
        self.steps.push(Step::Copy(bytes));
    }
}

/// The value of a SimGrid configuration item: the last `--cfg name:value`, else the platform's
/// `<config>` prop.
fn cfg_value<'a>(cfg: &'a [String], props: &'a HashMap<String, String>, name: &str) -> Option<&'a str> {
    cfg.iter()
        .rev()
        .find_map(|c| c.strip_prefix(name).and_then(|v| v.strip_prefix(':')))
        .or_else(|| props.get(name).map(String::as_str))
}

/// A SimGrid factor list in any threshold order.
fn factor_list(v: &str, what: &str) -> Result<FactorList> {
    let mut items: Vec<(u64, &str)> = Vec::new();
    for item in v.split(';').map(str::trim).filter(|i| !i.is_empty()) {
        let t = item.split(':').next().and_then(|t| t.trim().parse::<u64>().ok());
        let Some(t) = t else { bail!("{what}: {item:?} is not threshold:value") };
        items.push((t, item));
    }
    items.sort_by_key(|(t, _)| *t);
    let joined: Vec<&str> = items.iter().map(|(_, i)| *i).collect();
    FactorList::parse(&joined.join(";")).ok_or_else(|| anyhow::anyhow!("{what}: {v:?} is not a factor list"))
}

/// Replays `job` analytically (see the module's documentation).
pub fn run_analytic(job: &ReplayJob) -> Result<ReplayResult> {
    let started = Instant::now();
    let n = job.ranks;
    if n == 0 {
        bail!("no ranks to replay");
    }
    if let Some(m) = job.cfg.iter().rev().find_map(|c| c.strip_prefix("network/model:")) {
        if m != "SMPI" {
            bail!("the analytic replay follows SMPI's network model, not network/model:{m}");
        }
    }
    let mut cfg = vec![DEFAULT_NETWORK_MODEL.to_string()];
    cfg.extend(job.cfg.iter().cloned());
    let eng = Engine::init(&EngineOptions { cfg, host_load: false, link_load: false, verbose: false })?;
    eng.load_platform(&job.platform)?;
    let placement = map_ranks(&eng, &job.mapping, n)?;
    let text = std::fs::read_to_string(&job.platform).unwrap_or_default();
    let props = crate::platform::config_props(&text).map_err(|e| anyhow::anyhow!("{}:{e}", job.platform.display()))?;
    let bw_factor = factor_list(cfg_value(&job.cfg, &props, "smpi/bw-factor").unwrap_or(DEFAULT_BW_FACTOR), "smpi/bw-factor")?;
    let lat_factor = factor_list(cfg_value(&job.cfg, &props, "smpi/lat-factor").unwrap_or(DEFAULT_LAT_FACTOR), "smpi/lat-factor")?;
    let tcp_gamma = match cfg_value(&job.cfg, &props, "network/TCP-gamma") {
        Some(v) => v.trim().parse::<f64>().map_err(|_| anyhow::anyhow!("network/TCP-gamma: {v:?} is not a number"))?,
        None => DEFAULT_TCP_GAMMA,
    };
    let crosstraffic = match cfg_value(&job.cfg, &props, "network/crosstraffic").map(str::trim) {
        None => true,
        Some("1" | "yes" | "true" | "on") => true,
        Some("0" | "no" | "false" | "off") => false,
        Some(v) => bail!("network/crosstraffic: {v:?} is not a boolean"),
    };
    let hosts = eng.hosts();
    let host_index: HashMap<Host, u32> = hosts.iter().enumerate().map(|(i, h)| (*h, i as u32)).collect();
    let rank_host: Vec<u32> = placement.iter().map(|h| host_index[h]).collect();
    let mut on_host = vec![0usize; hosts.len()];
    for &h in &rank_host {
        on_host[h as usize] += 1;
    }
    let links = if job.options.link_usage { eng.links() } else { Vec::new() };
    let mut net = Net {
        links: Vec::new(),
        link_bw: Vec::new(),
        link_shared: Vec::new(),
        link_index: HashMap::new(),
        free_at: Vec::new(),
        bytes_in: Vec::new(),
        count_in: Vec::new(),
        hosts: hosts.clone(),
        routes: IntMap::default(),
        route_list: Vec::new(),
        bw_factor,
        lat_factor,
        tcp_gamma,
        crosstraffic,
    };
    for l in &links {
        net.link(*l);
    }
    let opts = Opts::new(job, &text)?;
    let mut ranks = Vec::with_capacity(n as usize);
    let dir = crate::trace::pack::TraceDir::open(&job.trace_dir)?;
    for r in 0..n {
        let h = rank_host[r as usize] as usize;
        let reader = open_rank(job, &dir, r)?;
        let speed = hosts[h].speed_flops();
        let share = (hosts[h].core_count() as f64 / on_host[h] as f64).min(1.0);
        ranks.push(RankState {
            reader: Some(reader),
            clock: 0.0,
            micros: VecDeque::new(),
            steps: VecDeque::new(),
            steps_ctx: 0,
            temps: Vec::new(),
            spare: Vec::new(),
            reqs: IntMap::default(),
            tested_done: IntSet::default(),
            comms: Vec::new(),
            waiting: None,
            sec_per_flop: 1.0 / (speed * share),
            speed,
            carried_flops: 0.0,
            flops: 0.0,
            compute_s: 0.0,
            comm_s: 0.0,
            wait_s: 0.0,
            messages_sent: 0,
            bytes_sent: 0,
            marks: Vec::new(),
            inner_marks: Vec::new(),
            action: ("start", 0, 0.0),
            finished: false,
        });
    }
    let marked_spans = match &job.options.marks {
        Some(m) if job.options.link_usage => m.at.len().saturating_sub(1),
        _ => 0,
    };
    let mut sim = Sim {
        opts,
        transfers: Vec::new(),
        free_transfers: Vec::new(),
        ranks,
        rank_host,
        inbox: (0..n).map(|_| Inbox::default()).collect(),
        ops: Vec::new(),
        free_ops: Vec::new(),
        net,
        queue: EventQueue::new(),
        now: 0.0,
        messages: 0,
        bytes: 0.0,
        errors: Vec::new(),
        warnings: Vec::new(),
        superseded_sends: 0,
        async_rx: vec![false; n as usize],
        async_pairs: HashSet::new(),
        count_links: job.options.link_usage,
        link_bytes: IntMap::default(),
        link_marked: vec![IntMap::default(); marked_spans],
        link_inner_marked: Vec::new(),
        timeline: Vec::new(),
        members: IntMap::default(),
        scratch: Vec::new(),
    };
    for r in 0..n {
        sim.schedule(0.0, r);
    }
    while let Some((t, r)) = sim.queue.pop() {
        sim.now = t;
        if r & TRANSFER != 0 {
            sim.transfer_event(r & !TRANSFER);
        } else if let Err(e) = sim.run_rank(r) {
            sim.errors.push(e);
        }
    }
    sim.finish(job, &eng, &hosts, started)
}

impl Sim {
    fn schedule(&mut self, t: f64, r: u32) {
        self.queue.push(t, r);
    }

    fn new_op(&mut self, op: Op) -> u32 {
        match self.free_ops.pop() {
            Some(i) => {
                self.ops[i as usize] = op;
                i
            }
            None => {
                self.ops.push(op);
                (self.ops.len() - 1) as u32
            }
        }
    }

    /// Moves rank `r`'s clock to `t`: false when it must wait for the queue to come to `t`.
    fn advance(&mut self, r: u32, t: f64) -> bool {
        let rank = &mut self.ranks[r as usize];
        rank.clock = t;
        if t > self.now {
            self.schedule(t, r);
            return false;
        }
        true
    }

    /// Runs rank `r` until it waits or its clock moves past the present.
    fn run_rank(&mut self, r: u32) -> Result<(), String> {
        loop {
            if self.ranks[r as usize].waiting.is_some() {
                if !self.try_complete(r) {
                    return Ok(());
                }
                continue;
            }
            let Some(m) = self.ranks[r as usize].micros.pop_front() else {
                if self.ranks[r as usize].finished {
                    return Ok(());
                }
                if !self.next_step(r) {
                    self.fetch(r)?;
                }
                continue;
            };
            if !self.play(r, m)? {
                return Ok(());
            }
        }
    }

    /// Expands the rank's next trace action into micro-steps.
    fn fetch(&mut self, r: u32) -> Result<(), String> {
        let rank = &mut self.ranks[r as usize];
        if self.opts.timeline {
            let (name, _, t0) = rank.action;
            if rank.clock > t0 && name != "start" {
                self.timeline.push(TimelineEvent { rank: r, kind: name.to_string(), start_s: t0, end_s: rank.clock });
            }
        }
        let Some(reader) = rank.reader.as_mut() else {
            return Ok(());
        };
        let next = reader.next_action();
        if !self.opts.mark_at.is_empty() {
            let passed = reader.marks_passed();
            let inner = reader.inner_marks_passed();
            self.take_marks(r, passed);
            if !self.opts.inner_at.is_empty() {
                self.take_inner_marks(r, inner);
            }
        }
        let rank = &mut self.ranks[r as usize];
        let (a, line) = match next {
            Ok(Some(x)) => x,
            Ok(None) => {
                rank.reader = None;
                rank.micros.push_back(Micro::Finish);
                return Ok(());
            }
            Err(e) => {
                rank.reader = None;
                rank.finished = true;
                return Err(e.to_string());
            }
        };
        rank.action = (action_name(&a), line, rank.clock);
        self.expand(r, &a).map_err(|m| {
            let file = self.ranks[r as usize].reader.as_ref().map(|x| x.file().to_string()).unwrap_or_default();
            format!("{file}:{line}: {m}")
        })
    }

    fn comm(&self, r: u32, id: u32) -> Result<CommView, String> {
        if id == COMM_WORLD {
            return Ok(CommView { id, members: None, me: r, size: self.ranks.len() as u32 });
        }
        self.ranks[r as usize].comms.iter().find(|c| c.id == id).cloned().ok_or_else(|| format!("communicator {id} used before its `comm` line"))
    }

    fn peer(c: &CommView, p: Peer) -> Result<Option<u32>, String> {
        match p {
            Peer::Any => Ok(None),
            Peer::Rank(x) if x < c.size => Ok(Some(c.world_rank(x))),
            Peer::Rank(x) => Err(format!("rank {x} is not in communicator {} of size {}", c.id, c.size)),
        }
    }

    fn dest(c: &CommView, x: u32) -> Result<u32, String> {
        Self::peer(c, Peer::Rank(x)).map(|p| p.expect("a rank"))
    }

    fn tag(t: Tag) -> Option<i32> {
        match t {
            Tag::Value(v) => Some(v),
            Tag::Any => None,
        }
    }

    fn block_secs(&self, blocks: &[(u32, u64)], what: &str) -> Result<f64, String> {
        let mut s = 0.0;
        for (id, k) in blocks {
            let per = self.opts.block_seconds.get(id).ok_or_else(|| format!("compute blocks: no time for block {id}{what}"))?;
            s += per * *k as f64;
        }
        Ok(s)
    }

    fn expand(&mut self, r: u32, a: &TraceAction) -> Result<(), String> {
        use TraceAction as A;
        let speed = self.ranks[r as usize].speed;
        let os = |b: u64| self.opts.os.eval(b, 0.0);
        let mut out = std::mem::take(&mut self.scratch);
        match a {
            A::Compute { compute } => {
                let flops = match compute {
                    Compute::Seconds(s) => s * speed,
                    Compute::Flops(f) => *f,
                    Compute::Blocks(b) => {
                        self.block_secs(b, " (estimate the trace into seconds first, or give a block table)")? * speed
                    }
                    Compute::TimedBlocks { seconds, .. } if self.opts.block_seconds.is_empty() => seconds * speed,
                    Compute::TimedBlocks { blocks, .. } => self.block_secs(blocks, " in the block table")? * speed,
                };
                out.push(Micro::Compute(flops));
            }
            A::CommDef { id, ranks } => {
                // Every member of a communicator reads the same list: it is checked once and
                // shared (a communicator of 65,536 ranks, read by each: a comparison each).
                let n = self.ranks.len() as u32;
                let known = self.members.get(id).filter(|m| m.runs == *ranks).cloned();
                let m = match known {
                    Some(m) => m,
                    None => {
                        if ranks.max().is_some_and(|x| x >= n) {
                            return Err(format!("comm {id}: members must be below {n}"));
                        }
                        let identity = ranks.is_world(n);
                        let (mut list, mut index) = (Vec::new(), IntMap::default());
                        if !identity {
                            list = ranks.to_vec();
                            for (i, &x) in list.iter().enumerate() {
                                index.entry(x).or_insert(i as u32);
                            }
                        }
                        let m = std::rc::Rc::new(Members { runs: ranks.clone(), list, index, identity });
                        self.members.insert(*id, std::rc::Rc::clone(&m));
                        m
                    }
                };
                let me = if m.identity { Some(&r) } else { m.index.get(&r) };
                let me = *me.ok_or_else(|| format!("comm {id}: rank {r} is not a member"))?;
                let size = ranks.len() as u32;
                let members = if m.identity { None } else { Some(m) };
                let view = CommView { id: *id, members, me, size };
                let comms = &mut self.ranks[r as usize].comms;
                match comms.iter_mut().find(|c| c.id == *id) {
                    Some(c) => *c = view,
                    None => comms.push(view),
                }
            }
            A::Send { to, bytes, tag, comm, buffered } => {
                let c = self.comm(r, *comm)?;
                let to = Self::dest(&c, *to)?;
                out.push(Micro::Overhead(os(*bytes)));
                out.push(Micro::Send { to, bytes: *bytes, tag: *tag, ctx: p2p_ctx(*comm), req: None, buffered: *buffered });
                out.push(Micro::WaitTemps);
            }
            A::Recv { from, tag, comm, .. } => {
                let c = self.comm(r, *comm)?;
                let from = Self::peer(&c, *from)?;
                out.push(Micro::Recv { from, tag: Self::tag(*tag), ctx: p2p_ctx(*comm), req: None });
                out.push(Micro::WaitTemps);
            }
            A::Arecv { from, tag, comm, .. } => {
                let c = self.comm(r, *comm)?;
                if let Some(from) = Self::peer(&c, Peer::Rank(*from))? {
                    out.push(Micro::Arecv { from, tag: Self::tag(*tag), ctx: p2p_ctx(*comm) });
                }
            }
            A::Isend { req, to, bytes, tag, comm } => {
                let c = self.comm(r, *comm)?;
                let to = Self::dest(&c, *to)?;
                out.push(Micro::Supersede(*req));
                out.push(Micro::Overhead(os(*bytes)));
                out.push(Micro::Send { to, bytes: *bytes, tag: *tag, ctx: p2p_ctx(*comm), req: Some(*req), buffered: false });
            }
            A::Irecv { req, from, tag, comm, .. } => {
                let c = self.comm(r, *comm)?;
                let from = Self::peer(&c, *from)?;
                out.push(Micro::Recv { from, tag: Self::tag(*tag), ctx: p2p_ctx(*comm), req: Some(*req) });
            }
            A::Wait { req } => out.push(Micro::WaitReqs(vec![*req])),
            A::Waitall { reqs } => out.push(Micro::WaitReqs(reqs.clone())),
            A::Test { req } => out.push(Micro::Test(*req)),
            A::Cancel { req } => out.push(Micro::Cancel(*req)),
            A::Sendrecv { to, send_bytes, send_tag, from, recv_tag, comm, .. } => {
                let c = self.comm(r, *comm)?;
                let to = Self::dest(&c, *to)?;
                let from = Self::peer(&c, *from)?;
                let ctx = p2p_ctx(*comm);
                out.push(Micro::Recv { from, tag: Self::tag(*recv_tag), ctx, req: None });
                out.push(Micro::Overhead(os(*send_bytes)));
                out.push(Micro::Send { to, bytes: *send_bytes, tag: *send_tag, ctx, req: None, buffered: false });
                out.push(Micro::WaitTemps);
            }
            A::Ctor { kind, members } => {
                let s = self.opts.ctor.seconds(*kind, *members);
                if s > 0.0 {
                    out.push(Micro::Compute(s * speed));
                }
            }
            other => {
                let comm = coll::comm_of(other).expect("point-to-point actions are handled above");
                let c = self.comm(r, comm)?;
                let mut rec = Recorder { size: c.size, rank: c.me, steps: Vec::new() };
                coll::run(&mut rec, other)?;
                let rank = &mut self.ranks[r as usize];
                rank.steps_ctx = coll_ctx(c.id);
                rank.steps.extend(rec.steps.into_iter().map(|s| match s {
                    Step::Send(to, bytes, tag) => Step::Send(c.world_rank(to), bytes, tag),
                    Step::Recv(from, tag) => Step::Recv(c.world_rank(from), tag),
                    Step::SendRecv(to, bytes, from, tag) => Step::SendRecv(c.world_rank(to), bytes, c.world_rank(from), tag),
                    Step::Reduce(bytes) => Step::Reduce(bytes),
                    Step::Copy(bytes) => Step::Copy(bytes),
                }));
            }
        }
        self.ranks[r as usize].micros.extend(out.drain(..));
        self.scratch = out;
        Ok(())
    }

    /// Expands the next step of the rank's collective into micro-steps: false when it has none.
    fn next_step(&mut self, r: u32) -> bool {
        let rank = &mut self.ranks[r as usize];
        let Some(s) = rank.steps.pop_front() else {
            if rank.steps.capacity() > 64 {
                rank.steps = VecDeque::new();
            }
            return false;
        };
        let ctx = rank.steps_ctx;
        let os = |b: u64| self.opts.os.eval(b, 0.0);
        let m = &mut rank.micros;
        match s {
            Step::Send(to, bytes, tag) => {
                m.push_back(Micro::Overhead(os(bytes)));
                m.push_back(Micro::Send { to, bytes, tag, ctx, req: None, buffered: false });
                m.push_back(Micro::WaitTemps);
            }
            Step::Recv(from, tag) => {
                m.push_back(Micro::Recv { from: Some(from), tag: Some(tag), ctx, req: None });
                m.push_back(Micro::WaitTemps);
            }
            Step::SendRecv(to, bytes, from, tag) => {
                m.push_back(Micro::Recv { from: Some(from), tag: Some(tag), ctx, req: None });
                m.push_back(Micro::Overhead(os(bytes)));
                m.push_back(Micro::Send { to, bytes, tag, ctx, req: None, buffered: false });
                m.push_back(Micro::WaitTemps);
            }
            Step::Reduce(bytes) => m.push_back(Micro::Compute(bytes as f64 * self.opts.reduce_flops_per_byte)),
            Step::Copy(bytes) => {
                let s = crate::model::trace::copy_seconds(&self.opts.copy_ns_per_byte, bytes);
                if s > 0.0 {
                    m.push_back(Micro::Compute(s * rank.speed));
                }
            }
        }
        true
    }

    /// Plays one micro-step: false when the rank stops for now (its clock moved on, or it waits).
    fn play(&mut self, r: u32, m: Micro) -> Result<bool, String> {
        let ri = r as usize;
        match m {
            Micro::Compute(flops) => {
                if flops <= 0.0 {
                    return Ok(true);
                }
                let rank = &mut self.ranks[ri];
                let flops = flops + std::mem::take(&mut rank.carried_flops);
                if flops / rank.speed < MIN_COMPUTE_S {
                    rank.carried_flops = flops;
                    return Ok(true);
                }
                Ok(self.execute(r, flops))
            }
            Micro::Overhead(s) => {
                if s < self.opts.min_sleep_s {
                    return Ok(true);
                }
                let rank = &mut self.ranks[ri];
                rank.comm_s += s;
                let t = rank.clock + s;
                Ok(self.advance(r, t))
            }
            Micro::Send { to, bytes, tag, ctx, req, buffered } => {
                let op = self.post_send(r, to, bytes, tag, ctx, buffered);
                self.keep(r, req, op)?;
                Ok(true)
            }
            Micro::Recv { from, tag, ctx, req } => {
                let op = self.post_recv(r, from, tag, ctx);
                self.keep(r, req, op)?;
                Ok(true)
            }
            Micro::Arecv { from, tag, ctx } => {
                self.async_rx[ri] = true;
                self.async_pairs.insert((r, from));
                let mut any = false;
                while let Some(e) = self.inbox[ri].unexpected.take(Some(from), tag, ctx) {
                    let op = self.take_envelope(e, r, Some(from), tag, ctx);
                    self.ranks[ri].temps.push(op);
                    any = true;
                }
                if any {
                    self.ranks[ri].micros.push_front(Micro::WaitTemps);
                }
                Ok(true)
            }
            Micro::WaitTemps => {
                let ops = std::mem::take(&mut self.ranks[ri].temps);
                Ok(self.wait(r, ops))
            }
            Micro::WaitReqs(ids) => {
                let rank = &mut self.ranks[ri];
                let ids = if ids.is_empty() {
                    let mut all: Vec<u64> = rank.reqs.keys().copied().collect();
                    all.sort_unstable();
                    all
                } else {
                    ids
                };
                let mut ops = std::mem::take(&mut rank.spare);
                for id in ids {
                    ops.extend(self.take_req(r, id)?);
                }
                Ok(self.wait(r, ops))
            }
            Micro::Test(id) => {
                let rank = &mut self.ranks[ri];
                match rank.reqs.remove(&id) {
                    Some(op) => {
                        rank.tested_done.insert(id);
                        Ok(self.wait(r, vec![op]))
                    }
                    None if rank.tested_done.contains(&id) => Ok(true),
                    None => Err(format!("no outstanding request {id}")),
                }
            }
            Micro::Cancel(id) => {
                let Some(op) = self.take_req(r, id)? else { return Ok(true) };
                let q = &mut self.inbox[ri].posted;
                if self.ops[op as usize].recv {
                    if let Some(i) = q.iter().position(|p| p.op == op) {
                        q.remove(i);
                        self.free_ops.push(op);
                        return Ok(true);
                    }
                }
                Ok(self.wait(r, vec![op]))
            }
            Micro::Supersede(id) => {
                let rank = &mut self.ranks[ri];
                match rank.reqs.get(&id) {
                    Some(&op) if !self.ops[op as usize].recv => {
                        rank.reqs.remove(&id);
                        self.superseded_sends += 1;
                        Ok(self.wait(r, vec![op]))
                    }
                    _ => Ok(true),
                }
            }
            Micro::Finish => {
                let rank = &mut self.ranks[ri];
                let carried = std::mem::take(&mut rank.carried_flops);
                if carried > 0.0 {
                    rank.micros.push_front(Micro::Finish);
                    return Ok(self.execute(r, carried));
                }
                if !rank.reqs.is_empty() {
                    let mut ids: Vec<u64> = rank.reqs.keys().copied().collect();
                    ids.sort_unstable();
                    self.warnings.push(format!(
                        "rank {r}: {} request(s) never waited for (first: {}), completed at the end",
                        ids.len(),
                        ids[0]
                    ));
                    rank.micros.push_front(Micro::Finish);
                    rank.micros.push_front(Micro::WaitReqs(ids));
                    return Ok(true);
                }
                rank.finished = true;
                if self.opts.timeline {
                    let (name, _, t0) = rank.action;
                    if rank.clock > t0 && name != "start" {
                        self.timeline.push(TimelineEvent { rank: r, kind: name.to_string(), start_s: t0, end_s: rank.clock });
                    }
                }
                Ok(false)
            }
        }
    }

    fn execute(&mut self, r: u32, flops: f64) -> bool {
        let rank = &mut self.ranks[r as usize];
        let d = flops * rank.sec_per_flop;
        rank.compute_s += d;
        rank.flops += flops;
        let t = rank.clock + d;
        self.advance(r, t)
    }

    /// A posted operation goes under its request id, or with the blocking call's others.
    fn keep(&mut self, r: u32, req: Option<u64>, op: u32) -> Result<(), String> {
        let rank = &mut self.ranks[r as usize];
        match req {
            None => rank.temps.push(op),
            Some(id) => {
                if rank.reqs.contains_key(&id) {
                    return Err(format!("request {id} is still outstanding"));
                }
                rank.tested_done.remove(&id);
                rank.reqs.insert(id, op);
            }
        }
        Ok(())
    }

    fn take_req(&mut self, r: u32, id: u64) -> Result<Option<u32>, String> {
        let rank = &mut self.ranks[r as usize];
        match rank.reqs.remove(&id) {
            Some(op) => Ok(Some(op)),
            None if rank.tested_done.remove(&id) => Ok(None),
            None => Err(format!("no outstanding request {id}")),
        }
    }

    fn post_send(&mut self, r: u32, to: u32, bytes: u64, tag: i32, ctx: Ctx, buffered: bool) -> u32 {
        let now = self.ranks[r as usize].clock;
        {
            let rank = &mut self.ranks[r as usize];
            rank.messages_sent += 1;
            rank.bytes_sent += bytes;
        }
        self.messages += 1;
        self.bytes += bytes as f64;
        self.count_link_bytes(r, to, bytes);
        let eager = buffered || bytes < self.opts.eager_threshold || self.async_pairs.contains(&(to, r));
        let op = self.new_op(Op {
            done: if eager { now } else { f64::NAN },
            matched: f64::NAN,
            recv: false,
            bytes,
            waiter: NONE,
            peer: Some(to),
            tag: Some(tag),
            ctx,
        });
        let send_op = (!eager).then_some(op);
        let q = &mut self.inbox[to as usize].posted;
        let hit = q.iter().position(|p| p.ctx == ctx && p.src.is_none_or(|s| s == r) && p.tag.is_none_or(|t| t == tag));
        match hit {
            Some(i) => {
                let p = q.remove(i).expect("index from position");
                self.matched(r, to, bytes, send_op, p.op);
            }
            None => {
                let arrival = eager.then(|| {
                    let a = self.new_op(Op { done: f64::NAN, matched: f64::NAN, recv: true, bytes, waiter: NONE, peer: Some(r), tag: Some(tag), ctx });
                    self.start_transfer(r, to, bytes, None, a);
                    a
                });
                self.inbox[to as usize].unexpected.push(Envelope { src: r, tag, ctx, bytes, op: send_op, arrival });
            }
        }
        op
    }

    /// The receive operation for message `e`, which arrived before its receive: the eager
    /// transfer's own (under way or over) from now on matched, else a new one matched now.
    fn take_envelope(&mut self, e: Envelope, to: u32, from: Option<u32>, tag: Option<i32>, ctx: Ctx) -> u32 {
        match e.arrival {
            Some(a) => {
                let o = &mut self.ops[a as usize];
                o.matched = self.now;
                (o.peer, o.tag) = (from, tag);
                a
            }
            None => {
                let op = self.new_op(Op { done: f64::NAN, matched: f64::NAN, recv: true, bytes: e.bytes, waiter: NONE, peer: from, tag, ctx });
                self.matched(e.src, to, e.bytes, e.op, op);
                op
            }
        }
    }

    fn post_recv(&mut self, r: u32, from: Option<u32>, tag: Option<i32>, ctx: Ctx) -> u32 {
        if let Some(e) = self.inbox[r as usize].unexpected.take(from, tag, ctx) {
            return self.take_envelope(e, r, from, tag, ctx);
        }
        let op = self.new_op(Op { done: f64::NAN, matched: f64::NAN, recv: true, bytes: 0, waiter: NONE, peer: from, tag, ctx });
        self.inbox[r as usize].posted.push_back(PostedRecv { src: from, tag, ctx, op });
        op
    }

    /// Both sides of a message are there (now): times its transfer, completes the receive and
    /// a rendezvous send, and wakes whoever waits for them.
    fn matched(&mut self, from: u32, to: u32, bytes: u64, send_op: Option<u32>, recv_op: u32) {
        let now = self.now;
        {
            let o = &mut self.ops[recv_op as usize];
            o.matched = now;
            o.bytes = bytes;
        }
        if let Some(s) = send_op {
            self.ops[s as usize].matched = now;
        }
        self.start_transfer(from, to, bytes, send_op, recv_op);
    }

    /// Times a transfer from now whose end completes `recv_op` (and a rendezvous `send_op`).
    fn start_transfer(&mut self, from: u32, to: u32, bytes: u64, send_op: Option<u32>, recv_op: u32) {
        let now = self.now;
        let mut t = self.net.transfer(self.rank_host[from as usize], self.rank_host[to as usize], bytes, now);
        (t.recv, t.send) = (recv_op, send_op);
        let end = t.end;
        let id = match self.free_transfers.pop() {
            Some(i) => {
                self.transfers[i as usize] = t;
                i
            }
            None => {
                self.transfers.push(t);
                (self.transfers.len() - 1) as u32
            }
        };
        self.schedule(end, id | TRANSFER);
    }

    /// A transfer's end as first timed has come. Transfers given to its links since it started
    /// share them with it (SimGrid shares a link's bandwidth among the transfers crossing it):
    /// through each link, it ends no earlier than the link can carry its bytes and, of each
    /// later transfer, the bytes the two have in common (the smaller of the two), beyond what
    /// its own rate takes (a link faster than its route's bottleneck delays it only once it is
    /// saturated), and no later than the link has carried everything given to it. Where that
    /// moves its end, it waits until then; otherwise its operations complete now.
    fn transfer_event(&mut self, id: u32) {
        let t = &self.transfers[id as usize];
        let mut end = t.end;
        for &(l, b0, c0) in &t.marks[..t.n as usize] {
            let li = l as usize;
            let later_bytes = (self.net.bytes_in[li] - b0 - t.wire).max(0.0);
            let later = self.net.count_in[li].saturating_sub(c0 + 1) as f64;
            let common = later_bytes.min(later * t.wire);
            let delay = ((t.wire + common) / (self.net.link_bw[li] * t.bf) - t.wire / t.rate).max(0.0);
            let cap = self.net.free_at[li].max(t.end);
            end = end.max((t.end + delay).min(cap));
        }
        // Checked twice at most: a link that stays saturated would otherwise move it again at
        // every check (65,536 ranks through one backbone).
        if end > self.now && t.checks < MAX_CHECKS {
            self.transfers[id as usize].checks += 1;
            self.schedule(end, id | TRANSFER);
            return;
        }
        let (recv, send) = (t.recv, t.send);
        self.free_transfers.push(id);
        self.resolve(recv, self.now);
        if let Some(s) = send {
            self.resolve(s, self.now);
        }
    }

    fn resolve(&mut self, op: u32, done: f64) {
        let o = &mut self.ops[op as usize];
        o.done = done;
        let w = o.waiter;
        if w == NONE {
            return;
        }
        let wake = {
            let Some(wt) = self.ranks[w as usize].waiting.as_mut() else { return };
            wt.unknown -= 1;
            wt.latest = wt.latest.max(done);
            (wt.unknown == 0).then_some(wt.latest)
        };
        if let Some(t) = wake {
            self.schedule(t, w);
        }
    }

    /// Starts waiting for `ops`: false when the rank stops for now.
    fn wait(&mut self, r: u32, ops: Vec<u32>) -> bool {
        let t0 = self.ranks[r as usize].clock;
        let mut unknown = 0;
        let mut latest = t0;
        for &op in &ops {
            let o = &mut self.ops[op as usize];
            if o.done.is_nan() {
                o.waiter = r;
                unknown += 1;
            } else {
                latest = latest.max(o.done);
            }
        }
        self.ranks[r as usize].waiting = Some(Waiting { ops, t0, unknown, latest });
        self.try_complete(r)
    }

    /// Completes the rank's wait once every operation's end is known: false when the rank stops
    /// for now.
    fn try_complete(&mut self, r: u32) -> bool {
        let ri = r as usize;
        let Some(w) = self.ranks[ri].waiting.as_ref() else { return true };
        if w.unknown > 0 {
            return false;
        }
        let w = self.ranks[ri].waiting.take().expect("checked above");
        let t1 = w.latest.max(w.t0);
        let mut matched = w.t0;
        let mut overhead = 0.0;
        for &op in &w.ops {
            let o = &self.ops[op as usize];
            if !o.matched.is_nan() {
                matched = matched.max(o.matched);
            }
            if o.recv && !self.opts.or.entries.is_empty() {
                overhead += self.opts.or.eval(o.bytes, 0.0);
            }
            self.free_ops.push(op);
        }
        let wait = (matched.min(t1) - w.t0).max(0.0);
        let rank = &mut self.ranks[ri];
        let mut ops = w.ops;
        ops.clear();
        if rank.temps.capacity() == 0 {
            rank.temps = ops;
        } else {
            rank.spare = ops;
        }
        rank.wait_s += wait;
        rank.comm_s += (t1 - w.t0) - wait;
        if overhead > 0.0 {
            rank.micros.push_front(Micro::Overhead(overhead));
        }
        self.advance(r, t1)
    }

    fn count_link_bytes(&mut self, from: u32, to: u32, bytes: u64) {
        if !self.count_links {
            return;
        }
        let (hf, ht) = (self.rank_host[from as usize], self.rank_host[to as usize]);
        let ri = self.net.route(hf, ht) as usize;
        let route = &self.net.route_list[ri].all;
        let rank = &self.ranks[from as usize];
        let span = rank.marks.len().checked_sub(1);
        let per = self.opts.inner_at.len();
        let inner_run = (per >= 2 && rank.inner_marks.len() % per == per - 1).then(|| rank.inner_marks.len() / per);
        for &l in route.iter() {
            *self.link_bytes.entry(l).or_default() += bytes as f64;
        }
        if let Some(m) = span.and_then(|s| self.link_marked.get_mut(s)) {
            for &l in route.iter() {
                *m.entry(l).or_default() += bytes as f64;
            }
        }
        if let Some(run) = inner_run {
            if self.link_inner_marked.len() <= run {
                self.link_inner_marked.resize(run + 1, IntMap::default());
            }
            for &l in route.iter() {
                *self.link_inner_marked[run].entry(l).or_default() += bytes as f64;
            }
        }
    }

    fn mark(&self, r: u32) -> RankMark {
        let rank = &self.ranks[r as usize];
        RankMark {
            at_s: rank.clock,
            compute_s: rank.compute_s,
            comm_s: rank.comm_s,
            wait_s: rank.wait_s,
            messages_sent: rank.messages_sent,
            bytes_sent: rank.bytes_sent,
            flops: rank.flops,
        }
    }

    fn take_marks(&mut self, r: u32, passed: u64) {
        while let Some(&m) = self.opts.mark_at.get(self.ranks[r as usize].marks.len()) {
            if passed <= m {
                break;
            }
            let mark = self.mark(r);
            self.ranks[r as usize].marks.push(mark);
        }
    }

    fn take_inner_marks(&mut self, r: u32, (runs, passed): (u64, u64)) {
        let per = self.opts.inner_at.len();
        loop {
            let k = self.ranks[r as usize].inner_marks.len();
            let (run, j) = (k / per, k % per);
            if run as u64 >= runs || (run as u64 + 1 == runs && passed <= self.opts.inner_at[j]) {
                break;
            }
            let mark = self.mark(r);
            self.ranks[r as usize].inner_marks.push(mark);
        }
    }

    fn describe(&self, op: u32) -> String {
        let o = &self.ops[op as usize];
        let peer = o.peer.map_or("any rank".to_string(), |p| format!("rank {p}"));
        let tag = o.tag.map_or("any tag".to_string(), |t| format!("tag {t}"));
        let ctx = if o.ctx % 2 == 1 { format!("collective traffic, comm {}", o.ctx / 2) } else { format!("comm {}", o.ctx / 2) };
        if o.recv {
            format!("a message from {peer} ({tag}, {ctx})")
        } else {
            format!("{peer} to receive {} B ({tag}, {ctx})", o.bytes)
        }
    }

    fn finish(mut self, job: &ReplayJob, _eng: &Engine, hosts: &[Host], started: Instant) -> Result<ReplayResult> {
        let n = self.ranks.len();
        if let Some(e) = self.errors.first() {
            let more = if self.errors.len() > 1 { format!(" (and {} more errors)", self.errors.len() - 1) } else { String::new() };
            bail!("{e}{more}");
        }
        let stuck: Vec<usize> = (0..n).filter(|&r| !self.ranks[r].finished).collect();
        if !stuck.is_empty() {
            let end = self.now;
            let mut parts = Vec::new();
            for &r in stuck.iter().take(8) {
                let rank = &self.ranks[r];
                let file = rank_file(&job.trace_dir, r as u32);
                let file = file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
                let waits: Vec<u32> = rank
                    .waiting
                    .as_ref()
                    .map(|w| w.ops.iter().copied().filter(|&o| self.ops[o as usize].done.is_nan()).collect())
                    .unwrap_or_default();
                let what: Vec<String> = waits.iter().take(3).map(|&o| self.describe(o)).collect();
                let more = if waits.len() > 3 { format!(" and {} more", waits.len() - 3) } else { String::new() };
                parts.push(format!(
                    "rank {r} in `{}` ({file}:{}) waits for {}{more}",
                    rank.action.0,
                    rank.action.1,
                    if what.is_empty() { "nothing known".to_string() } else { what.join(", ") }
                ));
            }
            let more = if stuck.len() > 8 { format!("; and {} more ranks", stuck.len() - 8) } else { String::new() };
            bail!("deadlock at t={end:.6} s: {} of {n} ranks never finished: {}{more}", stuck.len(), parts.join("; "));
        }
        let makespan = self.ranks.iter().map(|r| r.clock).fold(0.0, f64::max);
        let mut warnings = std::mem::take(&mut self.warnings);
        let left = |async_rx: bool| -> usize {
            self.inbox.iter().zip(&self.async_rx).filter(|(_, a)| **a == async_rx).map(|(q, _)| q.unexpected.len()).sum()
        };
        let superseded = left(true);
        if superseded > 0 {
            warnings.push(format!("{superseded} message(s) to asynchronous receivers were never taken (superseded by later ones)"));
        }
        if self.superseded_sends > 0 {
            warnings.push(format!(
                "{} isend(s) reused a request whose previous send was still in flight here, unlike in the traced run: that send was waited for first",
                self.superseded_sends
            ));
        }
        let unreceived = left(false);
        if unreceived > 0 {
            let (dst, e) = self
                .inbox
                .iter()
                .enumerate()
                .filter(|(d, _)| !self.async_rx[*d])
                .find_map(|(d, q)| q.unexpected.first().map(|e| (d, e)))
                .expect("one exists");
            let ctx = if e.ctx % 2 == 1 { format!("collective traffic, comm {}", e.ctx / 2) } else { format!("comm {}", e.ctx / 2) };
            warnings.push(format!(
                "{unreceived} message(s) never received (first: rank {} to rank {dst}, {} B, tag {}, {ctx})",
                e.src, e.bytes, e.tag
            ));
        }
        let host_names: Vec<String> = hosts.iter().map(|h| h.name()).collect();
        let mut per_host = vec![0u32; hosts.len()];
        let mut host_flops = vec![0.0; hosts.len()];
        let ranks: Vec<RankStats> = self
            .ranks
            .iter_mut()
            .enumerate()
            .map(|(r, s)| {
                let h = self.rank_host[r] as usize;
                per_host[h] += 1;
                host_flops[h] += s.flops;
                RankStats {
                    rank: r as u32,
                    host: host_names[h].clone(),
                    finish_s: s.clock,
                    compute_s: s.compute_s,
                    comm_s: s.comm_s,
                    wait_s: s.wait_s,
                    messages_sent: s.messages_sent,
                    bytes_sent: s.bytes_sent,
                    marks: std::mem::take(&mut s.marks),
                    inner_marks: std::mem::take(&mut s.inner_marks),
                }
            })
            .collect();
        let hosts_out = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let cap = h.speed_flops() * h.core_count() as f64 * makespan;
                HostStats {
                    name: host_names[i].clone(),
                    ranks: per_host[i],
                    cores: h.core_count(),
                    speed_flops: h.speed_flops(),
                    computed_flops: host_flops[i],
                    cpu_use: if cap > 0.0 { host_flops[i] / cap } else { 0.0 },
                }
            })
            .collect();
        let links = if self.count_links {
            self.net
                .links
                .iter()
                .enumerate()
                .filter(|(i, l)| self.link_index_is_platform(*i as u32, l))
                .map(|(i, l)| {
                    let i = i as u32;
                    let bytes = self.link_bytes.get(&i).copied().unwrap_or(0.0);
                    let bw = self.net.link_bw[i as usize];
                    let cap = bw * makespan;
                    LinkStats {
                        name: l.name(),
                        bandwidth_bytes_per_s: bw,
                        bytes,
                        utilisation: if cap > 0.0 { bytes / cap } else { 0.0 },
                        marked_bytes: self.link_marked.iter().map(|m| m.get(&i).copied().unwrap_or(0.0)).collect(),
                        inner_marked_bytes: self.link_inner_marked.iter().map(|m| m.get(&i).copied().unwrap_or(0.0)).collect(),
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(ReplayResult {
            makespan_s: makespan,
            ranks,
            hosts: hosts_out,
            links,
            messages: self.messages,
            bytes: self.bytes,
            wall_s: started.elapsed().as_secs_f64(),
            warnings,
            timeline: std::mem::take(&mut self.timeline),
            folded: None,
        })
    }

    /// Links SimGrid lists (not the implicit loopback a route may cross): what link figures
    /// report, as in the SimGrid replay.
    fn link_index_is_platform(&self, _i: u32, l: &Link) -> bool {
        !l.name().starts_with("__")
    }
}
