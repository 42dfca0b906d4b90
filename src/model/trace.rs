//! Trace actions (what one rank does, in order) and the replay job and result artifacts.
//!
//! The per-rank trace files are a line format (traces/FORMAT.md), read and written by
//! `crate::trace`; the types here are what those lines mean. A replay job (mpicast/replayjob) is
//! what one child `mpicast simulate --replay` process runs; its answer is a mpicast/replay artifact.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Artifact;

/// The world communicator's id. Communicators other than the world are declared in the trace
/// (`comm ID RANKS`) before their first use.
pub const COMM_WORLD: u32 = 0;

/// A communicator's members in communicator-rank order, as runs of consecutive world ranks: a
/// run (first, last) counts up from `first` to `last`, or down where `last < first`. The world of
/// a million ranks, and its reverse, are one run each (as its `comm` line shows them: `0-1048575`),
/// where a list would hold 4 MB in each of a million ranks' traces. Runs are kept merged, so two
/// lists of the same members are equal. In JSON, the list of members.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "Vec<u32>", into = "Vec<u32>")]
pub struct RankList {
    runs: Vec<(u32, u32)>,
    len: usize,
}

fn step(a: u32, b: u32) -> i64 {
    (b as i64 - a as i64).signum()
}

impl RankList {
    /// Appends one member.
    pub fn push(&mut self, x: u32) {
        self.len += 1;
        if let Some((a, b)) = self.runs.last_mut() {
            let d = step(*a, *b);
            let next = x as i64 - *b as i64;
            if (d == 0 && next.abs() == 1) || (d != 0 && next == d) {
                *b = x;
                return;
            }
        }
        self.runs.push((x, x));
    }

    /// Appends the members `first` to `last` (counting down where `last < first`).
    pub fn push_run(&mut self, first: u32, last: u32) {
        self.push(first);
        if first == last {
            return;
        }
        let d = step(first, last);
        self.len += (last as i64 - first as i64).unsigned_abs() as usize;
        let (a, b) = self.runs.last_mut().expect("a member was pushed");
        if *a == *b || step(*a, *b) == d {
            *b = last;
        } else {
            self.runs.push(((first as i64 + d) as u32, last));
        }
    }

    /// The world ranks `0 .. n` in order.
    pub fn world(n: u32) -> RankList {
        let mut l = RankList::default();
        if n > 0 {
            l.push_run(0, n - 1);
        }
        l
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The runs (first, last), in order.
    pub fn runs(&self) -> &[(u32, u32)] {
        &self.runs
    }

    /// Whether the members are the world ranks `0 .. n` in order.
    pub fn is_world(&self, n: u32) -> bool {
        n > 0 && self.runs.len() == 1 && self.runs[0] == (0, n - 1) && (n == 1 || self.len == n as usize)
    }

    /// The members in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.runs.iter().flat_map(|&(a, b)| {
            let up = b >= a;
            let n = (b as i64 - a as i64).unsigned_abs() as u32 + 1;
            (0..n).map(move |i| if up { a + i } else { a - i })
        })
    }

    /// The communicator rank of world rank `x` (its first place).
    pub fn position(&self, x: u32) -> Option<usize> {
        let mut at = 0usize;
        for &(a, b) in &self.runs {
            let (lo, hi) = (a.min(b), a.max(b));
            if (lo..=hi).contains(&x) {
                return Some(at + (x as i64 - a as i64).unsigned_abs() as usize);
            }
            at += (hi - lo) as usize + 1;
        }
        None
    }

    pub fn contains(&self, x: u32) -> bool {
        self.runs.iter().any(|&(a, b)| (a.min(b)..=a.max(b)).contains(&x))
    }

    /// The largest member.
    pub fn max(&self) -> Option<u32> {
        self.runs.iter().map(|&(a, b)| a.max(b)).max()
    }

    pub fn first(&self) -> Option<u32> {
        self.runs.first().map(|r| r.0)
    }

    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }
}

impl FromIterator<u32> for RankList {
    fn from_iter<I: IntoIterator<Item = u32>>(it: I) -> RankList {
        let mut l = RankList::default();
        for x in it {
            l.push(x);
        }
        l
    }
}

impl From<Vec<u32>> for RankList {
    fn from(v: Vec<u32>) -> RankList {
        v.into_iter().collect()
    }
}

impl From<&[u32]> for RankList {
    fn from(v: &[u32]) -> RankList {
        v.iter().copied().collect()
    }
}

