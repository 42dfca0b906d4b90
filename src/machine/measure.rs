//! The measurement plan: which kernels run on which working set, how many iterations make a
//! sample, samples taken in rounds (every kernel once per round, so a burst of load from
//! elsewhere spoils one sample of many kernels rather than all samples of one), and the
//! reduction of samples to per-op costs.
//!
//! The host's regime. A shared host computes at more than one speed: on the 2-core AMD EPYC
//! VM, an L1 loop body of loads and stores (cal_axpy) ran 0.75 to 0.8 ns per body for seconds
//! at a time and 1.6 to 1.8 ns for most of the rest, with library calls (rand, exp, malloc,
//! printf) 1.6x to 1.8x slower in the slow stretches and dependent chains (a divide's latency)
//! unchanged: a core whose sibling runs another tenant's work. A table whose kernels each
//! landed in whichever regime their samples met mixed the two, and three tables measured back
//! to back fitted rand at 7.0, 8.2 and 8.7 ns. So a short probe (the same loop body, about a
//! millisecond) runs before every sample; the median of the probe times over the whole
//! measurement is the host's typical speed, and every kernel's cost is the median of its
//! samples, each brought to it along the kernel's own slope (`to_centre`, `Results::counted`),
//! with more samples taken where fewer than 3 fell within [`REGIME_BAND`] of it. The median,
//! not the densest band:
//! on the 2-core Intel Xeon VM of 2026-12-02 the probe (an L1 loop of 1,024 multiply-adds) ran
//! 330 to 944 ns per body over 10 s (10th, 50th and 90th percentiles 341, 477 and 672), moving
//! between speeds every second or so, and the densest band sat at its fast end (453 ns, 31% of
//! the samples): every table-costed prediction was 15-30% under the median of five runs. Where
//! one regime holds most of the time (the AMD VM), the median lies in its band anyway.

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
/// The probe run before every sample: an L1 loop body of loads, stores and floating-point
/// work (microbench/mtc_calib.c), whose time moves the most between the host's regimes.
pub const PROBE_KERNEL: &str = "cal_axpy";
/// Wall time of one probe run.
const PROBE_MS: f64 = 1.0;
/// The same in nanoseconds.
pub const PROBE_NS: f64 = PROBE_MS * 1e6;
/// A sample counts when its probe ran within this factor of the host's typical speed (either
/// way). On the AMD VM the slow regime's probes spread over about +-12% (10th to 90th
/// percentile) and the fast regime's lay 2x below it.
pub const REGIME_BAND: f64 = 1.15;
/// Samples within the band each kernel needs (fewer when fewer samples were asked).
const MIN_IN_REGIME: usize = 3;

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
    /// The probe's ns per iteration just before each sample (empty: no probe ran).
    pub probe: Vec<f64>,
}

