//! Whether this host still computes at the speed its machine table was measured at.
//!
//! A machine table is one hour's measurement. On a shared VM the same kernels ran 1.5x slower
//! seven hours after the table was measured (pi_dartboard predicted at 365 ms from the morning's
//! table, measured at 525 ms; a table measured then predicted 541 ms), and every table-costed
//! prediction was off by the drift before the model made any error of its own. `check` times
//! the table's own calibration kernels (real loop bodies, microbench/mtc_calib.c) again on the
//! wall clock and gives the median ratio to the thread CPU time they took in the table (the
//! clock the table's costs are in): the factor by which a run on this host now takes longer
//! (> 1) or less (< 1) than the table says, whether the core is slower or other work takes it. The check is cached
//! for [`TTL_S`] per table so that the predictions of one session (validate's modes, a sweep's
//! points) share one factor, and runs under the MTC's lock so that no two checks, and no check
//! and a table measurement, time each other.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{driver, kernels, measure, MachineTable, Variant};
use crate::model::ops::OpClass;

/// A check this recent is reused (seconds).
pub const TTL_S: u64 = 900;
/// Wall time of one timed run of a kernel.
const SAMPLE_MS: f64 = 10.0;
/// Timed runs per kernel (after one untimed run that warms its data); the fastest counts. Other
/// work on a shared host only ever adds time, and in bursts: with the median of 3, checks two
/// seconds apart during such a burst gave 1.23 and 1.45 for two tables whose costs agreed within
/// a few percent.
const SAMPLES: usize = 5;
/// A factor this close to 1 is within the check's own repeatability, and the table is used as
/// it is: on the development VM five checks of one table a few seconds apart ranged over 0.85 to
/// 1.02 and 0.98 to 1.17 of another, and applying such factors made two tables measured back to
/// back predict up to 11% apart where, as measured, they were within 5% (isort aside). The drift
/// the check is for is larger: 1.3 to 2.1 seven hours after a table was measured.
pub const DEADBAND: f64 = 0.15;

/// One calibration kernel, then and now.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProbeKernel {
    pub name: String,
    /// Thread CPU ns per kernel iteration when the table was measured (the fit's median).
    pub table_ns: f64,
    /// Wall ns per kernel iteration now (the fastest of the timed runs that count: see
    /// `regime`).
    pub now_ns: f64,
    /// Where the table has a regime: the check's view of it for this kernel. Absent in older
    /// checks and for tables without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regime: Option<ProbeRegime>,
}

/// How the timed runs of one kernel in a check fell against the table's regime (a probe before
/// each): those in it count; where none was, runs in a faster regime count as the table's
/// speed (the host passes through such stretches, and a run is as likely as the table was to
/// meet the dominant one), runs in a slower one count as they are (a host that drifted). On
/// the AMD VM a check whose fastest runs met a fast stretch gave 0.74 (cal_axpy 0.47), and
/// every table-costed prediction of the pass that followed was cut by a quarter while the
/// runs went at the table's speed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct ProbeRegime {
    pub in_regime: u32,
    pub faster: u32,
    pub slower: u32,
}

/// The outcome of a check (docs/FORMATS.md, mpicast/host-speed).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SpeedCheck {
    /// The machine table's `created_unix_s`.
    pub table_created_unix_s: u64,
    pub probed_unix_s: u64,
    /// Median over the kernels of now_ns / table_ns: > 1 when the host computes slower now.
    pub factor: f64,
    pub kernels: Vec<ProbeKernel>,
}

impl crate::model::Artifact for SpeedCheck {
    const SCHEMA: &'static str = "mpicast/host-speed";
    const VERSION: u32 = 1;
}

impl SpeedCheck {
    /// Whether the factor is outside the kernels' repeatability.
    pub fn drifted(&self) -> bool {
        (self.factor - 1.0).abs() > DEADBAND
    }
}