impl From<RankList> for Vec<u32> {
    fn from(l: RankList) -> Vec<u32> {
        l.to_vec()
    }
}

/// How long a compute burst lasts.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Compute {
    /// Seconds on the rank's host at its full per-core speed (replay runs `seconds * speed` flops,
    /// so oversubscribed cores stretch it).
    Seconds(f64),
    /// Floating-point operations on the rank's host.
    Flops(f64),
    /// Executions of program blocks: (block id, count). The estimator turns them into seconds with
    /// a machine table; replay needs a table of seconds per block execution to run them.
    Blocks(Vec<(u32, u64)>),
    /// Executions of program blocks (possibly none) and the burst's measured wall time on the
    /// traced host (`compute blocks 3x100 time=1.2e-4`, from `mpicast trace --time-blocks`).
    /// Replay uses `seconds` when it has no block table, the table otherwise.
    TimedBlocks { blocks: Vec<(u32, u64)>, seconds: f64 },
}

/// Hashed by the bits of its numbers: equal bursts hash alike (`trace::fold` hashes compute
/// bursts by their written form, to 9 digits, and every other action with this).
impl std::hash::Hash for Compute {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        std::mem::discriminant(self).hash(h);
        match self {
            Compute::Seconds(x) | Compute::Flops(x) => x.to_bits().hash(h),
            Compute::Blocks(b) => b.hash(h),
            Compute::TimedBlocks { blocks, seconds } => {
                blocks.hash(h);
                seconds.to_bits().hash(h);
            }
        }
    }
}

/// A message's source or destination, as a rank of the action's communicator.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Peer {
    Rank(u32),
    /// MPI_ANY_SOURCE (receives only).
    Any,
}

/// A tag, or MPI_ANY_TAG (receives only).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Tag {
    Value(i32),
    Any,
}

/// Per-rank sizes of a v-collective (bytes, indexed by rank of the communicator).
pub type Counts = Vec<u64>;

/// One MPI-level action of a rank. Peers and roots are ranks of `comm`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Hash)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum TraceAction {
    Compute {
        compute: Compute,
    },
    /// Declares communicator `id` as these world ranks, in communicator-rank order.
    CommDef {
        id: u32,
        ranks: RankList,
    },
    Send {
        to: u32,
        bytes: u64,
        tag: i32,
        comm: u32,
        /// MPI_Bsend: the message is copied to the attached buffer and the sender goes on,
        /// whatever its size.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        buffered: bool,
    },
    /// `bytes` is the receive buffer size (informational: the message size is the sender's).
    Recv {
        from: Peer,
        bytes: Option<u64>,
        tag: Tag,
        comm: u32,
    },
    /// An asynchronous receive (P2PDC's asynchronous schemes): takes every message from `from`
    /// whose send has been issued by then, and never waits for one that has not.
    Arecv {
        from: u32,
        bytes: Option<u64>,
        tag: Tag,
        comm: u32,
    },
    Isend {
        req: u64,
        to: u32,
        bytes: u64,
        tag: i32,
        comm: u32,
    },
    Irecv {
        req: u64,
        from: Peer,
        bytes: Option<u64>,
        tag: Tag,
        comm: u32,
    },
    Wait {
        req: u64,
    },
    /// Empty: every request still outstanding.
    Waitall {
        reqs: Vec<u64>,
    },
    /// A successful MPI_Test: the request is done here (waited for if the simulation is behind).
    Test {
        req: u64,
    },
    /// MPI_Cancel: a receive not matched yet is withdrawn; one already matched is waited for.
    Cancel {
        req: u64,
    },
    Sendrecv {
        to: u32,
        send_bytes: u64,
        send_tag: i32,
        from: Peer,
        recv_bytes: Option<u64>,
        recv_tag: Tag,
        comm: u32,
    },
    Barrier {
        comm: u32,
    },
    Bcast {
        bytes: u64,
        root: u32,
        comm: u32,
    },
    Reduce {
        bytes: u64,
        root: u32,
        comm: u32,
    },
    Allreduce {
        bytes: u64,
        comm: u32,
    },
    /// `bytes` is each rank's contribution.
    Gather {
        bytes: u64,
        root: u32,
        comm: u32,
    },
    Gatherv {
        counts: Counts,
        root: u32,
        comm: u32,
    },
    /// `bytes` is each rank's share.
    Scatter {
        bytes: u64,
        root: u32,
        comm: u32,
    },
    Scatterv {
        counts: Counts,
        root: u32,
        comm: u32,
    },
    Allgather {
        bytes: u64,
        comm: u32,
    },
    Allgatherv {
        counts: Counts,
        comm: u32,
    },
    /// `bytes` is the block sent to each rank.
    Alltoall {
        bytes: u64,
        comm: u32,
    },
    /// `send[j]`: bytes this rank sends to rank j; `recv[j]`: bytes it receives from rank j.
    Alltoallv {
        send: Counts,
        recv: Counts,
        comm: u32,
    },
    /// `counts[j]`: bytes of the result block rank j keeps.
    ReduceScatter {
        counts: Counts,
        comm: u32,
    },
    Scan {
        bytes: u64,
        comm: u32,
    },
    /// A communicator constructor over a parent of several ranks, after its collectives (which
    /// precede it as their own actions): the member's own work beyond them, which the platform
    /// says (`platform::CtorCosts`); `members` is the new communicator's size (0: none made).
    Ctor {
        kind: CtorKind,
        members: u32,
    },
}

