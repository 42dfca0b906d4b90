//! The network table (CTC): what `mpicast bench network` measured, the piecewise
//! latency/bandwidth model fitted to it, and the SimGrid settings that reproduce it.

use serde::{Deserialize, Serialize};

use super::Artifact;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NetworkTable {
    /// How the ping-pong was launched.
    pub launch: Launch,
    /// Wall time of the whole measurement, seconds.
    pub duration_s: f64,
    /// One-way times (round trip / 2), one row per size, ascending.
    pub pingpong: Vec<PingPongPoint>,
    /// MPI_Isend / MPI_Irecv post costs, ascending sizes.
    pub overheads: Vec<Overhead>,
    /// Collectives at `launch.ranks` ranks.
    pub collectives: Vec<CollectivePoint>,
    /// T(s) = latency_s + s / bandwidth_bytes_per_s on each size range, ascending.
    pub segments: Vec<Segment>,
    /// First size of every segment but the first.
    pub break_points_bytes: Vec<u64>,
    /// The break point taken for the eager/rendezvous switch (messages below it are sent eagerly);
    /// `None` when no break point raises the time.
    pub eager_threshold_bytes: Option<u64>,
    pub fit: FitQuality,
    pub smpi: SmpiSettings,
    /// Measured vs simulated ping-pong on the generated platform, when it was run.
    pub self_check: Option<SelfCheck>,
    /// Other processes' CPU use while it was measured (absent in tables written before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<super::load::HostLoad>,
    /// Both ranks sending to each other at once, per size (empty in tables written before it was
    /// measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exchange: Vec<ExchangePoint>,
    /// How the two directions of a link share it, from `exchange` (absent: not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplex: Option<Duplex>,
    /// Two ranks on the first host (shared memory or the host's loopback), measured when the
    /// ping-pong ran between two hosts: what co-located ranks and messages to oneself cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intra_host: Option<IntraHost>,
    /// Communicator constructors over the world at `launch.ranks` ranks, and what a replay
    /// simulates of them (empty in tables written before they were measured).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constructors: Vec<CtorPoint>,
}

/// One constructor timing of the ping-pong's `ctor` lines: `split` (into the world, into one
/// rank each, MPI_UNDEFINED), `dup` (of the world), and the references a replay simulates:
/// `ref_gather` (an allgather of 8 bytes), `ref_reduce` (three allreduces of one int), `self`
/// (a duplicate of MPI_COMM_SELF made and freed: the machine table's comm_create).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CtorPoint {
    pub name: String,
    /// The new communicator's size (0: MPI_COMM_NULL; 0 for the collectives).
    pub members: u32,
    pub reps: u64,
    /// Mean time per call (made and freed) of the slowest rank.
    pub mean_s: f64,
}

impl Artifact for NetworkTable {
    const SCHEMA: &'static str = "mpicast/network";
    const VERSION: u32 = 1;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Launch {
    /// The full command line run (launcher, options, program, program options).
    pub command: Vec<String>,
    /// Hosts given with --hosts (empty: this host).
    pub hosts: Vec<String>,
    pub ranks: u32,
    /// MPI_Get_processor_name of rank 0.
    pub host0: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PingPongPoint {
    pub size_bytes: u64,
    pub reps: u64,
    pub min_s: f64,
    pub median_s: f64,
    pub p90_s: f64,
    pub mean_s: f64,
    /// Standard error of the mean over the mean when sampling stopped.
    pub rel_stderr: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Overhead {
    pub size_bytes: u64,
    /// Median MPI_Isend post cost (receive pre-posted).
    pub send_s: f64,
    /// Median MPI_Irecv post cost (message not sent yet).
    pub recv_s: f64,
}

/// One size of the bidirectional exchange: both ranks post a receive and a send of `size_bytes`
/// at once; the time is per exchange (both directions done).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExchangePoint {
    pub size_bytes: u64,
    pub reps: u64,
    pub min_s: f64,
    pub median_s: f64,
}

/// The link sharing policy the exchange shows: at the largest exchanged size, the fastest
/// exchange over the fastest one-way ping-pong of the same size is about 1 when each direction
/// has its own bandwidth and about 2 when the directions share it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Duplex {
    pub size_bytes: u64,
    /// Fastest exchange / fastest one-way time at `size_bytes`.
    pub ratio: f64,
    /// SimGrid's sharing_policy for the host links: SPLITDUPLEX or SHARED.
    pub sharing_policy: String,
}

/// The ping-pong between two ranks on one host, fitted as the inter-host one is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IntraHost {
    /// The host both ranks ran on (MPI_Get_processor_name).
    pub host: String,
    pub command: Vec<String>,
    pub pingpong: Vec<PingPongPoint>,
    pub segments: Vec<Segment>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CollectivePoint {
    /// barrier, bcast, allreduce or alltoall.
    pub name: String,
    /// Bytes per call (alltoall: per peer); 0 for barrier.
    pub size_bytes: u64,
    pub ranks: u32,
    pub reps: u64,
    /// Mean time per call of the slowest rank.
    pub mean_s: f64,
    /// Fastest single call, slowest rank.
    pub min_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Segment {
    /// Smallest measured size in the segment.
    pub from_bytes: u64,
    /// Largest measured size in the segment.
    pub to_bytes: u64,
    pub latency_s: f64,
    pub bandwidth_bytes_per_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FitQuality {
    /// Sizes left out of the fit used to measure its error.
    pub heldout_sizes_bytes: Vec<u64>,
    /// Largest |fit - measured| / measured over the held-out sizes (fit on the other sizes).
    pub heldout_max_rel_error: f64,
    pub heldout_mean_rel_error: f64,
    /// Largest relative error of the final fit over the sizes it used.
    pub fit_max_rel_error: f64,
    /// Spikes left out of the fit: sizes slower than 1.5x a larger size (see network::fit::spikes);
    /// their medians still drive the SMPI factors.
    pub outlier_sizes_bytes: Vec<u64>,
}

/// The SimGrid side: one link of this latency and bandwidth per route, and `cfg` items that make
/// SMPI's model follow the measured curve.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SmpiSettings {
    pub link_latency_s: f64,
    pub link_bandwidth_bytes_per_s: f64,
    /// `name:value` items for SimGrid's --cfg that mpicast's simulator accepts (smpi/bw-factor,
    /// smpi/lat-factor, smpi/send-is-detached-thresh, network/crosstraffic); also in the
    /// platform's `<config>`.
    pub cfg: Vec<String>,
    /// smpi/os and smpi/or: SimGrid registers them only when SMPI itself is initialised (an
    /// s4u-only simulation aborts on them), so they are kept apart: pass them to smpirun or SMPI
    /// replay; mpicast's replay applies them as a sleep before a send and after a receive.
    pub smpi_only_cfg: Vec<String>,
    /// True when the measured post costs were larger than half the one-way time at some size and
    /// were scaled down for smpi/os and smpi/or.
    pub overheads_clamped: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SelfCheck {
    pub platform: String,
    pub rows: Vec<SelfCheckRow>,
    pub max_rel_error: f64,
    /// The bound it was held to.
    pub tolerance: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SelfCheckRow {
    pub size_bytes: u64,
    pub measured_s: f64,
    pub simulated_s: f64,
    /// The fitted segments' prediction.
    pub fitted_s: f64,
    pub rel_error: f64,
}