/// The calibration kernels of `table` with the thread CPU ns one kernel iteration took when the
/// table was measured (the fit's measure per body, a median, times the bodies per iteration).
/// CPU time, not the wall time of `co_run.kernels`: the table's costs are CPU time, and a table
/// measured while other processes ran has wall times up to 25% above its CPU times (two tables
/// measured back to back, the first with other processes on 0.35 CPUs, gave checks of 0.69 and
/// 0.93 a second apart, and predictions 42% apart from tables 5% apart).
fn reference_kernels(table: &MachineTable) -> Vec<(String, f64)> {
    let Ok(decls) = super::fit::parse_declarations(kernels::calib_source()) else { return Vec::new() };
    table
        .fit
        .iter()
        .flat_map(|f| &f.kernels)
        .filter_map(|k| {
            let bodies = decls.iter().find(|d| d.name == k.name)?.bodies;
            let ns = k.measured.ns_per_op * bodies;
            (ns > 0.0 && ns.is_finite()).then(|| (k.name.clone(), ns))
        })
        .collect()
}

/// A class whose calibration kernels spend less than this much of one body's time on it, summed
/// over the kernels, takes the median factor: too little of any kernel's drift is its own.
const MIN_CLASS_SHARE: f64 = 0.5;

/// Each class's factor: the kernels' ratios weighted by the share of each kernel's fitted time
/// (its op counts times the table's fitted costs) the class takes. Memory-bound and compute-bound
/// loop bodies do not drift alike on a shared host (on the development VM, loop bodies that
/// store to arrays ran 2.1-2.5x slower while chains of integer and floating-point ops ran
/// 1.3-1.5x slower), so one median would charge compute-bound code with the memory's drift. A
/// class the kernels hardly use, and a table without a fit, take the median.
pub fn class_factors(table: &MachineTable, c: &SpeedCheck) -> BTreeMap<OpClass, f64> {
    let mut sums: BTreeMap<OpClass, (f64, f64)> = BTreeMap::new();
    let ratio: BTreeMap<&str, f64> = c.kernels.iter().map(|k| (k.name.as_str(), k.now_ns / k.table_ns)).collect();
    for k in table.fit.iter().flat_map(|f| &f.kernels) {
        let Some(&r) = ratio.get(k.name.as_str()) else { continue };
        let cost = |class: OpClass| table.cost(class, Variant::Fitted).unwrap_or(0.0);
        let total: f64 = k.counts.iter().map(|(class, n)| n * cost(*class)).sum();
        if !(total > 0.0) {
            continue;
        }
        for (class, n) in &k.counts {
            let share = n * cost(*class) / total;
            let e = sums.entry(*class).or_default();
            e.0 += share * r;
            e.1 += share;
        }
    }
    sums.into_iter().filter(|(_, (_, w))| *w >= MIN_CLASS_SHARE).map(|(class, (sr, w))| (class, sr / w)).collect()
}

/// Median over the kernels of now / then.
pub fn factor_of(kernels: &[ProbeKernel]) -> f64 {
    measure::median(&kernels.iter().map(|k| k.now_ns / k.table_ns).collect::<Vec<_>>())
}