/// Which communicator constructor a `ctor` action stands for.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum CtorKind {
    /// MPI_Comm_split, MPI_Comm_split_type, MPI_Cart_sub: colours gathered first.
    Split,
    /// MPI_Comm_dup, MPI_Comm_create, MPI_Cart_create.
    Dup,
}

impl CtorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CtorKind::Split => "split",
            CtorKind::Dup => "dup",
        }
    }

    pub fn parse(s: &str) -> Option<CtorKind> {
        match s {
            "split" => Some(CtorKind::Split),
            "dup" => Some(CtorKind::Dup),
            _ => None,
        }
    }
}

/// Which host each rank runs on.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Mapping {
    /// Rank r on host r mod H (hosts in natural name order: node-2 before node-10).
    RoundRobin,
    /// Consecutive ranks fill one host's cores before the next host.
    Block,
    /// One host name per rank.
    Hosts { hosts: Vec<String> },
}

/// Replay knobs besides the platform's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReplayOptions {
    /// Point-to-point messages below this many bytes are eager (the sender does not wait for the
    /// receiver); from this size on they are rendezvous. SMPI's default is 65536.
    pub eager_threshold_bytes: u64,
    /// Reduction arithmetic: flops charged per byte reduced (default 1/8: one flop per double).
    pub reduce_flops_per_byte: f64,
    /// What a collective's copy of a rank's own block costs (an alltoall's or allgather's
    /// block to itself, a memcpy in MPI): `[bytes, ns per byte]` steps, each up to its bytes
    /// (the last beyond), ascending; empty: nothing charged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copy_ns_per_byte: Vec<[f64; 2]>,
    /// Seconds per execution of a block id, for `compute blocks` actions.
    #[serde(default)]
    pub block_seconds: Vec<(u32, f64)>,
    /// Record a per-rank event timeline (memory grows with the trace).
    #[serde(default)]
    pub timeline: bool,
    /// Track per-link bytes (SimGrid's link-load plugin).
    #[serde(default = "yes")]
    pub link_usage: bool,
    /// Simulate every iteration of the main loop (no steady-state folding).
    #[serde(default)]
    pub no_fold: bool,
    /// Timed by formula in one event queue (`sim::analytic`) instead of by SimGrid's actors.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub analytic: bool,
    /// Record each rank's figures as it starts some iterations of one top-level loop (what
    /// steady-state folding reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marks: Option<LoopMarks>,
}

/// Iterations of one top-level loop, common to every rank's trace, at whose start each rank's
/// figures are recorded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoopMarks {
    /// The loop's place among a trace's top-level loops (from 0).
    pub loop_index: usize,
    /// Iterations (from 0, increasing) whose start is marked; the loop's count marks its end.
    pub at: Vec<u64>,
    /// A loop directly inside that one whose iterations are marked too, in each of its runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner: Option<InnerMarks>,
}

/// Iterations of a loop nested directly in the marked one, marked each time it runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InnerMarks {
    /// Its place among the loops directly in the marked loop's body (from 0).
    pub loop_index: usize,
    /// Iterations (from 0, increasing) whose start is marked in every run of it.
    pub at: Vec<u64>,
}

fn yes() -> bool {
    true
}