/// Every job's samples, by key.
#[derive(Debug, Default)]
pub struct Results {
    pub jobs: BTreeMap<JobKey, Job>,
    /// The regime the costs are taken in (absent: every sample counts).
    pub regime: Option<crate::model::machine::Regime>,
    /// Iterations of one probe run (absent: no probe ran).
    pub probe_iters: Option<u64>,
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
        let iters = calibrate(driver, k, target_ns)?;
        results.jobs.insert(k.clone(), Job { iters, ..Job::default() });
        progress.inc(1);
    }
    let probe = match keys.iter().any(|k| k.kernel == PROBE_KERNEL) {
        true => Some(calibrate(driver, &key(PROBE_KERNEL, 0), PROBE_MS * 1e6)?),
        false => None,
    };
    let sample = |driver: &mut Driver, job: &mut Job, k: &JobKey| -> Result<()> {
        if let Some(pi) = probe {
            let p = driver.run(PROBE_KERNEL, pi, 0)?;
            job.probe.push(p.ns / pi as f64);
        }
        let s = driver.run(&k.kernel, job.iters, k.ws_bytes)?;
        let n = job.iters as f64;
        job.per_iter.push(Sample {
            ns: s.ns / n,
            wall_ns: s.wall_ns / n,
            cycles: s.cycles.map(|c| c / n),
            instructions: s.instructions.map(|c| c / n),
        });
        Ok(())
    };
    for round in 0..samples {
        for k in keys {
            progress.set_message(format!("sample {}/{samples}: {}", round + 1, k.kernel));
            let job = results.jobs.get_mut(k).expect("calibrated above");
            for _ in 0..per_round(k) {
                sample(driver, job, k)?;
            }
            progress.inc(1);
        }
    }
    results.probe_iters = probe;
    if probe.is_none() {
        return Ok(results);
    }
    let all: Vec<f64> = results.jobs.values().flat_map(|j| j.probe.iter().copied()).collect();
    let centre = typical(&all);
    let within = |p: f64| p >= centre / REGIME_BAND && p <= centre * REGIME_BAND;
    let share = all.iter().filter(|&&p| within(p)).count() as f64 / all.len().max(1) as f64;
    // Kernels with too few samples in the regime get more, up to twice the samples asked.
    let need = MIN_IN_REGIME.min(samples as usize);
    let mut extra = 0u32;
    for k in keys {
        let job = results.jobs.get_mut(k).expect("calibrated above");
        let mut tries = 0;
        while job.probe.iter().filter(|&&p| within(p)).count() < need && tries < 2 * samples {
            progress.set_message(format!("more samples in the host's regime: {}", k.kernel));
            sample(driver, job, k)?;
            tries += 1;
            extra += 1;
        }
    }
    let short = results
        .jobs
        .values()
        .filter(|j| j.probe.iter().filter(|&&p| within(p)).count() < need)
        .count() as u32;
    results.regime = Some(crate::model::machine::Regime {
        probe_kernel: PROBE_KERNEL.to_string(),
        probe_ns: centre,
        band: REGIME_BAND,
        share,
        probe_min_ns: all.iter().copied().fold(f64::INFINITY, f64::min),
        probe_max_ns: all.iter().copied().fold(0.0, f64::max),
        extra_samples: extra,
        kernels_short: short,
    });
    Ok(results)
}

impl Results {
    /// Runs the probe once: whether the host is in the measurement's regime now (true where
    /// there is none).
    pub fn in_regime(&self, driver: &mut Driver) -> Result<bool> {
        let (Some(pi), Some(r)) = (self.probe_iters, &self.regime) else { return Ok(true) };
        let p = driver.run(PROBE_KERNEL, pi, 0)?;
        Ok(r.contains(p.ns / pi as f64))
    }
}

/// Samples of `k` per round: three of the overlap kernels, whose times are compared with one
/// another (the level's excess over the core's time, a few percent, decides how the level
/// overlaps work: predict::memory's exponent), one of the rest.
fn per_round(k: &JobKey) -> u32 {
    if k.kernel.starts_with("mem_overlap") {
        3
    } else {
        1
    }
}

/// Iterations of `k` that take at least `target_ns`.
fn calibrate(driver: &mut Driver, k: &JobKey, target_ns: f64) -> Result<u64> {
    let mut iters = FIRST_ITERS;
    loop {
        let s = driver.run(&k.kernel, iters, k.ws_bytes)?;
        if s.ns >= target_ns {
            return Ok(iters);
        }
        let factor = (target_ns * 1.15 / s.ns.max(1.0)).clamp(1.5, 1000.0);
        iters = ((iters as f64) * factor).ceil() as u64;
    }
}