fn cache_path(table: &MachineTable, path: &Path) -> PathBuf {
    let name = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let stem = crate::model::file_name_part(&path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
    let id = kernels::fnv(&[&name.to_string_lossy(), &table.created_unix_s.to_string()]);
    super::cache_root().join("machines").join("speed").join(format!("{stem}-{id:016x}.json"))
}

fn now_unix_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// This host's speed against `table` (read from `path`): None when the table is another
/// host's (`sysinfo::is_this_host`), has no calibration kernels (a --classes table), or was measured
/// with a compiler that is no longer the one installed. A check younger than [`TTL_S`] is
/// reused.
pub fn check(table: &MachineTable, path: &Path) -> Result<Option<SpeedCheck>> {
    if !super::sysinfo::is_this_host(&table.host) {
        return Ok(None);
    }
    let reference = reference_kernels(table);
    if reference.is_empty() {
        return Ok(None);
    }
    let cached = cache_path(table, path);
    let fresh = |c: &SpeedCheck| c.table_created_unix_s == table.created_unix_s && now_unix_s().saturating_sub(c.probed_unix_s) < TTL_S;
    if let Ok(c) = crate::model::read_artifact::<SpeedCheck>(&cached) {
        if fresh(&c) {
            return Ok(Some(c));
        }
    }
    // One timing at a time on this host (and none while a table is measured).
    let _lock = crate::model::CacheLock::acquire(&super::cache_root(), "mtc")?;
    if let Ok(c) = crate::model::read_artifact::<SpeedCheck>(&cached) {
        if fresh(&c) {
            return Ok(Some(c));
        }
    }
    let cc = &table.compiler.cc;
    let Ok(version) = kernels::compiler_version(cc) else { return Ok(None) };
    if version != table.compiler.version {
        return Ok(None);
    }
    let mut driver = start_driver(cc, &table.compiler.cflags, &version)?;
    let mut out = Vec::new();
    for (name, table_ns) in reference {
        let iters = ((SAMPLE_MS * 1e6 / table_ns).ceil() as u64).max(1);
        driver.run(&name, iters.div_ceil(4), 0).with_context(|| format!("timing {name}"))?;
        // (wall ns, where its probe ran: 0 in the table's regime, -1 faster, 1 slower)
        let mut walls: Vec<(f64, i8)> = Vec::with_capacity(SAMPLES);
        for _ in 0..SAMPLES {
            let side = match &table.regime {
                Some(r) => {
                    let pi = ((measure::PROBE_NS / r.probe_ns).ceil() as u64).max(1);
                    let p = driver.run(measure::PROBE_KERNEL, pi, 0).context("timing the probe")?.ns / pi as f64;
                    if r.contains(p) { 0 } else if p < r.probe_ns { -1 } else { 1 }
                }
                None => 0,
            };
            walls.push((driver.run(&name, iters, 0).with_context(|| format!("timing {name}"))?.wall_ns / iters as f64, side));
        }
        out.push(probe_kernel(name, table_ns, &walls, table.regime.is_some()));
    }
    let c = SpeedCheck { table_created_unix_s: table.created_unix_s, probed_unix_s: now_unix_s(), factor: factor_of(&out), kernels: out };
    if let Some(dir) = cached.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create directory", dir.display()))?;
    }
    crate::model::write_artifact(&cached, &c)?;
    Ok(Some(c))
}

/// One kernel's figure from its timed runs (wall ns, side of the table's regime its probe
/// fell on: 0 in it, -1 faster, 1 slower): the fastest of those in the regime; where none was
/// and none ran slower, the table's own time; else the fastest of the slower ones.
fn probe_kernel(name: String, table_ns: f64, walls: &[(f64, i8)], with_regime: bool) -> ProbeKernel {
    let fastest = |side: Option<i8>| walls.iter().filter(|w| side.is_none_or(|s| w.1 == s)).map(|w| w.0).fold(f64::INFINITY, f64::min);
    let count = |side: i8| walls.iter().filter(|w| w.1 == side).count() as u32;
    let regime = with_regime.then(|| ProbeRegime { in_regime: count(0), faster: count(-1), slower: count(1) });
    let now_ns = match regime {
        None => fastest(None),
        Some(r) if r.in_regime > 0 => fastest(Some(0)),
        Some(r) if r.slower == 0 => table_ns,
        Some(_) => fastest(Some(1)),
    };
    ProbeKernel { name, table_ns, now_ns, regime }
}