/// Seconds a collective's local copy of `bytes` takes at `steps` (`ReplayOptions::copy_ns_per_byte`).
pub fn copy_seconds(steps: &[[f64; 2]], bytes: u64) -> f64 {
    let b = bytes as f64;
    let ns = steps.iter().find(|s| b <= s[0]).or(steps.last()).map_or(0.0, |s| s[1]);
    b * ns * 1e-9
}

#[cfg(test)]
mod copy_tests {
    #[test]
    fn a_copy_costs_the_step_that_holds_it() {
        let steps = [[1e3, 0.5], [1e6, 0.1]];
        assert_eq!(super::copy_seconds(&steps, 1000), 1000.0 * 0.5e-9);
        assert!((super::copy_seconds(&steps, 2000) - 2000.0 * 0.1e-9).abs() < 1e-18);
        // Beyond the last step: the last one's figure.
        assert!((super::copy_seconds(&steps, 10_000_000) - 1e-3).abs() < 1e-15);
        assert_eq!(super::copy_seconds(&[], 1000), 0.0);
    }
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            eager_threshold_bytes: 65536,
            reduce_flops_per_byte: 0.125,
            copy_ns_per_byte: Vec::new(),
            block_seconds: Vec::new(),
            timeline: false,
            link_usage: true,
            no_fold: false,
            analytic: false,
            marks: None,
        }
    }
}

/// What a child `mpicast simulate --replay` runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReplayJob {
    /// Directory of per-rank trace files (`rank-<R>.trace`).
    pub trace_dir: PathBuf,
    pub ranks: u32,
    pub platform: PathBuf,
    pub mapping: Mapping,
    /// SimGrid `--cfg` items, `name:value`, after mpicast's default `network/model:SMPI`.
    #[serde(default)]
    pub cfg: Vec<String>,
    pub options: ReplayOptions,
}

impl Artifact for ReplayJob {
    const SCHEMA: &'static str = "mpicast/replayjob";
    const VERSION: u32 = 1;
}

/// The outcome of a replay.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReplayResult {
    /// Simulated time when the last rank finished, seconds.
    pub makespan_s: f64,
    pub ranks: Vec<RankStats>,
    pub hosts: Vec<HostStats>,
    pub links: Vec<LinkStats>,
    /// Point-to-point messages transferred (collectives' internal messages included).
    pub messages: u64,
    pub bytes: f64,
    /// Wall-clock seconds the simulation took (not the prediction).
    pub wall_s: f64,
    /// Things that did not stop the replay: messages never received, requests never waited.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Per-rank events, when asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelineEvent>,
    /// The main loop simulated for a few iterations and the rest added (steady-state folding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folded: Option<FoldInfo>,
}

/// What steady-state folding simulated of the main loop.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FoldInfo {
    /// The loop's iterations in the traces.
    pub iterations: u64,
    /// Iterations simulated (the last run of three).
    pub simulated: u64,
    /// Simulated seconds per iteration in the steady state.
    pub period_s: f64,
    /// The loop nested in it that was folded as well, in every iteration simulated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inner: Option<InnerFold>,
}

/// What steady-state folding simulated of the loop nested in the main one.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct InnerFold {
    /// Its iterations each time it runs.
    pub iterations: u64,
    /// Iterations simulated each time it ran.
    pub simulated: u64,
}

