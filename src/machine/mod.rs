//! MTC, the Machine Time Characterizer: measures what each op class costs on this host with the
//! user's compiler and flags (microbench/mtc_*.c, compiled at run time), and writes a machine
//! table (`mpicast/machine`, src/model/machine.rs). The estimator reads a table with
//! [`load_table`] and costs ops with [`MachineTable::ns_per_op`] (throughput variant).

pub mod driver;
pub mod fit;
pub mod kernels;
pub mod measure;
pub mod render;
pub mod speed;
pub mod sysinfo;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use indicatif::ProgressBar;

use crate::model::machine::{
    BenchSettings, CalibrationKernel, CoreResourceKernel, CoreResources, ClassCost, CompilerInfo, FitResult, MemoryCost, TimerInfo,
};
pub use crate::model::machine::{MachineTable, Variant};
use crate::model::ops::OpClass;
use measure::{key, JobKey};

/// Ops per iteration of the class kernels (MTC_UNROLL in microbench/mtc_common.h).
pub const UNROLL: f64 = 16.0;
/// Bytes per memcpy/memset call (MTC_BYTES).
pub const BYTES_PER_CALL: f64 = 4096.0;
/// Weight of the fit's pull towards the raw costs.
pub const FIT_LAMBDA: f64 = 0.1;

#[derive(Debug, Clone)]
pub struct Options {
    pub cc: String,
    pub cflags: Vec<String>,
    pub quick: bool,
    /// Only these classes (no memory section beyond what they need, no fit). Empty: all.
    pub classes: Vec<OpClass>,
    /// Samples per kernel; default 5 (quick) or 11.
    pub samples: Option<u32>,
    /// Minimum ms per sample; default 20.
    pub min_sample_ms: Option<f64>,
    pub progress: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            cc: "mpicc".into(),
            cflags: vec!["-O2".into()],
            quick: false,
            classes: Vec::new(),
            samples: None,
            min_sample_ms: None,
            progress: true,
        }
    }
}

/// Reads a machine table for the estimator: schema and version checked, every class present
/// and positive (a table made with --classes is refused here; `read_artifact` still reads it).
pub fn load_table(path: &Path) -> Result<MachineTable> {
    let mut t: MachineTable = crate::model::read_artifact(path)?;
    let missing: Vec<&str> = OpClass::ALL
        .iter()
        .filter(|c| !t.classes.contains_key(c))
        .map(|c| c.name())
        .collect();
    if !missing.is_empty() {
        bail!(
            "{}: machine table lacks {} of {} classes ({}): measured with --classes, or by an older mpicast; measure all classes with `mpicast bench machine`",
            path.display(),
            missing.len(),
            OpClass::ALL.len(),
            missing.join(", ")
        );
    }
    if let Some((c, _)) = t
        .classes
        .iter()
        .find(|(_, v)| !(v.throughput.ns_per_op > 0.0 && v.latency.ns_per_op > 0.0))
    {
        bail!(
            "{}: machine table gives {} a cost that is not positive",
            path.display(),
            c
        );
    }
    refit(&mut t);
    Ok(t)
}

/// `$XDG_CACHE_HOME/mpicast`, or `~/.cache/mpicast`.
pub fn cache_root() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("mpicast")
}

/// Where a table is cached when no -o is given: machines/<host>_<cc>_<flags>.json.
pub fn default_table_path(t: &MachineTable) -> PathBuf {
    table_path(
        &t.host.hostname,
        &t.compiler.cc,
        &t.compiler.cflags,
        !t.settings.only_classes.is_empty(),
    )
}

fn table_path(host: &str, cc: &str, cflags: &[String], partial: bool) -> PathBuf {
    use crate::model::file_name_part;
    let cc = Path::new(cc)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name = format!(
        "{}_{}_{}",
        file_name_part(host),
        file_name_part(&cc),
        file_name_part(&cflags.join(""))
    );
    if partial {
        name.push_str("_partial");
    }
    cache_root().join("machines").join(format!("{name}.json"))
}