/// The kernel driver as the table's measurement ran it: inside an MPI process when the compiler
/// is an MPI wrapper, outside when a singleton MPI_Init fails here.
fn start_driver(cc: &str, cflags: &[String], version: &str) -> Result<driver::Driver> {
    let in_mpi = kernels::is_mpi_wrapper(cc);
    let exe = kernels::build(cc, cflags, version, &super::cache_root(), in_mpi)?;
    match driver::Driver::start(&exe).and_then(|mut d| d.list().map(|_| d)) {
        Ok(d) => Ok(d),
        Err(_) if in_mpi => {
            let exe = kernels::build(cc, cflags, version, &super::cache_root(), false)?;
            driver::Driver::start(&exe)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(table_ns: f64, now_ns: f64) -> ProbeKernel {
        ProbeKernel { name: "cal_x".into(), table_ns, now_ns, regime: None }
    }

    #[test]
    fn each_class_drifts_as_the_kernels_that_spend_their_time_on_it() {
        use crate::model::machine::{CalibrationKernel, FitResult, Measure};
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/machine/fixed.json");
        let mut t = crate::machine::load_table(&path).unwrap();
        let m = Measure { ns_per_op: 1.0, min_ns: 1.0, max_ns: 1.0, spread: 0.0, samples: 1, cycles_per_op: None, instructions_per_op: None, clamped: false };
        let kernel = |name: &str, counts: &[(OpClass, f64)]| CalibrationKernel {
            name: name.into(),
            counts: counts.iter().copied().collect(),
            measured: m.clone(),
            predicted_raw_ns: 1.0,
            predicted_fit_ns: 1.0,
            error_raw: 0.0,
            error_fit: 0.0,
        };
        let costs = [(OpClass::Store, 1.0), (OpClass::IntAdd, 0.5), (OpClass::IntMul, 1.0)];
        t.fit = Some(FitResult {
            method: "test".into(),
            lambda: 0.0,
            ns_per_op: costs.iter().copied().collect(),
            kernels: vec![
                kernel("cal_stores", &[(OpClass::Store, 1.0)]),
                kernel("cal_adds", &[(OpClass::IntAdd, 4.0)]),
                // 2 ns of adds and 0.1 ns of multiplies: the multiply's share is too small to say.
                kernel("cal_mixed", &[(OpClass::IntAdd, 4.0), (OpClass::IntMul, 0.1)]),
            ],
        });
        let c = SpeedCheck { table_created_unix_s: 1, probed_unix_s: 2, factor: 1.5, kernels: vec![k2("cal_stores", 2.0), k2("cal_adds", 1.2), k2("cal_mixed", 1.2)] };
        let f = class_factors(&t, &c);
        assert!((f[&OpClass::Store] - 2.0).abs() < 1e-12, "{f:?}");
        assert!((f[&OpClass::IntAdd] - 1.2).abs() < 1e-12, "{f:?}");
        assert!(!f.contains_key(&OpClass::IntMul), "{f:?}");
        // Scaled: a class by its own factor, one the kernels hardly use by the median.
        let before = t.clone();
        t.scale_times(&|class| class.and_then(|k| f.get(&k)).copied().unwrap_or(c.factor));
        let ratio = |c: OpClass| t.classes[&c].throughput.ns_per_op / before.classes[&c].throughput.ns_per_op;
        assert!((ratio(OpClass::Store) - 2.0).abs() < 1e-9 && (ratio(OpClass::IntAdd) - 1.2).abs() < 1e-9 && (ratio(OpClass::DoubleDiv) - 1.5).abs() < 1e-9);
        let store = |t: &MachineTable| t.memory.iter().find(|m| m.access == "store").unwrap().throughput.ns_per_op;
        assert!((store(&t) / store(&before) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_check_counts_the_runs_in_the_tables_regime_and_ignores_a_faster_one() {
        // In the regime: its fastest; the faster-regime run (5 ns) left out.
        let k = probe_kernel("cal_x".into(), 10.0, &[(5.0, -1), (10.4, 0), (10.2, 0)], true);
        assert_eq!((k.now_ns, k.regime), (10.2, Some(ProbeRegime { in_regime: 2, faster: 1, slower: 0 })));
        // Only faster runs: the table's own time (no drift claimed from a passing stretch).
        assert_eq!(probe_kernel("cal_x".into(), 10.0, &[(5.0, -1), (5.5, -1)], true).now_ns, 10.0);
        // Slower runs among them: the host drifted, the fastest of the slower ones counts.
        assert_eq!(probe_kernel("cal_x".into(), 10.0, &[(5.0, -1), (16.0, 1), (17.0, 1)], true).now_ns, 16.0);
        // A table without a regime: the fastest.
        assert_eq!(probe_kernel("cal_x".into(), 10.0, &[(9.0, 0), (8.0, 0)], false).now_ns, 8.0);
    }

    fn k2(name: &str, ratio: f64) -> ProbeKernel {
        ProbeKernel { name: name.into(), table_ns: 10.0, now_ns: 10.0 * ratio, regime: None }
    }

    #[test]
    fn the_factor_is_the_median_ratio_and_one_odd_kernel_does_not_move_it() {
        let ks = [k(100.0, 150.0), k(200.0, 290.0), k(10.0, 15.5), k(50.0, 500.0), k(80.0, 40.0)];
        assert!((factor_of(&ks) - 1.5).abs() < 1e-12);
        let c = SpeedCheck { table_created_unix_s: 1, probed_unix_s: 2, factor: 1.04, kernels: vec![] };
        assert!(!c.drifted());
        assert!(!SpeedCheck { factor: 0.9, ..c.clone() }.drifted());
        assert!(SpeedCheck { factor: 0.8, ..c }.drifted());
    }
}