impl Artifact for ReplayResult {
    const SCHEMA: &'static str = "mpicast/replay";
    const VERSION: u32 = 1;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankStats {
    pub rank: u32,
    pub host: String,
    pub finish_s: f64,
    /// Time computing (compute actions and reduction arithmetic).
    pub compute_s: f64,
    /// Time in MPI calls while data moved.
    pub comm_s: f64,
    /// Time in MPI calls before the partner arrived (late sender / late receiver / collectives'
    /// skew).
    pub wait_s: f64,
    pub messages_sent: u64,
    pub bytes_sent: u64,
    /// The rank's figures at each of the job's loop marks (`ReplayOptions::marks`), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<RankMark>,
    /// The rank's figures at the inner loop's marks (`LoopMarks::inner`), run after run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inner_marks: Vec<RankMark>,
}

/// A rank's figures so far as it starts a marked iteration.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Default)]
pub struct RankMark {
    /// Simulated time.
    pub at_s: f64,
    pub compute_s: f64,
    pub comm_s: f64,
    pub wait_s: f64,
    pub messages_sent: u64,
    pub bytes_sent: u64,
    /// Flops computed (what its host's computed_flops sums).
    pub flops: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostStats {
    pub name: String,
    pub ranks: u32,
    pub cores: usize,
    pub speed_flops: f64,
    pub computed_flops: f64,
    /// computed_flops / (speed x cores x makespan).
    pub cpu_use: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LinkStats {
    pub name: String,
    pub bandwidth_bytes_per_s: f64,
    pub bytes: f64,
    /// bytes / (bandwidth x makespan).
    pub utilisation: f64,
    /// With loop marks: the bytes of the messages sent between each two successive marks (by
    /// the sender's marks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marked_bytes: Vec<f64>,
    /// With inner loop marks: for each run of the inner loop, the bytes of the messages sent
    /// between its last two marks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inner_marked_bytes: Vec<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimelineEvent {
    pub rank: u32,
    /// compute, send, recv, wait, barrier, allreduce, ...
    pub kind: String,
    pub start_s: f64,
    pub end_s: f64,
}

/// What `mpicast trace` ran to produce a trace directory (`meta.json` next to the rank files and
/// the program's `analysis.json`, whose `blocks` indices are the ids in `compute blocks` lines).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceMeta {
    /// The program's name (the source file's stem, or the source directory's name).
    pub program: String,
    /// The source files or directory given, as given.
    pub source: String,
    /// The program's arguments.
    pub args: Vec<String>,
    pub ranks: u32,
    /// The build command run on the instrumented copy.
    pub build: String,
    /// The launch command (mpirun ... -np N program args).
    pub launch: Vec<String>,
    /// Every block counted (`--all-blocks`), or only those the analysis could not count.
    pub all_blocks: bool,
    /// Bursts carry their measured duration (`time=`).
    pub time_blocks: bool,
    /// Indices (into the analysis' `blocks`) of the blocks that have a trace point.
    pub counted_blocks: Vec<u32>,
    /// Blocks that should have had a trace point but could not get one, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncounted_blocks: Vec<UncountedBlock>,
    /// Set when only some iterations of the time-step loop ran (`--sample-iterations`): the trace
    /// holds `sampled_iterations` of `trip_count` iterations and is meant to be extrapolated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
    /// The measured ranges of irregular references (the run's address probes): what a
    /// prediction from this trace takes as their reuse distance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub footprints: Vec<Footprint>,
    /// The calls into code the analysis does not see, as the run timed them: what a prediction
    /// from this trace charges per call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<TimedCall>,
    /// The counted loops' entries and the exits a branch predictor missed in them (the ranks
    /// together): a prediction from this trace charges `branch_miss` per entry at their rate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loop_exits: Vec<LoopExits>,
    /// Every rank reached MPI_Finalize.
    pub complete: bool,
    pub rank_traces: Vec<RankTrace>,
    /// mpirun's exit status (None: killed by a signal).
    pub exit_status: Option<i32>,
    /// Wall-clock seconds of the instrumented mpirun.
    pub instrumented_wall_s: f64,
    /// Wall-clock seconds of the same program built without instrumentation, same arguments,
    /// when measured (`--compare-plain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plain_wall_s: Option<f64>,
    /// The work directory, when it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_dir: Option<String>,
}

impl Artifact for TraceMeta {
    const SCHEMA: &'static str = "mpicast/tracemeta";
    const VERSION: u32 = 1;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UncountedBlock {
    pub block: u32,
    pub id: String,
    pub reason: String,
}

/// The outermost time-step loop of main, cut short.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Sampling {
    /// Index of the loop in the analysis' `blocks`.
    pub block: u32,
    /// Its stable id (`file:line:column:loop`).
    pub block_id: String,
    /// Iterations the full run would make (from the analysis, with the program's arguments).
    pub trip_count: u64,
    /// Iterations that ran.
    pub sampled_iterations: u64,
}

/// A counted loop in the traced run (the ranks together): its entries, and those whose trip
/// differed from the entry before or exceeded `PREDICTED_TRIP` (a missed exit each).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoopExits {
    /// The loop's index in the analysis.
    pub block: u32,
    pub entries: u64,
    pub misses: u64,
}

/// A call into code the analysis does not see, timed in the traced run (the ranks together).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimedCall {
    /// The block (its index in the analysis) and the call (its index in the block's `opaque`).
    pub block: u32,
    pub call: u32,
    pub func: String,
    /// Calls made, and how many of them were timed (the first 1,024 on each rank, then one in 16).
    pub calls: u64,
    pub timed: u64,
    /// Nanoseconds per timed call, the clock's own cost taken off (at least 0).
    pub ns: f64,
    /// What timing a call costs itself (the ranks' mean): a call measured below it is left to
    /// its `call` op (the timing's error is as large as the call).
    #[serde(default)]
    pub clock_ns: f64,
}