/// This host's machine table for mpicc -O2 (what predict uses without --machine): the cached
/// one, else measured now (about a minute) and cached. One process measures at a time; the
/// others wait for its table. A table measured under load (see [`crate::model::load`]) is
/// used for this run only: it is written beside the cache (`*.under-load.json`), never as the
/// default, so the next run measures again.
pub fn host_table(progress: bool) -> Result<PathBuf> {
    let cflags = vec!["-O2".to_string()];
    let path = table_path(&crate::model::hostname_or("unknown"), "mpicc", &cflags, false);
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_else(cache_root);
    let _lock = crate::model::CacheLock::acquire(&dir, "default-machine")?;
    if path.is_file() {
        match load_table(&path) {
            Ok(_) => return Ok(path),
            // Written by an older mpicast (fewer classes) or damaged: measured again.
            Err(e) => eprintln!("mpicast: the cached machine table is not usable ({}): measuring a new one", e),
        }
    } else {
        eprintln!(
            "mpicast: no machine table for this host yet: measuring one (about a minute), cached in {}",
            path.display()
        );
    }
    let table = measure(&Options {
        cc: "mpicc".into(),
        cflags,
        quick: false,
        classes: Vec::new(),
        samples: None,
        min_sample_ms: None,
        progress,
    })?;
    let path = match table.load.as_ref().and_then(|l| l.warning("the machine table")) {
        Some(warning) => {
            let aside = crate::model::under_load_path(&path);
            eprintln!(
                "mpicast: {warning}; not cached as this host's default: written to {} for this run",
                aside.display()
            );
            aside
        }
        None => path,
    };
    crate::model::write_artifact(&path, &table)?;
    Ok(path)
}

/// How one class is measured: throughput kernel, latency kernel, ops per iteration of each,
/// baseline (None: none subtracted), whether the latency kernel is a true chain.
struct ClassPlan {
    tp: (JobKey, f64),
    lat: (JobKey, f64),
    baseline: Option<JobKey>,
    chain: bool,
}

fn class_plan(c: OpClass, l1_ws: u64) -> ClassPlan {
    let empty = Some(key("empty", 0));
    let pair = |name: &str, chain: bool| ClassPlan {
        tp: (key(&format!("{name}_tp"), 0), UNROLL),
        lat: (key(&format!("{name}_lat"), 0), UNROLL),
        baseline: empty.clone(),
        chain,
    };
    let same = |k: JobKey, ops: f64, baseline: Option<JobKey>| ClassPlan {
        tp: (k.clone(), ops),
        lat: (k, ops),
        baseline,
        chain: false,
    };
    use OpClass::*;
    match c {
        IntAdd | IntMul | IntDiv | IntCmp | IntLogic | FloatAdd | FloatMul | FloatDiv
        | DoubleAdd | DoubleMul | DoubleDiv | Call | Sqrt | Exp | Log | SinCos | Pow | Fabs => {
            pair(c.name(), true)
        }
        FpCmp => pair("fp_cmp", false),
        IntToFp | FpToInt => ClassPlan {
            tp: (key(&format!("{}_tp", c.name()), 0), UNROLL),
            // 16 round trips: one int_to_fp and one fp_to_int each.
            lat: (key("conv_roundtrip_lat", 0), 2.0 * UNROLL),
            baseline: empty.clone(),
            chain: true,
        },
        Branch => same(key("branch_tp", 0), UNROLL, empty.clone()),
        // One inner loop per iteration whose trip differs from the previous one's in
        // `trip_changes()` of them; the twin that the predictor learns taken off.
        BranchMiss => same(key("branch_miss", 0), trip_changes(), Some(key("branch_pred", 0))),
        Rand => same(key("rand_tp", 0), UNROLL, empty.clone()),
        LoopIter => same(key("empty", 0), 1.0, None),
        MemcpyByte => same(key("memcpy", 0), BYTES_PER_CALL, empty.clone()),
        MemsetByte => same(key("memset", 0), BYTES_PER_CALL, empty.clone()),
        // A malloc and its free per iteration.
        Alloc => same(key("alloc", 0), 2.0, empty.clone()),
        PrintCall => same(key("print_call", 0), 1.0, empty.clone()),
        // Eight conversions per call, the call itself (print_call) taken off.
        PrintInt => same(key("print_int", 0), 8.0, Some(key("print_call", 0))),
        PrintFp => same(key("print_fp", 0), 8.0, Some(key("print_call", 0))),
        WriteByte => same(key("write", 0), BYTES_PER_CALL, empty.clone()),
        // A communicator made and freed per iteration.
        CommCreate => same(key("comm_create", 0), 1.0, empty.clone()),
        // A split that makes no communicator per iteration.
        CommNull => same(key("comm_null", 0), 1.0, empty.clone()),
        Load => ClassPlan {
            tp: (key("mem_stream_load", l1_ws), UNROLL),
            lat: (key("mem_chase_lat", l1_ws), UNROLL),
            baseline: empty.clone(),
            chain: true,
        },
        Store => same(key("mem_stream_store", l1_ws), UNROLL, empty.clone()),
        PtrDeref => ClassPlan {
            tp: (key("mem_chase_tp", l1_ws), UNROLL),
            lat: (key("mem_chase_lat", l1_ws), UNROLL),
            baseline: empty.clone(),
            chain: true,
        },
        // Derived (never in a plan: `parse_classes` and OpClass::ALL leave it out): the
        // int_add latency kernel is its measure.
        CoreCycle => pair("int_add", true),
    }
}

