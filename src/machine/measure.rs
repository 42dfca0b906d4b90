//! The measurement plan: which kernels run on which working set, how many iterations make a
//! sample, samples taken in rounds (every kernel once per round, so a burst of load from
//! elsewhere spoils one sample of many kernels rather than all samples of one), and the
//! reduction of samples to per-op costs.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

use super::driver::{Driver, Sample};
use crate::model::machine::Measure;

/// Iterations of the first calibration call of each kernel.
const FIRST_ITERS: u64 = 1000;
/// Floor for a cost the empty-loop subtraction leaves at zero or below.
pub const FLOOR_NS: f64 = 0.005;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobKey {
    pub kernel: String,
    pub ws_bytes: u64,
}

#[derive(Debug, Default)]
pub struct Job {
    pub iters: u64,
    /// Per kernel iteration: ns, cycles, instructions.
    pub per_iter: Vec<Sample>,
}

/// Every job's samples, by key.
#[derive(Debug, Default)]
pub struct Results {
    pub jobs: BTreeMap<JobKey, Job>,
}

pub fn key(kernel: &str, ws_bytes: u64) -> JobKey {
    JobKey {
        kernel: kernel.to_string(),
        ws_bytes,
    }
}

/// Runs every job: calibrates its iteration count to at least `min_sample_ms`, then takes
/// `samples` samples in rounds.
pub fn run_jobs(
    driver: &mut Driver,
    keys: &[JobKey],
    samples: u32,
    min_sample_ms: f64,
    progress: &ProgressBar,
) -> Result<Results> {
    let target_ns = min_sample_ms * 1e6;
    let mut results = Results::default();
    progress.set_length(keys.len() as u64 * (u64::from(samples) + 1));
    progress.set_style(
        ProgressStyle::with_template("{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    progress.set_prefix("mtc");
    for k in keys {
        progress.set_message(format!("calibrating {}", k.kernel));
        let mut iters = FIRST_ITERS;
        loop {
            let s = driver.run(&k.kernel, iters, k.ws_bytes)?;
            if s.ns >= target_ns {
                break;
            }
            let factor = (target_ns * 1.15 / s.ns.max(1.0)).clamp(1.5, 1000.0);
            iters = ((iters as f64) * factor).ceil() as u64;
        }
        results.jobs.insert(
            k.clone(),
            Job {
                iters,
                per_iter: Vec::new(),
            },
        );
        progress.inc(1);
    }
    for round in 0..samples {
        for k in keys {
            progress.set_message(format!("sample {}/{samples}: {}", round + 1, k.kernel));
            let job = results.jobs.get_mut(k).expect("calibrated above");
            let s = driver.run(&k.kernel, job.iters, k.ws_bytes)?;
            let n = job.iters as f64;
            job.per_iter.push(Sample {
                ns: s.ns / n,
                wall_ns: s.wall_ns / n,
                cycles: s.cycles.map(|c| c / n),
                instructions: s.instructions.map(|c| c / n),
            });
            progress.inc(1);
        }
    }
    Ok(results)
}

pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// Medians per iteration of one job: ns, cycles, instructions.
fn job_medians(j: &Job) -> (f64, Option<f64>, Option<f64>) {
    let ns = median(&j.per_iter.iter().map(|s| s.ns).collect::<Vec<_>>());
    let opt = |f: fn(&Sample) -> Option<f64>| -> Option<f64> {
        let v: Vec<f64> = j.per_iter.iter().filter_map(f).collect();
        (v.len() == j.per_iter.len() && !v.is_empty() && v.iter().any(|&x| x > 0.0))
            .then(|| median(&v))
    };
    (ns, opt(|s| s.cycles), opt(|s| s.instructions))
}

impl Results {
    /// Per-op cost of `kernel`: (kernel time - baseline time) / ops, per iteration, with spread.
    pub fn measure(
        &self,
        kernel: &JobKey,
        ops_per_iter: f64,
        baseline: Option<&JobKey>,
    ) -> Measure {
        let job = &self.jobs[kernel];
        let (base_ns, base_cyc, base_ins) = match baseline.and_then(|b| self.jobs.get(b)) {
            Some(b) => job_medians(b),
            None => (0.0, Some(0.0), Some(0.0)),
        };
        let raw: Vec<f64> = job.per_iter.iter().map(|s| s.ns).collect();
        let per_op: Vec<f64> = raw.iter().map(|ns| (ns - base_ns) / ops_per_iter).collect();
        let (kmed, kcyc, kins) = job_medians(job);
        let med = median(&per_op);
        // NaN (no samples) counts as clamped too.
        let clamped = med.is_nan() || med < FLOOR_NS;
        let min = per_op.iter().copied().fold(f64::INFINITY, f64::min);
        let max = per_op.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let rmin = raw.iter().copied().fold(f64::INFINITY, f64::min);
        let rmax = raw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let per = |k: Option<f64>, b: Option<f64>| Some(((k? - b?) / ops_per_iter).max(0.0));
        Measure {
            ns_per_op: if clamped { FLOOR_NS } else { med },
            min_ns: min.max(0.0),
            max_ns: max.max(FLOOR_NS),
            spread: if kmed > 0.0 {
                (rmax - rmin) / kmed
            } else {
                0.0
            },
            samples: job.per_iter.len() as u32,
            cycles_per_op: per(kcyc, base_cyc),
            instructions_per_op: per(kins, base_ins),
            clamped,
        }
    }

    /// Share of wall time the driver spent descheduled over all samples (1 - CPU / wall):
    /// how busy the machine was with other work.
    pub fn descheduled_fraction(&self) -> f64 {
        let (cpu, wall) = self
            .jobs
            .values()
            .flat_map(|j| j.per_iter.iter())
            .fold((0.0, 0.0), |(c, w), s| (c + s.ns, w + s.wall_ns));
        if wall > 0.0 {
            (1.0 - cpu / wall).max(0.0)
        } else {
            0.0
        }
    }

    /// True when some job has non-zero cycle counts.
    pub fn counted_cycles(&self) -> bool {
        self.jobs
            .values()
            .any(|j| j.per_iter.iter().any(|s| s.cycles.is_some_and(|c| c > 0.0)))
    }
}

/// Wall-clock helper for the whole run.
pub struct Stopwatch(Instant);
impl Stopwatch {
    pub fn start() -> Self {
        Stopwatch(Instant::now())
    }
    pub fn seconds(&self) -> f64 {
        self.0.elapsed().as_secs_f64()
    }
}

/// Unused-key guard: keys in order of first appearance, without duplicates.
pub fn dedup_keys(keys: Vec<JobKey>) -> Vec<JobKey> {
    let mut seen = HashMap::new();
    keys.into_iter()
        .filter(|k| seen.insert(k.clone(), ()).is_none())
        .collect()
}