/// What an irregular reference touched in the traced run (its first 2^20 accesses on each
/// rank, the ranks together).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Footprint {
    /// The block (its index in the analysis) and the reference (its index in the block's `mem`).
    pub block: u32,
    pub mem: u32,
    /// From its lowest address to its highest, plus an element: the largest over the ranks.
    pub bytes: u64,
    /// Accesses measured, all ranks.
    pub accesses: u64,
    /// The share of them whose cache line was among the 64 the reference had touched last:
    /// near 1 for a few streams through the range (`out[fill[b]++] = x`), near 0 for accesses
    /// at random over it.
    pub line_reuse: f64,
}

/// One rank's trace file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankTrace {
    pub rank: u32,
    /// False when the rank did not reach MPI_Finalize (crashed, killed, aborted, exited early):
    /// its file holds what it wrote before, and ends with an `# incomplete` comment.
    pub complete: bool,
    pub bytes: u64,
    /// MPI events recorded (when the rank wrote its statistics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<u64>,
    /// Estimated cost of the clock reads of `--time-blocks`, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing_overhead_s: Option<f64>,
    /// What one block-counter increment adds to a busy loop on the traced host, ns, as the
    /// runtime measured it (`--time-blocks`); `predict --measured` takes it off each burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counter_ns: Option<f64>,
    /// Block-counter increments the rank made (`--time-blocks`): what its counter_ns is spread
    /// over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub increments: Option<u64>,
    /// Polls that found nothing (MPI_Test and its kin) and their wall time, written into the
    /// trace as `compute S` lines (counting mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polls: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_s: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::RankList;

    #[test]
    fn rank_lists_keep_their_members_in_order_as_merged_runs() {
        let cases: [&[u32]; 7] = [&[0, 1, 2, 3], &[3, 2, 1, 0], &[5, 6, 5, 4, 9], &[7], &[2, 2, 3], &[0, 2, 4], &[1, 0, 1, 2, 8, 7]];
        for v in cases {
            let l = RankList::from(v.to_vec());
            assert_eq!(l.to_vec(), v, "{v:?}: {:?}", l.runs());
            assert_eq!(l.len(), v.len());
            for (i, &x) in v.iter().enumerate() {
                assert_eq!(l.position(x), v.iter().position(|&y| y == x), "{v:?} {x}");
                assert!(l.contains(x));
                let _ = i;
            }
            assert_eq!(l.max(), v.iter().copied().max());
            // Appending runs makes the same list as appending members.
            let mut by_runs = RankList::default();
            for &(a, b) in l.runs() {
                by_runs.push_run(a, b);
            }
            assert_eq!(by_runs, l);
        }
        assert_eq!(RankList::from(vec![0, 1, 2, 3]).runs(), &[(0, 3)]);
        assert_eq!(RankList::from(vec![5, 6, 5, 4, 9]).runs(), &[(5, 6), (5, 4), (9, 9)]);
        // A run that turns back after a single member is split where members alone split it.
        let mut l = RankList::default();
        l.push(5);
        l.push_run(6, 4);
        assert_eq!(l, RankList::from(vec![5, 6, 5, 4]));
    }

    #[test]
    fn the_world_and_its_reverse_are_one_run_each() {
        let n = 1 << 20;
        let w = RankList::world(n);
        assert!(w.is_world(n) && !w.is_world(n - 1));
        assert_eq!((w.len(), w.runs().len(), w.position(777), w.contains(n)), (n as usize, 1, Some(777), false));
        let r: RankList = (0..n).rev().collect();
        assert_eq!((r.runs(), r.position(0), r.position(n - 1)), (&[(n - 1, 0)][..], Some(n as usize - 1), Some(0)));
        assert!(!r.is_world(n));
        assert!(RankList::world(1).is_world(1));
        assert_eq!(serde_json::to_string(&RankList::from(vec![2, 1, 0, 5])).unwrap(), "[2,1,0,5]");
    }
}
