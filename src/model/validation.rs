//! A validation (`mpicast validate --json`, schema `mpicast/validation`, version 1): a program
//! run for real at several rank counts and predicted in every mode, with the error of each
//! prediction against the measured median.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Artifact;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Validation {
    /// The source files, as given.
    pub program: Vec<String>,
    /// Program arguments.
    pub args: Vec<String>,
    /// The build command (mpicc -O2 ...).
    pub build: Vec<String>,
    /// The launch command of the real runs, with `{n}` for the rank count.
    pub launch: Vec<String>,
    /// Real runs per rank count.
    pub runs: u32,
    /// The platform predictions ran on (the file predict reported; "(default)" before any ran).
    pub platform: String,
    /// Cores per host forced on the platform (`--cores-per-host`), when any.
    pub cores_per_host: Option<u32>,
    /// The machine table (the file predict reported).
    pub machine: String,
    /// Where it ran.
    pub host: ValidationHost,
    /// The modes asked for, in order: static, trace, measured, scaled.
    pub modes: Vec<String>,
    /// One point per rank count, ascending.
    pub points: Vec<ValidationPoint>,
    /// Per mode: mean absolute percentage error over the points where the mode predicted.
    pub summary: BTreeMap<String, ModeSummary>,
    /// The `--max-error` bound in percent, when given.
    pub max_error_pct: Option<f64>,
    /// Seconds since the Unix epoch when the validation started.
    pub started_unix_s: u64,
    pub wall_s: f64,
}

impl Artifact for Validation {
    const SCHEMA: &'static str = "mpicast/validation";
    const VERSION: u32 = 1;
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ValidationHost {
    pub hostname: String,
    pub cpu_model: String,
    /// Online logical CPUs.
    pub cores: u32,
    /// /proc/loadavg's 1, 5 and 15 minute figures before the first run and after the last.
    pub load_before: [f64; 3],
    pub load_after: [f64; 3],
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ValidationPoint {
    pub ranks: u32,
    /// The real runs; None when they failed (`failure` says why).
    pub measured: Option<Measured>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// One entry per mode asked for, in the order of `modes`.
    pub predictions: Vec<ModeResult>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Measured {
    /// Median, minimum and maximum over the runs, seconds.
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    /// Every run's time, in the order they ran.
    pub runs_s: Vec<f64>,
    /// What `runs_s` holds: "span" (MPI_Init's return to MPI_Finalize's call, slowest rank),
    /// "elapsed_s" (the program's own `elapsed_s=` line) or "wall" (mpirun's wall clock).
    pub source: String,
    /// mpirun's wall clock of each run (start-up included).
    pub wall_s: Vec<f64>,
    /// Each run's span, when every run gave one (empty otherwise).
    #[serde(default)]
    pub span_s: Vec<f64>,
    /// Each run's start-up and shut-down: wall - span (empty without spans).
    #[serde(default)]
    pub startup_s: Vec<f64>,
    /// Each run's own `elapsed_s=`, when every run printed one (empty otherwise).
    #[serde(default)]
    pub elapsed_s: Vec<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModeResult {
    /// static, trace, measured or scaled.
    pub mode: String,
    /// "ok" (predicted) or "n/a" (`reason` says why).
    pub status: String,
    pub predicted_s: Option<f64>,
    pub interval_s: Option<[f64; 2]>,
    /// 100 x (predicted - measured median) / measured median.
    pub error_pct: Option<f64>,
    /// Ranks of the instrumented run (trace, measured and scaled modes).
    pub trace_ranks: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The `mpicast predict` command line (after `mpicast`).
    pub command: Vec<String>,
    /// Wall time of the prediction, tracing included.
    pub wall_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModeSummary {
    /// Points predicted in this mode.
    pub points: u32,
    /// Points where the mode was n/a.
    pub unavailable: u32,
    /// Mean absolute percentage error over the predicted points (None when there are none).
    pub mape_pct: Option<f64>,
    /// Largest absolute error, percent.
    pub max_abs_error_pct: Option<f64>,
}