/// The share of the branch_miss kernel's inner loops whose trip differs from the previous
/// one's: its table of trips remade (microbench/mtc_ctrl.c, `mtc_trips_init`).
fn trip_changes() -> f64 {
    let (mut s, mut prev, mut changed) = (12345u32, 0u32, 0u32);
    for i in 0..65536u32 {
        s = s.wrapping_mul(1664525).wrapping_add(1013904223);
        let t = 4 + (s >> 29);
        if i > 0 && t != prev {
            changed += 1;
        }
        prev = t;
    }
    f64::from(changed) / 65536.0
}

/// 8-byte words in a 4 KiB page.
const PAGE_WORDS: f64 = 512.0;

fn mem_kernels(ws: u64) -> [JobKey; 7] {
    [
        "mem_stream_load",
        "mem_stream_store",
        "mem_chase_lat",
        "mem_chase_tp",
        "mem_rand_store",
        "mem_lcg_only",
        "mem_stride_load",
    ]
    .map(|k| key(k, ws))
}

/// Levels where a power-of-two stride's cache-set conflicts show (the 2048-byte column walk is
/// measured there): on this project's Intel VM twice the 4160-byte walk's time per access in
/// L2 and just past it, none from L3 or memory (10.0 and 31.8 ns against 11.9 and 40.8), where
/// the walk's time went to disturbing the stream kernels (DRAM stream loads 3.1-3.3 ns per 8
/// bytes in two tables, 1.3 without it).
const CONFLICT_LEVELS: &[&str] = &["L1", "L2", "L2+"];

/// Levels outside a core's own caches, whose bandwidth the cores share.
const SHARED_LEVELS: &[&str] = &["L2+", "L3", "DRAM"];

/// Samples of each stream kernel with every core streaming.
const SHARED_SAMPLES: usize = 5;

