//! A sweep (`mpicast sweep --json`, schema `mpicast/sweep`): one program predicted at several
//! rank counts on one or more platforms, with speedup and efficiency per point.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Artifact;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Sweep {
    /// The source files analysed.
    pub program: Vec<String>,
    /// Program arguments given after `--`.
    pub args: Vec<String>,
    pub bindings: BTreeMap<String, f64>,
    /// How each point was predicted: "static", "trace", "scaled from K ranks".
    pub mode: String,
    /// "program" (the program's own decomposition, from its symbolic counts), "weak" or "strong".
    pub scaling: String,
    /// Ranks of the trace scaled from, when the points were scaled.
    pub trace_ranks: Option<u32>,
    /// The platforms, in the order given.
    pub platforms: Vec<String>,
    /// The rank counts, ascending.
    pub ranks: Vec<u32>,
    /// One point per platform and rank count, platforms in order, ranks ascending within each.
    pub points: Vec<SweepPoint>,
    /// Topology found (static and from the trace), when scaling was used.
    pub topology: Option<String>,
    pub assumptions: Vec<String>,
    pub wall_s: f64,
}

impl Artifact for Sweep {
    const SCHEMA: &'static str = "mpicast/sweep";
    const VERSION: u32 = 1;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SweepPoint {
    pub platform: String,
    pub ranks: u32,
    pub predicted_s: f64,
    pub interval_s: [f64; 2],
    /// T(base) x base / T(N), base the smallest rank count of the sweep on this platform
    /// (T(1)/T(N) when the sweep starts at 1).
    pub speedup: f64,
    /// speedup / N.
    pub efficiency: f64,
    /// Compute, communication and waiting of the critical (last finishing) rank, seconds.
    pub compute_s: f64,
    pub comm_s: f64,
    pub wait_s: f64,
    pub messages: u64,
    /// Wall time of this point's prediction.
    pub wall_s: f64,
}
