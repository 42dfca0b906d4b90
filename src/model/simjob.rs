//! A simulation job: what one child `mpicast simulate` process runs, and what it reports back.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Artifact;

/// A platform, SimGrid options and a set of actors, each pinned to a host with a list of actions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SimJob {
    pub platform: PathBuf,
    /// SimGrid `--cfg` items, `name:value`.
    #[serde(default)]
    pub cfg: Vec<String>,
    pub actors: Vec<ActorSpec>,
}

impl Artifact for SimJob {
    const SCHEMA: &'static str = "mpicast/simjob";
    const VERSION: u32 = 1;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ActorSpec {
    pub name: String,
    pub host: String,
    pub actions: Vec<SimAction>,
}

/// One step of an actor. Messages between two actors are matched in order (FIFO per pair).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum SimAction {
    /// Compute this many floating-point operations on the actor's host.
    Compute { flops: f64 },
    /// Send `bytes` to the actor named `to`; returns when the receiver has the message.
    Send { to: String, bytes: u64 },
    /// Receive the next message from the actor named `from`.
    Recv { from: String },
    /// Do nothing for this long.
    Sleep { seconds: f64 },
}

/// What a simulation reports.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SimOutcome {
    /// Simulated time when the last actor finished, seconds.
    pub end_time_s: f64,
    pub actors: Vec<ActorOutcome>,
    pub hosts: Vec<HostUsage>,
}

impl Artifact for SimOutcome {
    const SCHEMA: &'static str = "mpicast/simoutcome";
    const VERSION: u32 = 1;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ActorOutcome {
    pub name: String,
    pub host: String,
    pub finish_s: f64,
    pub compute_s: f64,
    pub comm_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostUsage {
    pub name: String,
    pub speed_flops: f64,
    pub cores: usize,
    pub computed_flops: f64,
}