/// The host's typical speed over probe times `v`: their median (see the module's note).
pub fn typical(v: &[f64]) -> f64 {
    median(&v.iter().copied().filter(|x| x.is_finite() && *x > 0.0).collect::<Vec<_>>())
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

/// Samples fewer than this keep their times as taken (`to_centre`).
const MIN_FOR_SLOPE: usize = 5;
/// The largest slope `to_centre` applies.
const MAX_SLOPE: f64 = 1.5;

/// Within a regime the host still drifts: on the AMD VM the probe's median moved from 520 to
/// 860 ns between driver processes a few seconds apart, and an L1 multiply-add stream
/// (mem_overlap) and a matrix-multiply body moved with it (their ratios to the probe within 9%
/// and 14%; the times themselves 60% and 45%), a divide chain not at all. Each sample's time
/// `v` is brought to the probe's `centre` along the kernel's own slope: the least-squares
/// slope b of log time on log probe over the samples (clamped to [0, 1.5]; 0 with fewer than
/// 5), each time multiplied by (centre / probe)^b.
pub fn to_centre(v: &[Sample], probe: &[f64], centre: f64) -> Vec<Sample> {
    let n = v.len().min(probe.len());
    let b = if n < MIN_FOR_SLOPE || !(centre > 0.0) {
        0.0
    } else {
        let x: Vec<f64> = probe[..n].iter().map(|p| p.max(1e-300).ln()).collect();
        let y: Vec<f64> = v[..n].iter().map(|s| s.ns.max(1e-300).ln()).collect();
        let (mx, my) = (x.iter().sum::<f64>() / n as f64, y.iter().sum::<f64>() / n as f64);
        let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
        let sxy: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
        if sxx > 0.0 { (sxy / sxx).clamp(0.0, MAX_SLOPE) } else { 0.0 }
    };
    v[..n]
        .iter()
        .zip(probe)
        .map(|(s, &p)| {
            let f = if b > 0.0 && p > 0.0 { (centre / p).powf(b) } else { 1.0 };
            Sample { ns: s.ns * f, wall_ns: s.wall_ns * f, cycles: s.cycles.map(|c| c * f), instructions: s.instructions }
        })
        .collect()
}

/// Medians per iteration of some samples: ns, cycles, instructions.
fn sample_medians(v: &[Sample]) -> (f64, Option<f64>, Option<f64>) {
    let ns = median(&v.iter().map(|s| s.ns).collect::<Vec<_>>());
    let opt = |f: fn(&Sample) -> Option<f64>| -> Option<f64> {
        let x: Vec<f64> = v.iter().filter_map(f).collect();
        (x.len() == v.len() && !x.is_empty() && x.iter().any(|&x| x > 0.0)).then(|| median(&x))
    };
    (ns, opt(|s| s.cycles), opt(|s| s.instructions))
}

impl Results {
    /// The samples of `job` that count, where there is a regime: every sample brought to the
    /// host's typical speed along the kernel's own slope (`to_centre`), where there are enough
    /// for a slope; else those taken within the band, or every one where none was. Not only
    /// those within the band: on the Intel VM, where 13-29% of the samples fell within +-15%
    /// of the probe's median, three tables measured back to back had costs from 3 to 5 samples
    /// each, L2 overlap loads 0.44 to 0.60 ns and the resource factor 0.87 to 1.03.
    pub fn counted(&self, job: &Job) -> Vec<Sample> {
        let Some(r) = &self.regime else { return job.per_iter.clone() };
        if job.probe.len() != job.per_iter.len() {
            return job.per_iter.clone();
        }
        if job.per_iter.len() >= MIN_FOR_SLOPE {
            return to_centre(&job.per_iter, &job.probe, r.probe_ns);
        }
        let (v, p): (Vec<Sample>, Vec<f64>) = job.per_iter.iter().zip(&job.probe).filter(|(_, &p)| r.contains(p)).map(|(s, &p)| (*s, p)).unzip();
        if v.is_empty() {
            return job.per_iter.clone();
        }
        to_centre(&v, &p, r.probe_ns)
    }

    /// Per-op cost of `kernel`: (kernel time - baseline time) / ops, per iteration, with spread.
    pub fn measure(
        &self,
        kernel: &JobKey,
        ops_per_iter: f64,
        baseline: Option<&JobKey>,
    ) -> Measure {
        let samples = self.counted(&self.jobs[kernel]);
        let (base_ns, base_cyc, base_ins) = match baseline.and_then(|b| self.jobs.get(b)) {
            Some(b) => sample_medians(&self.counted(b)),
            None => (0.0, Some(0.0), Some(0.0)),
        };
        let raw: Vec<f64> = samples.iter().map(|s| s.ns).collect();
        let per_op: Vec<f64> = raw.iter().map(|ns| (ns - base_ns) / ops_per_iter).collect();
        let (kmed, kcyc, kins) = sample_medians(&samples);
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
            samples: samples.len() as u32,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::machine::Regime;

    fn s(ns: f64) -> Sample {
        Sample { ns, wall_ns: ns, cycles: None, instructions: None }
    }

    #[test]
    fn the_typical_speed_is_the_median_probe_not_the_fast_end() {
        // Probes as the AMD VM gave them: a fast stretch near 0.75, most near 1.7. The typical
        // speed lies in the slow stretch's band.
        let mut v = vec![0.72, 0.75, 0.76, 0.80, 1.10];
        v.extend([1.45, 1.59, 1.62, 1.66, 1.69, 1.70, 1.72, 1.77, 1.84, 2.2]);
        let c = typical(&v);
        assert!((1.7 / REGIME_BAND..1.7 * REGIME_BAND).contains(&c), "{c}");
        // As the Intel VM gave them: a continuum from 330 to 944 ns whose densest band is at
        // its fast end (a third of the probes near 340); the typical speed is the middle one.
        let mut w: Vec<f64> = (0..30).map(|i| 330.0 + i as f64).collect();
        w.extend((0..70).map(|i| 380.0 + 8.0 * i as f64));
        let t = typical(&w);
        assert!((520.0..560.0).contains(&t), "{t}");
        assert!(typical(&[f64::NAN, -1.0]).is_nan());
    }

    #[test]
    fn samples_come_to_the_regimes_centre_along_the_kernels_own_slope() {
        // A kernel that takes 0.01 of the probe's time, and one that ignores the probe.
        let probe = [500.0, 600.0, 700.0, 800.0, 900.0];
        let moved: Vec<Sample> = probe.iter().map(|p| s(p * 0.01)).collect();
        let flat: Vec<Sample> = probe.iter().map(|_| s(3.0)).collect();
        for x in to_centre(&moved, &probe, 700.0) {
            assert!((x.ns - 7.0).abs() < 1e-9, "{x:?}");
        }
        assert!(to_centre(&flat, &probe, 700.0).iter().all(|x| x.ns == 3.0));
        // Too few samples for a slope: as taken.
        assert_eq!(to_centre(&moved[..4], &probe[..4], 700.0)[0].ns, 5.0);
    }

    #[test]
    fn costs_are_every_sample_brought_to_the_typical_speed() {
        let mut r = Results::default();
        // Kernel samples: 10 ns in the slow regime (probe 1.7), 6 ns in the fast (probe 0.75).
        let job = Job {
            iters: 1,
            per_iter: vec![s(10.0), s(6.0), s(10.2), s(6.1), s(9.9), s(6.0), s(6.0)],
            probe: vec![1.7, 0.75, 1.68, 0.76, 1.72, 0.74, 0.75],
        };
        r.jobs.insert(key("k", 0), job);
        // Without a regime the median of all is the fast one (4 of 7).
        assert_eq!(r.measure(&key("k", 0), 1.0, None).ns_per_op, 6.1);
        r.regime = Some(Regime {
            probe_kernel: PROBE_KERNEL.into(),
            probe_ns: 1.7,
            band: REGIME_BAND,
            share: 3.0 / 7.0,
            probe_min_ns: 0.74,
            probe_max_ns: 1.72,
            extra_samples: 0,
            kernels_short: 0,
        });
        // All seven count, the fast ones brought to the slow speed along the kernel's slope.
        let m = r.measure(&key("k", 0), 1.0, None);
        assert!((m.ns_per_op - 10.0).abs() < 0.2 && m.samples == 7, "{m:?}");
        // With too few for a slope: those in the band, or all where none was.
        r.jobs.insert(key("few", 0), Job { iters: 1, per_iter: vec![s(10.0), s(6.0), s(6.1)], probe: vec![1.7, 0.75, 0.76] });
        let m = r.measure(&key("few", 0), 1.0, None);
        assert_eq!((m.ns_per_op, m.samples), (10.0, 1));
        r.jobs.insert(key("f", 0), Job { iters: 1, per_iter: vec![s(6.0), s(6.2), s(6.4)], probe: vec![0.75; 3] });
        assert_eq!(r.measure(&key("f", 0), 1.0, None).ns_per_op, 6.2);
    }
}