/// The stream kernels at the shared levels with every other core running the same kernel on
/// buffers of its own (one companion driver per core, started before the measured run and
/// running three times as long, so the whole measured run has them): the bandwidth one core
/// gets when all of them stream (`stream_all_cores` entries; `predict::memory` interpolates
/// between it and the single-core figure by the ranks a host runs).
fn shared_streams(
    exe: &Path,
    driver: &mut driver::Driver,
    results: &measure::Results,
    working_sets: &[(&'static str, u64)],
    cores: usize,
) -> Result<Vec<MemoryCost>> {
    let mut companions = (1..cores).map(|_| driver::Driver::start(exe)).collect::<Result<Vec<_>>>()?;
    let mut out = measure::Results::default();
    let empty = key("empty", 0);
    if let Some(j) = results.jobs.get(&empty) {
        out.jobs.insert(empty.clone(), measure::Job { iters: j.iters, per_iter: j.per_iter.clone(), probe: j.probe.clone() });
    }
    let mut costs = Vec::new();
    for &(level, ws) in working_sets.iter().filter(|(l, _)| SHARED_LEVELS.contains(l)) {
        for (kernel, access) in [("mem_stream_load", "load"), ("mem_stream_store", "store")] {
            let k = key(kernel, ws);
            let Some(iters) = results.jobs.get(&k).map(|j| j.iters) else { continue };
            let per_iter = with_companions(&mut companions, driver, kernel, iters, ws, SHARED_SAMPLES)?;
            out.jobs.insert(k.clone(), measure::Job { iters, per_iter, probe: Vec::new() });
            costs.push(MemoryCost {
                level: level.into(),
                working_set_bytes: ws,
                pattern: "stream_all_cores".into(),
                access: access.into(),
                throughput: out.measure(&k, UNROLL, Some(&empty)),
                latency: None,
            });
        }
    }
    Ok(costs)
}

/// Samples of each calibration kernel alone and with every core busy, in turns.
const CO_RUN_SAMPLES: usize = 5;

/// Runs `kernel` on `driver` (calibrated iterations, working set `ws`) while one companion per
/// other core runs it too, from before to after; the wall ns of each measured run.
fn with_companions(
    companions: &mut [driver::Driver],
    driver: &mut driver::Driver,
    kernel: &str,
    iters: u64,
    ws: u64,
    samples: usize,
) -> Result<Vec<driver::Sample>> {
    let mut out = Vec::new();
    for _ in 0..samples {
        for c in companions.iter_mut() {
            c.start_run(kernel, 3 * iters, ws)?;
        }
        // The companions are up and running before the measured run starts.
        std::thread::sleep(std::time::Duration::from_millis(30));
        let s = driver.run(kernel, iters, ws)?;
        for c in companions.iter_mut() {
            c.finish()?;
        }
        let n = iters as f64;
        out.push(driver::Sample { ns: s.ns / n, wall_ns: s.wall_ns / n, cycles: s.cycles.map(|c| c / n), instructions: s.instructions.map(|c| c / n) });
    }
    Ok(out)
}

/// The calibration kernels (real loop bodies) with every other core running the same kernel:
/// per kernel the wall time per iteration alone and with every core busy (medians of samples
/// taken in turns), and the median ratio. Cores that share a physical core (SMT siblings) or a
/// hypervisor's time compute slower when all of them run; the wall clock sees both.
fn co_run(exe: &Path, driver: &mut driver::Driver, results: &measure::Results, kernels: &[&str], cores: u32) -> Result<crate::model::machine::CoRun> {
    use crate::model::machine::CoRunKernel;
    let mut companions = (1..cores).map(|_| driver::Driver::start(exe)).collect::<Result<Vec<_>>>()?;
    // Each kernel's wall ns per iteration alone (the main measurement) and with every core busy.
    let mut time = |names: &mut dyn Iterator<Item = &str>| -> Result<Vec<CoRunKernel>> {
        let mut out = Vec::new();
        for name in names {
            let Some(job) = results.jobs.get(&key(name, 0)) else { continue };
            // Alone and with every core busy in turns: a host whose speed drifts between the
            // main measurement and this one (a shared VM's) moves both sides alike. (Against the
            // main measurement's time alone, two tables measured a minute apart had factors of
            // 1.73 and 1.00, and their 2-rank predictions differed by 40-100%.)
            // Each side keeps the samples whose probe ran in the measurement's regime (a turn
            // that met the other regime would give a ratio of the regimes, 0.5 to 2 on the AMD
            // VM, not of the cores), with more turns, up to three times as many, where needed.
            let (mut alone, mut busy) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
            let mut turns = 0;
            while turns < CO_RUN_SAMPLES || (turns < 3 * CO_RUN_SAMPLES && (alone.0.len() < CO_RUN_SAMPLES || busy.0.len() < CO_RUN_SAMPLES)) {
                let ok = results.in_regime(driver)?;
                let a = driver.run(name, job.iters, 0)?.wall_ns / job.iters as f64;
                if ok { alone.0.push(a) } else { alone.1.push(a) }
                let ok = results.in_regime(driver)?;
                let b = with_companions(&mut companions, driver, name, job.iters, 0, 1)?[0].wall_ns;
                if ok { busy.0.push(b) } else { busy.1.push(b) }
                turns += 1;
            }
            let kept = |(good, other): (Vec<f64>, Vec<f64>)| if good.is_empty() { other } else { good };
            let (alone, all) = (measure::median(&kept(alone)), measure::median(&kept(busy)));
            if alone > 0.0 && all.is_finite() {
                out.push(CoRunKernel { name: name.to_string(), alone_ns: alone, all_cores_ns: all });
            }
        }
        Ok(out)
    };
    let mut out = time(&mut kernels.iter().copied())?;
    // Pure port throughput and pure latency: the class kernels, also with every core busy.
    let classes = time(&mut CO_RUN_THROUGHPUT.iter().chain(CO_RUN_LATENCY).copied())?;
    let ratio = |names: &[&str], out: &[CoRunKernel]| {
        let f = measure::median(&out.iter().filter(|k| names.is_empty() || names.contains(&k.name.as_str())).map(|k| k.all_cores_ns / k.alone_ns).collect::<Vec<_>>());
        if f.is_finite() { f.max(1.0) } else { 1.0 }
    };
    let factor = ratio(&[], &out);
    let throughput_factor = ratio(CO_RUN_THROUGHPUT, &classes);
    let latency_factor = ratio(CO_RUN_LATENCY, &classes);
    out.extend(classes);
    Ok(crate::model::machine::CoRun { cores, factor, kernels: out, throughput_factor, latency_factor })
}

/// Kernels of independent ops (a core's ports) and of dependent chains, timed with every core
/// busy for the co-run factors.
const CO_RUN_THROUGHPUT: &[&str] = &["int_add_tp", "double_add_tp", "double_mul_tp"];
const CO_RUN_LATENCY: &[&str] = &["int_add_lat", "double_add_lat", "double_mul_lat"];

/// Runs the MTC and returns the table (not written anywhere).
pub fn measure(opts: &Options) -> Result<MachineTable> {
    let clock = measure::Stopwatch::start();
    let host = sysinfo::host_info();
    let version = kernels::compiler_version(&opts.cc)?;
    // One MTC at a time per cache: the kernels are built once, and two measurements at once
    // would each slow the other down.
    let _lock = crate::model::CacheLock::acquire(&cache_root(), "mtc")?;
    let in_mpi = kernels::is_mpi_wrapper(&opts.cc);
    let exe = kernels::build(&opts.cc, &opts.cflags, &version, &cache_root(), in_mpi)?;
    let meter = crate::model::load::LoadMeter::start();
    let started = driver::Driver::start(&exe).and_then(|mut d| d.list().map(|k| (d, k)));
    let (mut driver, known) = match started {
        Ok(x) => x,
        // A singleton MPI_Init can fail (a batch system's environment, no launcher daemon):
        // the kernels then run outside MPI.
        Err(e) if in_mpi => {
            eprintln!(
                "mpicast: the kernels could not run inside an MPI process ({e:#}); measuring them outside MPI"
            );
            let exe = kernels::build(&opts.cc, &opts.cflags, &version, &cache_root(), false)?;
            let mut d = driver::Driver::start(&exe)?;
            let k = d.list()?;
            (d, k)
        }
        Err(e) => return Err(e),
    };

    let working_sets = sysinfo::working_sets(&host.caches);
    let l1_ws = working_sets[0].1;
    let classes: Vec<OpClass> = if opts.classes.is_empty() {
        // The kernels that call MPI where the driver runs inside MPI.
        let mpi = OpClass::MPI.iter().filter(|c| known.iter().any(|k| k == class_plan(**c, l1_ws).tp.0.kernel.as_str()));
        OpClass::ALL.iter().chain(mpi).copied().collect()
    } else {
        opts.classes.clone()
    };
    let full = opts.classes.is_empty();
    let decls = fit::parse_declarations(kernels::calib_source())?;

    let mut keys = vec![key("empty", 0)];
    for &c in &classes {
        let p = class_plan(c, l1_ws);
        keys.push(p.tp.0);
        keys.push(p.lat.0);
        keys.extend(p.baseline);
    }
    if full {
        for &(level, ws) in &working_sets {
            keys.extend(mem_kernels(ws));
            keys.push(key("mem_overlap", ws));
            keys.push(key("mem_overlap_store", ws));
            if CONFLICT_LEVELS.contains(&level) {
                keys.push(key("mem_stride2k_load", ws));
            }
        }
        keys.push(key("mem_first_touch", 0));
        keys.extend(decls.iter().map(|d| key(&d.name, 0)));
    }
    let keys = measure::dedup_keys(keys);
    if let Some(k) = keys.iter().find(|k| !known.contains(&k.kernel)) {
        bail!(
            "kernel driver has no kernel {} (microbench out of step with src/machine)",
            k.kernel
        );
    }

    let samples = opts
        .samples
        .unwrap_or(if opts.quick { 5 } else { 11 })
        .max(1);
    let min_sample_ms = opts.min_sample_ms.unwrap_or(20.0);
    let progress = if opts.progress {
        ProgressBar::new(0)
    } else {
        ProgressBar::hidden()
    };
    let results = measure::run_jobs(&mut driver, &keys, samples, min_sample_ms, &progress)?;
    let (shared, corun) = if full && host.cores > 1 {
        progress.set_message("streams and loop bodies with every core busy");
        let calib: Vec<&str> = decls.iter().map(|d| d.name.as_str()).collect();
        (
            shared_streams(&exe, &mut driver, &results, &working_sets, host.cores as usize)?,
            Some(co_run(&exe, &mut driver, &results, &calib, host.cores)?),
        )
    } else {
        (Vec::new(), None)
    };
    progress.finish_and_clear();

    let timer_clock = "thread_cpu_time".to_string();
    let descheduled_fraction = results.descheduled_fraction();
    let timer = if driver.counters_used() && results.counted_cycles() {
        TimerInfo {
            source: "perf_event".into(),
            clock: timer_clock,
            descheduled_fraction,
            fallback_reason: None,
        }
    } else {
        let reason = driver
            .counter_error
            .clone()
            .unwrap_or_else(|| "perf_event counters read zero".into());
        TimerInfo {
            source: "clock".into(),
            clock: timer_clock,
            descheduled_fraction,
            fallback_reason: Some(reason),
        }
    };
    drop(driver);
    let load = meter.finish();

    let mut table_classes = BTreeMap::new();
    for &c in &classes {
        let p = class_plan(c, l1_ws);
        let tp = results.measure(&p.tp.0, p.tp.1, p.baseline.as_ref());
        // A dependent chain's loop control (an add, a compare and a branch on the counter)
        // runs beside the chain, not after it: nothing is taken off. (On the AMD VM the int_add
        // chain less the empty loop gave 0.300 ns per add, while a chain of 100 adds with no
        // loop around them took 0.351-0.363 ns; `core_cycle` is that figure.)
        let lat_base = if p.chain { None } else { p.baseline.as_ref() };
        let lat = results.measure(&p.lat.0, p.lat.1, lat_base);
        let mut kernels = vec![p.tp.0.kernel.clone()];
        if p.lat.0 != p.tp.0 {
            kernels.push(p.lat.0.kernel.clone());
        }
        table_classes.insert(
            c,
            ClassCost {
                throughput: tp,
                latency: lat,
                latency_is_chain: p.chain,
                kernels,
            },
        );
    }

    let mut memory = Vec::new();
    if full {
        let empty = key("empty", 0);
        for &(level, ws) in &working_sets {
            let [sl, ss, cl, ct, rs, lcg, st] = mem_kernels(ws);
            let entry = |pattern: &str, access: &str, tp, lat| MemoryCost {
                level: level.into(),
                working_set_bytes: ws,
                pattern: pattern.into(),
                access: access.into(),
                throughput: tp,
                latency: lat,
            };
            memory.push(entry(
                "stream",
                "load",
                results.measure(&sl, UNROLL, Some(&empty)),
                None,
            ));
            memory.push(entry(
                "stream",
                "store",
                results.measure(&ss, UNROLL, Some(&empty)),
                None,
            ));
            memory.push(entry(
                "random",
                "load",
                results.measure(&ct, UNROLL, Some(&empty)),
                Some(results.measure(&cl, UNROLL, Some(&empty))),
            ));
            memory.push(entry(
                "random",
                "store",
                results.measure(&rs, UNROLL, Some(&lcg)),
                None,
            ));
            memory.push(entry(
                "stride",
                "load",
                results.measure(&st, UNROLL, Some(&empty)),
                None,
            ));
            if CONFLICT_LEVELS.contains(&level) {
                memory.push(entry(
                    "stride2k",
                    "load",
                    results.measure(&key("mem_stride2k_load", ws), UNROLL, Some(&empty)),
                    None,
                ));
            }
            memory.push(entry(
                "overlap",
                "load",
                results.measure(&key("mem_overlap", ws), UNROLL, Some(&empty)),
                None,
            ));
            memory.push(entry(
                "overlap",
                "store",
                results.measure(&key("mem_overlap_store", ws), UNROLL, Some(&empty)),
                None,
            ));
        }
        memory.extend(shared);
        // Freshly mapped memory written once: the kernel's figure is per 4 KiB page, the
        // table's per 8 bytes like the others.
        let mut ft = results.measure(&key("mem_first_touch", 0), UNROLL, Some(&empty));
        for x in [&mut ft.ns_per_op, &mut ft.min_ns, &mut ft.max_ns] {
            *x /= PAGE_WORDS;
        }
        ft.cycles_per_op = ft.cycles_per_op.map(|c| c / PAGE_WORDS);
        ft.instructions_per_op = ft.instructions_per_op.map(|c| c / PAGE_WORDS);
        memory.push(MemoryCost {
            level: "DRAM".into(),
            working_set_bytes: 64 << 20,
            pattern: "first_touch".into(),
            access: "store".into(),
            throughput: ft,
            latency: None,
        });
    }

    let fit = if full {
        let measured: Vec<_> = decls.iter().map(|d| results.measure(&key(&d.name, 0), d.bodies, None)).collect();
        Some(fit_table(&decls, measured, &table_classes))
    } else {
        None
    };
    let empty_loop_ns = results.measure(&key("empty", 0), 1.0, None).ns_per_op;
    let (created_unix_s, created_utc) = now_utc();
    let core_resources = fit.as_ref().and_then(|f| core_resources(&exe, f, &table_classes, &decls));
    Ok(MachineTable {
        host,
        compiler: CompilerInfo {
            cc: opts.cc.clone(),
            cflags: opts.cflags.clone(),
            version,
        },
        timer,
        settings: BenchSettings {
            quick: opts.quick,
            samples,
            min_sample_ms,
            unroll: UNROLL as u32,
            empty_loop_ns,
            only_classes: opts.classes.clone(),
        },
        classes: table_classes,
        memory,
        fit,
        load,
        co_run: corun,
        regime: results.regime.clone(),
        core_resources,
        created_unix_s,
        created_utc,
        mpicast_version: env!("CARGO_PKG_VERSION").to_string(),
        duration_s: clock.seconds(),
    })
}

/// A kernel whose resources bound at least this share of llvm-mca's cycles is resource-bound.
const RESOURCE_BOUND: f64 = 0.8;
/// Resource-bound kernels the factor needs.
const MIN_RESOURCE_KERNELS: usize = 3;

/// The calibration kernels' innermost loops (one body per iteration where not vectorised) as
/// llvm-mca schedules them, against their measured times (`CoreResources`). None without
/// llvm-mca, or with fewer than 3 resource-bound kernels.
fn core_resources(exe: &Path, fit: &FitResult, classes: &BTreeMap<OpClass, ClassCost>, decls: &[fit::CalDecl]) -> Option<CoreResources> {
    let cycle = classes.get(&OpClass::IntAdd).map(|c| c.latency.ns_per_op)?;
    let symbols: Vec<String> = decls.iter().map(|d| format!("k_{}", d.name)).collect();
    let loops = crate::objcode::function_loops(exe, &symbols.iter().map(String::as_str).collect::<Vec<_>>()).ok()?;
    let kernels: Vec<CoreResourceKernel> = loops
        .iter()
        .filter(|l| !l.vector)
        .filter_map(|l| {
            let name = l.function.strip_prefix("k_")?;
            let measured_ns = fit.kernels.iter().find(|k| k.name == name)?.measured.ns_per_op;
            let s = l.schedule;
            Some(CoreResourceKernel {
                name: name.to_string(),
                cycles: s.cycles,
                throughput_cycles: s.throughput_cycles,
                measured_ns,
                scheduled_ns: s.cycles * cycle,
                resource_bound: s.cycles > 0.0 && s.throughput_cycles >= RESOURCE_BOUND * s.cycles,
            })
        })
        .collect();
    let ratios: Vec<f64> = kernels.iter().filter(|k| k.resource_bound && k.scheduled_ns > 0.0).map(|k| k.measured_ns / k.scheduled_ns).collect();
    (ratios.len() >= MIN_RESOURCE_KERNELS).then(|| CoreResources { factor: measure::median(&ratios), kernels })
}

/// Fits the table again from its own kernel measurements when its fit breaks the fit's bounds
/// (a table cached before they existed), so that it is costed as a new one would be.
fn refit(t: &mut MachineTable) {
    let Some(f) = &t.fit else { return };
    let (lo, hi) = fit::FIT_RATIO;
    let within = f.ns_per_op.iter().all(|(c, &v)| {
        let raw = t.classes.get(c).map_or(0.0, |x| x.throughput.ns_per_op);
        raw <= 0.0 || (v >= lo * raw * (1.0 - 1e-9) && v <= hi * raw * (1.0 + 1e-9))
    });
    if within {
        return;
    }
    let decls: Vec<fit::CalDecl> = f
        .kernels
        .iter()
        .map(|k| fit::CalDecl { name: k.name.clone(), bodies: 1.0, counts: k.counts.clone() })
        .collect();
    let measured = f.kernels.iter().map(|k| k.measured).collect();
    t.fit = Some(fit_table(&decls, measured, &t.classes));
}

fn fit_table(
    decls: &[fit::CalDecl],
    measured: Vec<crate::model::machine::Measure>,
    classes: &BTreeMap<OpClass, ClassCost>,
) -> FitResult {
    let raw = |c: OpClass| classes.get(&c).map_or(0.0, |v| v.throughput.ns_per_op);
    let times: Vec<f64> = measured.iter().map(|m| m.ns_per_op).collect();
    let fitted = fit::fit(decls, &times, raw, FIT_LAMBDA);
    let cost = |c: OpClass| fitted.get(&c).copied().unwrap_or_else(|| raw(c));
    let kernels = decls
        .iter()
        .zip(measured)
        .map(|(d, m)| {
            let pr = fit::predict(&d.counts, raw);
            let pf = fit::predict(&d.counts, cost);
            CalibrationKernel {
                name: d.name.clone(),
                counts: d.counts.clone(),
                measured: m,
                predicted_raw_ns: pr,
                predicted_fit_ns: pf,
                error_raw: (pr - m.ns_per_op) / m.ns_per_op,
                error_fit: (pf - m.ns_per_op) / m.ns_per_op,
            }
        })
        .collect();
    FitResult {
        method: format!(
            "bounded least squares on fitted/raw ratios (0.5 to 2), relative error per kernel, pull towards raw throughput \
             costs with weight lambda; counts declared by hand in mtc_calib.c ({} kernels)",
            decls.len()
        ),
        lambda: FIT_LAMBDA,
        ns_per_op: OpClass::ALL.iter().filter(|c| classes.contains_key(c)).map(|&c| (c, cost(c))).collect(),
        kernels,
    }
}

/// Seconds since the epoch and the same as an ISO 8601 UTC string.
fn now_utc() -> (u64, String) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86400) as i64;
    let rem = secs % 86400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        secs,
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        ),
    )
}

/// Parses a --classes list ("int_add,double_div"); the error lists the valid names.
pub fn parse_classes(s: &str) -> Result<Vec<OpClass>> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|n| {
            OpClass::from_name(n).filter(|c| OpClass::ALL.contains(c) || OpClass::MPI.contains(c)).with_context(|| {
                let valid: Vec<&str> = OpClass::ALL.iter().chain(OpClass::MPI).map(|c| c.name()).collect();
                format!("unknown op class {n:?} (valid: {})", valid.join(", "))
            })
        })
        .collect()
}
