//! The prediction (`mpicast predict --json`, schema `mpicast/prediction`, version 1): the
//! predicted run time of a program on N ranks on a platform, how it splits per rank, which blocks
//! and functions cost the most, and what the prediction assumed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ops::OpClass;
use super::trace::{HostStats, LinkStats, RankStats, TimelineEvent};
use super::Artifact;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Prediction {
    /// The source files analysed.
    pub program: Vec<String>,
    /// Program arguments given after `--`.
    pub args: Vec<String>,
    pub ranks: u32,
    /// Parameter values used (from program arguments, -D, or the program's own defaults).
    pub bindings: BTreeMap<String, f64>,
    /// "static" (skeleton execution of the analysis) or "trace" (an instrumented run's counts).
    pub mode: String,
    pub platform: String,
    pub machine: MachineRef,
    /// "raw" (throughput costs) or "fitted" (calibration fit).
    pub costs: String,
    /// What-if knobs applied (cpu_scale, bw_scale, lat_scale, background_load, ...).
    pub what_if: BTreeMap<String, f64>,
    /// Predicted time: when the last rank finishes, seconds.
    pub predicted_s: f64,
    /// A range from the machine table's spread (min and max per class) and from data-dependent
    /// branches taken never or always instead of half the time.
    pub interval_s: [f64; 2],
    pub ranks_detail: Vec<RankStats>,
    pub hosts: Vec<HostStats>,
    pub links: Vec<LinkStats>,
    /// Hottest blocks over all ranks (at most 10 unless asked).
    pub blocks: Vec<BlockCost>,
    /// Per function, including what it calls.
    pub functions: Vec<FunctionCost>,
    /// Compute seconds per op class, summed over all ranks.
    pub op_classes: BTreeMap<OpClass, f64>,
    /// What the prediction had to assume (data-dependent branches, sampled loops...).
    pub assumptions: Vec<String>,
    pub warnings: Vec<String>,
    /// Messages simulated and wall time of the simulation, and of the whole prediction.
    pub messages: u64,
    pub simulation_wall_s: f64,
    pub wall_s: f64,
    /// The main loop simulated for a few iterations, the rest added (steady-state folding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub folded: Option<crate::model::trace::FoldInfo>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<TimelineEvent>,
    /// Set when the traces were scaled from fewer (or more) ranks than predicted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<Scaling>,
    /// Set when the static path could not resolve the program and the prediction came from a
    /// traced run instead: where it stopped (file:line, what) and the run it fell back to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Fallback>,
    /// How the traced run was built and launched (trace modes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launch: Vec<String>,
    /// Static path: what each rank prints (printf, puts), as the evaluation computed it; `?`
    /// stands for a value known only at run time.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_output: Vec<RankOutput>,
    /// Static path: data-dependent branch arms charged at the assumed rate, nothing having
    /// measured theirs (block id -> rate); not written (a check against a trace fits them).
    #[serde(skip)]
    pub arm_rates: BTreeMap<String, f64>,
    /// On this host's own platform: the launcher's start-up (mpirun's wall clock less the
    /// span `predicted_s` covers), as measured on this host (mpicast/startup), and the rank
    /// count it was measured at; the wall clock of a run is about predicted_s + startup_s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_ranks: Option<u32>,
    /// On this host's own platform with its own machine table: how far runs here landed from
    /// predictions of this mode (`mpicast validate`'s records), which `interval_s` then covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// What validated predictions on this host say of a prediction's error.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// static, trace, measured or scaled.
    pub mode: String,
    /// The machine table's `created_unix_s`: records of another table do not count.
    pub table_created_unix_s: u64,
    /// Validated predictions of this mode with this table.
    pub validations: u32,
    /// The 5th and 95th percentiles of measured over predicted time, each record over its
    /// table's median, times this table's median (1 below 5 validations); absent where no
    /// table of the host has 5 (the interval is then the table's spread alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<[f64; 2]>,
    /// How many of the newest 100 records that made `ratio` are of the host's earlier tables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier_tables: Option<u32>,
}

impl Calibration {
    /// Validations a mode needs before they widen its interval.
    pub const MIN_VALIDATIONS: usize = 5;
}

/// One rank's printed lines.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankOutput {
    pub rank: u32,
    pub lines: Vec<String>,
}

/// Why a prediction asked for the static path came from a traced run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Fallback {
    /// The static path's one-line reason.
    pub static_error: String,
    /// Ranks of the traced run.
    pub traced_ranks: u32,
}

/// How traces of `from_ranks` ranks were rewritten for `to_ranks`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Scaling {
    pub from_ranks: u32,
    pub to_ranks: u32,
    /// The topology used, at the traced size and at the predicted one (e.g. "2D mesh 2x2" and
    /// "2D mesh 4x4").
    pub topology: String,
    pub scaled_topology: String,
    /// What the trace's communication graph shows, and what the source says (None: not
    /// recognised), with the evidence.
    pub trace_topology: Option<String>,
    pub static_topology: Option<String>,
    pub evidence: Vec<String>,
    /// "agree", "disagree: ...", "trace only", "static only", "forced".
    pub agreement: String,
    /// "program", "weak" or "strong".
    pub mode: String,
    /// Share of the traced compute (weighted by cost) whose new execution counts came from the
    /// front end's formulas (program mode).
    pub formula_share: f64,
    /// Messages resized by a communication site's formula, by the decomposition's faces, kept.
    pub messages_by_formula: u64,
    pub messages_by_faces: u64,
    pub messages_kept: u64,
    pub notes: Vec<String>,
    /// Every traced block the scaling changed or kept, with what gave its new count.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<ScaledBlock>,
}

/// How scaling gave one block its executions at the new size.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScaledBlock {
    pub id: String,
    /// "formula" (the front end's count formulas at both sizes, with the static path's trips
    /// for loops it cannot count and its executions of functions called through a pointer),
    /// "kept" (the traced count: it depends on data or on nothing
    /// the formulas know), "weak" (kept, as asked), "strong" (divided evenly, as asked).
    pub by: String,
    /// Executions over all ranks in the trace and after scaling.
    pub traced: f64,
    pub scaled: f64,
    /// Share of the traced compute (seconds at nominal costs).
    pub share: f64,
}

impl Artifact for Prediction {
    const SCHEMA: &'static str = "mpicast/prediction";
    const VERSION: u32 = 1;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MachineRef {
    /// The machine table file.
    pub path: String,
    pub hostname: String,
    pub cpu_model: String,
    pub compiler: String,
    /// This host's speed now against the table's (`--host-speed`; this host's own table only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<HostSpeedRef>,
}

/// A host-speed check as a prediction reports it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostSpeedRef {
    /// Median over the calibration kernels of (wall time now) / (wall time in the table).
    pub factor: f64,
    /// Whether the table's times were scaled by it.
    pub applied: bool,
    pub probed_unix_s: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BlockCost {
    pub id: String,
    pub kind: String,
    pub function: String,
    pub file: String,
    pub line_start: u32,
    pub line_end: u32,
    /// Executions over all ranks.
    pub executions: f64,
    /// Compute seconds over all ranks.
    pub seconds: f64,
    /// Share of all ranks' compute time.
    pub share: f64,
    /// Seconds per op class over all ranks (the "instruction mode" split).
    pub op_seconds: BTreeMap<OpClass, f64>,
    /// The block's array references, priced at the cache level that serves them, when some
    /// come from beyond L1: `seconds` is the larger of the two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryShare>,
    /// The block's longest loop-carried chain (a scalar computed from its previous value), at
    /// the ops' latencies: `seconds` is at least this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<ChainShare>,
    /// Seconds the block's large allocations cost in page faults when first written (in
    /// `seconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_touch_s: Option<f64>,
    /// Seconds in calls into code the analysis does not see, as a traced run timed them (in
    /// `seconds`), and the callees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timed_calls: Option<TimedCallShare>,
}

/// The time of a block's timed calls, over all ranks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimedCallShare {
    pub funcs: Vec<String>,
    pub seconds: f64,
}

/// A loop-carried chain's time: the scalar and seconds over all ranks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ChainShare {
    pub var: String,
    pub seconds: f64,
}

/// The memory time of a block: its slowest level ("L2", "L3", "DRAM") and seconds over all
/// ranks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemoryShare {
    pub level: String,
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionCost {
    pub name: String,
    pub file: String,
    pub line_start: u32,
    /// Compute seconds of the function's own blocks over all ranks (callees not included).
    pub self_seconds: f64,
    pub share: f64,
}
