//! A prediction from what the user gives: the sources analysed as the build compiles them, the
//! parameters bound, the machine table and the platform resolved (this host's, measured on first
//! use and cached, when none is given), then the static path, given traces or a traced run (also
//! the fallback when the static path stops on what only a run knows). `sweep` does the same over
//! rank counts and platforms. `mpicast predict` and `mpicast sweep` call this module; so does
//! `mpicast validate` for this host's platform.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::model::analysis::ProgramModel;
use crate::model::machine::{MachineTable, Variant};
use crate::model::one_line;
use crate::model::prediction::{Fallback, Prediction};
use crate::model::sweep::{Sweep, SweepPoint};
use crate::model::trace::Mapping;
use crate::mpi::build::BuildSpec;
use crate::mpi::launch::LaunchSpec;
use crate::scale::Mode;

use super::{Options, WhatIf};

/// What a prediction does when this host's own machine table was measured at another speed
/// than the host computes at now (`machine::speed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HostSpeed {
    /// The table's times scaled by the factor, when it is outside the check's repeatability.
    #[default]
    Rescale,
    /// The factor reported in the assumptions, the table used as it is.
    Warn,
    /// No check.
    Off,
}

/// Where a prediction's counts come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The static path (skeleton execution). When it stops on what only a run knows, a traced
    /// run instead, unless `only`.
    Static { only: bool },
    /// The traces in this directory (from `mpicast trace`), scaled when their rank count differs.
    Traces(PathBuf),
    /// A traced run at this many ranks first, then its traces.
    TracedRun(u32),
}

/// The program and how to build, run and trace it: what every prediction of it shares.
#[derive(Debug, Clone)]
pub struct ProgramSpec {
    /// Source files or directories.
    pub inputs: Vec<PathBuf>,
    /// The predicted run's arguments.
    pub args: Vec<String>,
    /// The traced run's arguments (the predicted run's unless they name the process grid).
    pub trace_args: Vec<String>,
    pub build: BuildSpec,
    /// `-D` items as given: they also bind program variables in the static evaluation.
    pub defines: Vec<String>,
    pub launch: LaunchSpec,
}

/// One prediction (`mpicast predict`).
#[derive(Debug, Clone)]
pub struct Request {
    pub program: ProgramSpec,
    pub ranks: u32,
    /// Machine table; None: this host's (mpicc -O2), measured on first use.
    pub machine: Option<PathBuf>,
    /// SimGrid platform; None: this host's network, measured on first use, and the launcher's
    /// start-up on this host added beside the prediction.
    pub platform: Option<PathBuf>,
    pub variant: Variant,
    /// Instruction ops from the compiled code (else from the source's operators).
    pub compiled_ops: bool,
    /// Count data-dependent branches as taken half the time.
    pub assume_branches: bool,
    pub source: Source,
    pub estimate_bulk: bool,
    /// Time limit of a traced run, seconds.
    pub trace_timeout_s: f64,
    pub scaling: Mode,
    /// The traced run's topology when detection does not recognise it (`--force-topology`).
    pub force_topology: Option<String>,
    /// Bursts' measured times (a `--time-blocks` trace) instead of formula (1).
    pub measured: bool,
    /// Predict from a trace some of whose ranks did not finish.
    pub allow_incomplete: bool,
    pub what_if: WhatIf,
    /// One host name per rank, one per line (else round-robin).
    pub mapping: Option<PathBuf>,
    /// Blocks and functions listed.
    pub top: usize,
    pub save_traces: Option<PathBuf>,
    pub timeline: bool,
    pub no_fold: bool,
    /// The replay timed by formula instead of by SimGrid.
    pub analytic: bool,
    /// This host's own machine table checked against the host's speed now.
    pub host_speed: HostSpeed,
}

impl WhatIf {
    /// Refuses scales that are not positive numbers and a background load outside [0, 1).
    pub fn check(&self) -> Result<()> {
        for (name, v) in [
            ("--cpu-scale", self.cpu_scale),
            ("--bw-scale", self.bw_scale),
            ("--lat-scale", self.lat_scale),
        ] {
            if let Some(v) = v {
                if !(v > 0.0 && v.is_finite()) {
                    bail!("{name} {v}: must be a positive number");
                }
            }
        }
        if let Some(l) = self.background_load {
            if !(0.0..1.0).contains(&l) {
                bail!("--background-load {l}: must be at least 0 and below 1");
            }
        }
        Ok(())
    }
}

/// The program's sources, its analysis and the numeric macros it is analysed with.
pub struct Analysed {
    pub files: Vec<PathBuf>,
    pub defines: BTreeMap<String, f64>,
    pub model: ProgramModel,
}

/// Collects the sources of `inputs` and analyses them as `build` compiles them.
pub fn analyse(inputs: &[PathBuf], build: &BuildSpec, assume_branches: bool) -> Result<Analysed> {
    let files = crate::frontend::collect_sources(inputs)?;
    let defines = bindings(build, &files);
    let opts = crate::frontend::Options {
        bindings: defines.clone(),
        assume_branches,
    };
    let model = crate::frontend::analyze_built(&files, &opts, build);
    Ok(Analysed {
        files,
        defines,
        model,
    })
}

/// The analysis' bindings: numeric macros of -D, --cflags and the compilation database.
/// A program variable named like one of the analysis's symbols (`-D size=512`) is bound
/// under its formula symbol too (`size'`).
pub fn bindings(spec: &BuildSpec, files: &[PathBuf]) -> BTreeMap<String, f64> {
    let mut b = spec.numeric_defines(files);
    let primed: Vec<(String, f64)> = b
        .iter()
        .map(|(k, v)| (crate::frontend::analyze::program_symbol(k), *v))
        .filter(|(k, _)| !b.contains_key(k))
        .collect();
    b.extend(primed);
    b
}

/// The machine table at `path`, or this host's (measured on first use); and its path. When the
/// table is this host's own, its speed is checked as `speed` says: the table comes back scaled
/// to the host's speed now (Rescale, outside the deadband), and what the check found as a line
/// in `notes` (the prediction's assumptions).
pub fn machine_table(path: Option<&Path>, speed: HostSpeed, notes: &mut Vec<String>) -> Result<(MachineTable, PathBuf, Option<(crate::machine::speed::SpeedCheck, bool)>)> {
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => default_machine()?,
    };
    let mut table = crate::machine::load_table(&path)?;
    let check = match speed {
        HostSpeed::Off => None,
        _ => match crate::machine::speed::check(&table, &path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("mpicast: this host's speed was not checked against its machine table: {}", one_line(&e));
                None
            }
        },
    };
    let check = check.map(|c| {
        let applied = speed == HostSpeed::Rescale && c.drifted();
        if applied {
            let classes = crate::machine::speed::class_factors(&table, &c);
            table.scale_times(&|class| class.and_then(|k| classes.get(&k)).copied().unwrap_or(c.factor));
        }
        notes.push(speed_assumption(&table, &c, applied));
        (c, applied)
    });
    Ok((table, path, check))
}

/// The assumption line of a host-speed check.
fn speed_assumption(table: &MachineTable, c: &crate::machine::speed::SpeedCheck, applied: bool) -> String {
    let how = if c.factor >= 1.0 { format!("{:.2}x slower", c.factor) } else { format!("{:.2}x faster", 1.0 / c.factor) };
    let what = format!(
        "this host computes {how} than when its machine table was measured ({}; median of {} calibration kernels timed again)",
        table.created_utc,
        c.kernels.len()
    );
    if applied {
        format!("{what}: the table's times scaled class by class as the kernels that use each class drifted, {:.3} where none does (--host-speed warn keeps them)", c.factor)
    } else if c.drifted() {
        format!("{what}: the table used as measured (--host-speed rescale scales it)")
    } else {
        format!("{what}: within the check's repeatability ({:.0}%), the table used as measured", 100.0 * crate::machine::speed::DEADBAND)
    }
}

/// The platforms to predict on: those given (each must exist), or this host's.
pub fn platforms(given: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let platforms = if given.is_empty() {
        vec![default_platform()?]
    } else {
        given.to_vec()
    };
    for p in &platforms {
        if !p.is_file() {
            bail!("{}: no such platform file", p.display());
        }
    }
    Ok(platforms)
}

/// Predicts as `req` says. What the user should know on the way (a fallback to a traced run, a
/// note on the ops) goes to stderr as `mpicast: ...` lines.
pub fn predict(req: &Request) -> Result<Prediction> {
    let prog = &req.program;
    let analysed = analyse(&prog.inputs, &prog.build, req.assume_branches)?;
    let model = &analysed.model;
    // The static path's own failure (an unbound parameter included) is not the end: unless
    // Static { only }, the prediction falls back to a traced run.
    let (bindings, notes, unbound) =
        match super::bind_parameters(model, &analysed.defines, &prog.args) {
            Ok((b, n)) => (b, n, None),
            Err(e) => (analysed.defines.clone(), Vec::new(), Some(e)),
        };
    let mut notes = notes;
    let (machine, machine_path, speed) = machine_table(req.machine.as_deref(), req.host_speed, &mut notes)?;
    let table_created = machine.created_unix_s;
    let platform = platforms(req.platform.as_slice())?.remove(0);
    let mapping = match &req.mapping {
        Some(p) => Mapping::Hosts {
            hosts: crate::sim::replay::read_mapping_file(p)?,
        },
        None => Mapping::RoundRobin,
    };
    let popts = Options {
        ranks: req.ranks,
        bindings,
        args: prog.args.clone(),
        machine,
        machine_path,
        variant: req.variant,
        platform,
        cfg: Vec::new(),
        eager_threshold: None,
        mapping,
        what_if: req.what_if.clone(),
        timeline: req.timeline,
        no_fold: req.no_fold,
        analytic: req.analytic,
        top: req.top,
        assumptions: notes,
        save_traces: req.save_traces.clone(),
        defines: prog.defines.clone(),
        build: prog.build.clone(),
        estimate_bulk: req.estimate_bulk,
        eval_budget_s: None,
        compiled: if req.compiled_ops {
            compiled_ops(&analysed.files, &prog.build, model)
        } else {
            None
        },
        arm_rates: None,
        loop_trips: None,
    };
    let run = TraceRun {
        inputs: &prog.inputs,
        measured: req.measured,
        build: &prog.build,
        launch: &prog.launch,
        args: &prog.trace_args,
        timeout_s: req.trace_timeout_s,
    };
    let scale = scale_request(req.ranks, req.scaling, req.force_topology.as_deref())?;
    let from_trace = |dir: &Path| -> Result<Prediction> {
        let (_, p) = super::predict_trace_scaled(
            dir,
            &popts,
            req.measured,
            req.allow_incomplete,
            Some(&scale),
        )
        .map_err(|e| with_hint(e, model))?;
        Ok(p)
    };
    // A trace of another rank count that cannot be scaled (a mesh with one rank along a
    // dimension, lists that differ between ranks): the program's own arithmetic at N ranks,
    // the static path, when it resolves (counts only: measured bursts need the trace; weak and
    // strong scaling are assumptions the user chose).
    let scaled = |dir: &Path| -> Result<Prediction> {
        let e = match from_trace(dir) {
            // The program's own arithmetic at N' (the static path), where it reproduces the
            // trace at K: what the trace cannot show (loops counted from data, communicators
            // and collectives that exist only at some sizes, counts the master computes) comes
            // from the program, not from the K-rank counts.
            Ok(p) if !req.measured && req.scaling == Mode::Program && unbound.is_none() => {
                let set = crate::trace::set::TraceSet::open(dir).ok();
                return Ok(match set.and_then(|set| static_checked(model, &analysed.defines, &popts, dir, &set, req.allow_incomplete, STATIC_CHECK_TOLERANCE, Some(STATIC_CHECK_BUDGET_S))) {
                    Some(q) => static_for_scaled(p, q),
                    None => p,
                });
            }
            Ok(p) => return Ok(p),
            Err(e) => e,
        };
        let k = crate::trace::discover(dir).ok();
        if req.measured
            || req.scaling != Mode::Program
            || unbound.is_some()
            || k.is_none_or(|k| k == req.ranks)
        {
            return Err(e);
        }
        // Where it needs bulk data estimated, the trace at K checks the estimate.
        let Some(mut p) = super::predict_static(model, &popts)
            .ok()
            .or_else(|| {
                let set = crate::trace::set::TraceSet::open(dir).ok()?;
                static_checked(model, &analysed.defines, &popts, dir, &set, req.allow_incomplete, STATIC_FALLBACK_TOLERANCE, None)
            })
        else {
            return Err(e);
        };
        let why = one_line(&e);
        eprintln!("mpicast: {why}");
        eprintln!("mpicast: predicting at {} ranks from the program's own arithmetic instead (the static path)", req.ranks);
        p.assumptions.insert(
            0,
            format!("the {}-rank trace was not scaled ({why}): counts and messages at {} ranks come from the program's own arithmetic (the static path)", k.unwrap_or(0), req.ranks),
        );
        Ok(p)
    };
    let mut prediction = match &req.source {
        Source::Traces(d) => scaled(d)?,
        Source::TracedRun(k) => {
            let (_tmp, out) = take_trace(&run, *k)?;
            scaled(&out)?
        }
        Source::Static { only } => {
            let attempt = match unbound {
                Some(e) => Err(e),
                None => super::predict_static(model, &popts),
            };
            match attempt {
                Ok(p) => p,
                Err(e) if *only || !static_failure(&e) => return Err(with_hint(e, model)),
                Err(e) => {
                    let why = one_line(&e);
                    let k = fallback_ranks(req.ranks);
                    eprintln!("mpicast: the static path stops: {why}");
                    eprintln!("mpicast: predicting from a traced run at {k} rank{} instead (--static-only refuses)", if k == 1 { "" } else { "s" });
                    let (_tmp, out) = take_trace(&run, k)?;
                    let mut p = from_trace(&out)?;
                    p.fallback = Some(Fallback {
                        static_error: why,
                        traced_ranks: k,
                    });
                    p
                }
            }
        }
    };
    // On this host's own platform, the wall clock a run would show: the launcher's start-up
    // as measured here (once per host, launcher and rank count).
    if req.platform.is_none() {
        let cores = crate::machine::sysinfo::host_info().cores;
        match crate::mpi::startup::startup(&prog.launch, req.ranks, cores) {
            Ok((s, n)) => {
                prediction.startup_s = Some(s);
                prediction.startup_ranks = Some(n);
            }
            Err(e) => eprintln!(
                "mpicast: the launcher's start-up was not measured: {}",
                one_line(&e)
            ),
        }
    }
    // On this host's platform with its own table, as validated here: the interval covers what
    // runs here measured against predictions of this mode.
    let host_platform = match &req.platform {
        None => true,
        // `mpicast validate` names the platform it resolved.
        Some(p) => {
            let own = cached(&format!("networks/{}", hostname())).join("platform.xml");
            p == &own || p.canonicalize().ok().zip(own.canonicalize().ok()).is_some_and(|(a, b)| a == b)
        }
    };
    if host_platform && req.machine.is_none() && req.mapping.is_none() && prediction.what_if.is_empty() {
        use super::calibration;
        let mode = calibration::mode_of(&prediction.mode, prediction.scaling.is_some());
        let c = calibration::for_mode(&calibration::load(&prediction.machine.hostname), table_created, mode);
        prediction.interval_s = calibration::widen(prediction.interval_s, prediction.predicted_s, &c);
        prediction.calibration = Some(c);
    }
    prediction.machine.speed = speed.map(|(c, applied)| crate::model::prediction::HostSpeedRef {
        factor: c.factor,
        applied,
        probed_unix_s: c.probed_unix_s,
    });
    Ok(prediction)
}

/// The static path's prediction `q` in place of the scaled trace's `p`, which its scaling
/// section keeps with a note ("not used") and the loops it rescaled.
fn static_for_scaled(p: Prediction, mut q: Prediction) -> Prediction {
    let rescaled = p.assumptions.iter().filter(|a| a.starts_with("loops the front end cannot count"));
    let was = crate::report::table::seconds(p.predicted_s);
    q.scaling = p.scaling.clone().map(|mut s| {
        s.notes.push(format!("not used ({was}): counts and messages at {} ranks come from the static path, which reproduces the {}-rank trace", s.to_ranks, s.from_ranks));
        s.notes.extend(rescaled.cloned());
        s
    });
    q
}

/// Ranks up to which program scaling checks the static path against the trace (it
/// evaluates every rank, bulk data estimated from prefixes of its loops).
const STATIC_CHECK_MAX: u32 = 64;

/// Seconds the static path may take at the trace's size for the check (the scaled trace is
/// already there: an evaluation that needs longer is not worth it).
const STATIC_CHECK_BUDGET_S: f64 = 20.0;

/// Largest difference between the static path and the trace at the trace's size for the
/// static path to stand for the scaled trace: block executions (weighted by cost) and the
/// predicted time, relative. (pi_dartboard's sampled branch rates are 0.9% off its trace's
/// counts: there the trace, whose kept counts are right, is scaled.)
const STATIC_CHECK_TOLERANCE: f64 = 0.005;

/// The same where the trace cannot be scaled at all: the static path with the difference it
/// shows at K stated is a prediction; none is not (NAS IS: an assumed branch rate, 0.5% of
/// block executions). There the evaluation has the static path's whole budget (NAS IS class
/// A: 31-34 s at 2 ranks on the 2-core VM), not STATIC_CHECK_BUDGET_S.
const STATIC_FALLBACK_TOLERANCE: f64 = 0.05;

/// The static path at `opts.ranks` in place of the traces in `dir` scaled, when it reproduces
/// them at their own size (with the traced run's arguments, which may name the rank count):
/// every block's executions (weighted by the trace's seconds) and the predicted time within
/// `tolerance`, the same number of messages. Values that long loops compute from bulk data are
/// estimated (`--estimate-bulk`): the trace checks the estimate. None when it does not resolve
/// or does not agree.
#[allow(clippy::too_many_arguments)]
fn static_checked(
    model: &ProgramModel,
    defines: &BTreeMap<String, f64>,
    opts: &Options,
    dir: &Path,
    set: &crate::trace::set::TraceSet,
    allow_incomplete: bool,
    tolerance: f64,
    budget_s: Option<f64>,
) -> Option<Prediction> {
    let k = set.ranks;
    if k == opts.ranks || k > STATIC_CHECK_MAX || opts.ranks > STATIC_CHECK_MAX {
        return None;
    }
    // The check at K costs the irregular references as the trace measured them (as the
    // trace's own prediction does); at N the static path keeps the sizes the analysis gives:
    // what a reference touches at K (a rank's share of a distributed table, or a table every
    // rank holds whole) says nothing sure about N.
    let measured = with_footprints(model, set);
    let at = |ranks: u32| Options { ranks, estimate_bulk: true, ..opts.clone() };
    // The check is worth a fraction of the evaluation's budget at K (`budget_s`); it compares
    // every block, not the report's hottest.
    let mut small = Options { eval_budget_s: budget_s, top: usize::MAX, ..at(k) };
    if let Some(args) = set.meta.as_ref().map(|m| m.args.clone()).filter(|a| *a != opts.args) {
        small.bindings = super::bind_parameters(model, defines, &args).ok()?.0;
        small.args = args;
    }
    // A sweep checks once: what the check found is kept by everything it depends on.
    let key = format!(
        "{}|{:?}|{}|{}|{:?}|{:?}|{:?}|{:?}",
        dir.display(),
        small.args,
        small.platform.display(),
        small.machine_path.display(),
        small.variant,
        small.cfg,
        small.eager_threshold,
        budget_s
    );
    let found = {
        let cached = CHECKS.lock().ok().and_then(|m| m.get(&key).cloned());
        match cached {
            Some(f) => f,
            None => {
                let f = check_at_k(&measured, set, &small, allow_incomplete);
                if let Ok(mut m) = CHECKS.lock() {
                    m.insert(key, f.clone());
                }
                f
            }
        }
    }?;
    if found.blocks_off > tolerance || found.time_off > tolerance || !found.same_messages {
        return None;
    }
    let mut big = at(opts.ranks);
    big.arm_rates = found.arm_rates.clone().map(std::sync::Arc::new);
    big.loop_trips = found.loop_trips.clone().map(std::sync::Arc::new);
    let mut p = super::predict_static(&with_exits(model, set), &big).ok()?;
    if let Some(r) = &found.arm_rates {
        p.assumptions.insert(
            0,
            format!("data-dependent branches: {} arm rates taken from the {k}-rank trace (the static path charged them at rates the run did not show)", r.len()),
        );
    }
    p.assumptions.insert(
        0,
        format!(
            "counts and messages at {} ranks from the program's own arithmetic (the static path), which reproduces the {k}-rank trace: block executions within {:.2}% (weighted by cost), the same {} messages, {} against {}",
            opts.ranks,
            100.0 * found.blocks_off,
            found.messages,
            crate::report::table::seconds(found.static_s),
            crate::report::table::seconds(found.traced_s),
        ),
    );
    Some(p)
}

/// `model` (an analysis of the traced program, as the static path uses it) with the trace's
/// measured footprints (`trace::set::measured_footprints`), timed calls and loop exits,
/// matched by block (ids with their files canonical: the trace may name the sources another
/// way) and, for footprints, by the reference's array and access: a static prediction that
/// stands in for the trace costs the irregular references as the trace does.
fn with_footprints(model: &ProgramModel, set: &crate::trace::set::TraceSet) -> ProgramModel {
    let mut out = model.clone();
    let Some(moved) = moved_meta(model, set) else { return out };
    crate::trace::set::measured_footprints(&mut out, &moved);
    crate::trace::set::measured_calls(&mut out, &moved);
    crate::trace::set::measured_exits(&mut out, &moved);
    out
}

/// `model` with the trace's missed loop exits per entry: at another number of ranks, the
/// rate of a loop whose trips the data decides is the traced one.
fn with_exits(model: &ProgramModel, set: &crate::trace::set::TraceSet) -> ProgramModel {
    let mut out = model.clone();
    if let Some(moved) = moved_meta(model, set) {
        crate::trace::set::measured_exits(&mut out, &moved);
    }
    out
}

/// The trace's meta with its block indices those of `model` (what matches no block of it left
/// out).
fn moved_meta(model: &ProgramModel, set: &crate::trace::set::TraceSet) -> Option<crate::model::trace::TraceMeta> {
    let meta = set.meta.as_ref()?;
    let mut canon = crate::objcode::CanonicalIds::default();
    let index: HashMap<String, usize> = model.blocks.iter().enumerate().map(|(i, b)| (canon.id(&b.id), i)).collect();
    let mut moved = meta.clone();
    moved.footprints.retain_mut(|f| {
        let Some(traced) = set.model.blocks.get(f.block as usize) else { return false };
        let Some(&i) = index.get(&canon.id(&traced.id)) else { return false };
        let same = traced.mem.get(f.mem as usize).zip(model.blocks[i].mem.get(f.mem as usize)).is_some_and(|(a, b)| a.array == b.array && a.access == b.access);
        f.block = i as u32;
        same
    });
    // A traced block's index, as this model's (false: it has no such block).
    let mut remap = |b: &mut u32| {
        let Some(traced) = set.model.blocks.get(*b as usize) else { return false };
        let Some(&i) = index.get(&canon.id(&traced.id)) else { return false };
        *b = i as u32;
        true
    };
    moved.calls.retain_mut(|c| remap(&mut c.block));
    moved.loop_exits.retain_mut(|l| remap(&mut l.block));
    Some(moved)
}

/// What the static path at the trace's K ranks shows against the trace (`static_checked`).
#[derive(Clone)]
struct CheckFound {
    /// Block executions off, weighted by the trace's seconds (blocks only the static path
    /// runs counted in full), relative.
    blocks_off: f64,
    /// The predicted times' relative difference.
    time_off: f64,
    same_messages: bool,
    messages: u64,
    static_s: f64,
    traced_s: f64,
    /// Arm rates fitted to the trace (block id -> rate), when the check used them.
    arm_rates: Option<BTreeMap<String, f64>>,
    /// Loop counts taken from the trace (block id -> trips per entry), when the static path
    /// needed them (a loop condition on data).
    loop_trips: Option<BTreeMap<String, f64>>,
}

/// Checks already made in this process (a sweep's points share them); None: the static path
/// did not resolve at K.
static CHECKS: std::sync::LazyLock<std::sync::Mutex<HashMap<String, Option<CheckFound>>>> =
    std::sync::LazyLock::new(Default::default);

fn check_at_k(model: &ProgramModel, set: &crate::trace::set::TraceSet, small: &Options, allow_incomplete: bool) -> Option<CheckFound> {
    let k = set.ranks;
    let debug = std::env::var_os("MPICAST_EVAL_DEBUG").is_some();
    let (_, traced) = super::predict_trace_set(set, small, false, allow_incomplete, None)
        .map_err(|e| debug.then(|| eprintln!("static path against the {k}-rank trace: {e:#}")))
        .ok()?;
    // A loop whose condition depends on data (a convergence loop) runs as often as the trace
    // says: the static path goes on with that count, and the trace checks the rest.
    let (stat, small, loop_trips) = match super::predict_static(model, small) {
        Ok(stat) => (stat, small.clone(), None),
        Err(e) if format!("{e:#}").contains("loop condition depends on data") => {
            let trips = traced_trips(model, &traced, k);
            let again = Options { loop_trips: Some(std::sync::Arc::new(trips.clone())), ..small.clone() };
            let stat = super::predict_static(model, &again)
                .map_err(|e| debug.then(|| eprintln!("static path against the {k}-rank trace, traced loop counts: {e:#}")))
                .ok()?;
            (stat, again, Some(trips))
        }
        Err(e) => {
            if debug {
                eprintln!("static path against the {k}-rank trace: {e:#}");
            }
            return None;
        }
    };
    let small = &small;
    let mut found = compare_at_k(&stat, &traced, None);
    found.loop_trips = loop_trips.clone();
    // Data-dependent branch arms the static path charged at the assumed rate, which the run
    // did not show: the rate that gives the trace's executions, then the check again (arms a
    // sample run measured keep their rate: pi_dartboard's darts). NAS
    // IS's sort check (keys out of order: never, in a run) at an assumed half was 0.5% of its
    // block executions, and the trace was scaled instead (+288% at 4 -> 16).
    let fitted = fit_arm_rates(&stat, &traced);
    if !fitted.is_empty() {
        let again = Options { arm_rates: Some(std::sync::Arc::new(fitted.clone())), ..small.clone() };
        if let Ok(stat2) = super::predict_static(model, &again) {
            let mut refit = compare_at_k(&stat2, &traced, Some(fitted));
            refit.loop_trips = loop_trips.clone();
            if debug {
                eprintln!("static path against the {k}-rank trace, arm rates fitted: blocks {:.4}% (was {:.4}%)", 100.0 * refit.blocks_off, 100.0 * found.blocks_off);
            }
            if refit.blocks_off < found.blocks_off {
                found = refit;
            }
        }
    }
    if debug {
        eprintln!(
            "static path against the {k}-rank trace: blocks {:.4}%, time {} vs {}, messages {} vs {}",
            100.0 * found.blocks_off,
            found.static_s,
            found.traced_s,
            stat.messages,
            traced.messages
        );
    }
    Some(found)
}

/// The static path's prediction against the trace's at the trace's size.
fn compare_at_k(stat: &Prediction, traced: &Prediction, arm_rates: Option<BTreeMap<String, f64>>) -> CheckFound {
    // Blocks by place (the trace may name the sources another way than the analysis did).
    let mut canon = crate::objcode::CanonicalIds::default();
    let execs: HashMap<String, f64> = stat.blocks.iter().map(|b| (canon.id(&b.id), b.executions)).collect();
    let (mut off, mut all) = (0.0, 0.0);
    for b in &traced.blocks {
        let e = execs.get(&canon.id(&b.id)).copied().unwrap_or(0.0);
        if b.executions > 0.0 {
            off += b.seconds * ((e - b.executions) / b.executions).abs().min(1.0);
            all += b.seconds;
        }
    }
    // Blocks the static path runs and the trace never did (an error report it assumed taken).
    let traced_ids: std::collections::HashSet<String> = traced.blocks.iter().map(|b| canon.id(&b.id)).collect();
    for b in stat.blocks.iter().filter(|b| b.executions > 0.0 && !traced_ids.contains(&canon.id(&b.id))) {
        off += b.seconds;
        all += b.seconds;
    }
    CheckFound {
        blocks_off: if all > 0.0 { off / all } else { 0.0 },
        time_off: (stat.predicted_s / traced.predicted_s - 1.0).abs(),
        same_messages: stat.messages == traced.messages,
        messages: traced.messages,
        static_s: stat.predicted_s,
        traced_s: traced.predicted_s,
        arm_rates,
        loop_trips: None,
    }
}

/// Iterations per entry of every loop the trace ran (loop block id -> trips): its executions
/// over its parent's (a block open at MPI_Init, entered once per rank, counts `k`).
fn traced_trips(model: &ProgramModel, traced: &Prediction, k: u32) -> BTreeMap<String, f64> {
    let mut canon = crate::objcode::CanonicalIds::default();
    let execs: HashMap<String, f64> = traced.blocks.iter().map(|b| (canon.id(&b.id), b.executions)).collect();
    let mut out = BTreeMap::new();
    for b in model.blocks.iter().filter(|b| b.kind == crate::model::analysis::BlockKind::Loop) {
        let Some(&e) = execs.get(&canon.id(&b.id)).filter(|e| **e > 0.0) else { continue };
        let entries = b.parent.as_deref().and_then(|p| execs.get(&canon.id(p)).copied()).filter(|p| *p > 0.0).unwrap_or(k as f64);
        out.insert(b.id.clone(), e / entries);
    }
    out
}

/// Rates for the data-dependent arms the static path charged at the assumed rate where the
/// trace's executions contradict it: an arm charged r with e executions, traced t times, is
/// taken r * t / e of the times (an arm's executions are its rate times how often its test
/// runs; an arm inside another is fitted as if the outer one's rate were right).
fn fit_arm_rates(stat: &Prediction, traced: &Prediction) -> BTreeMap<String, f64> {
    let mut canon = crate::objcode::CanonicalIds::default();
    let traced_execs: HashMap<String, f64> = traced.blocks.iter().map(|b| (canon.id(&b.id), b.executions)).collect();
    let stat_execs: HashMap<String, f64> = stat.blocks.iter().map(|b| (canon.id(&b.id), b.executions)).collect();
    let mut out = BTreeMap::new();
    for (id, &used) in &stat.arm_rates {
        let c = canon.id(id);
        let e = stat_execs.get(&c).copied().unwrap_or(0.0);
        if e <= 0.0 || used <= 0.0 {
            continue;
        }
        let t = traced_execs.get(&c).copied().unwrap_or(0.0);
        let fitted = (used * t / e).clamp(0.0, 1.0);
        if (fitted - used).abs() > 1e-9 {
            out.insert(id.clone(), fitted);
        }
    }
    out
}

/// Predictions at several rank counts and on several platforms (`mpicast sweep`).
#[derive(Debug, Clone)]
pub struct SweepRequest {
    pub program: ProgramSpec,
    /// Rank counts, ascending: the first is the speedup's base.
    pub ranks: Vec<u32>,
    pub machine: Option<PathBuf>,
    /// Platforms, one curve each; none: this host's.
    pub platforms: Vec<PathBuf>,
    pub variant: Variant,
    /// Static: the static path at every point (no fallback); traces, or a traced run (limited to
    /// 600 s), scaled to every rank count.
    pub source: Source,
    pub measured: bool,
    pub scaling: Mode,
    pub force_topology: Option<String>,
    /// Hosts of each platform's template, and cores per host.
    pub hosts: Option<u32>,
    pub cores_per_host: Option<u32>,
    /// Ops from the compiled code (`--ops compiled`), as predict.
    pub compiled_ops: bool,
    /// This host's own machine table checked against the host's speed now, as predict.
    pub host_speed: HostSpeed,
    /// Static points predicted at once (1: one after the other).
    pub jobs: usize,
}

/// Where a sweep is, for a progress display.
pub enum SweepStep<'a> {
    /// The predictions are about to start: this many of them.
    Start(u64),
    /// Predicting at `ranks` on `platform`.
    Point { ranks: u32, platform: &'a Path },
    /// That prediction is done.
    Done,
}

/// Predicts every rank count of `req` on every platform: time, speedup and efficiency against
/// the first rank count, the slowest rank's split.
pub fn sweep(req: &SweepRequest, mut progress: impl FnMut(SweepStep)) -> Result<Sweep> {
    let t0 = Instant::now();
    let prog = &req.program;
    let analysed = analyse(&prog.inputs, &prog.build, false)?;
    let model = &analysed.model;
    let (bindings, notes) = super::bind_parameters(model, &analysed.defines, &prog.args)?;
    let mut notes = notes;
    let (machine, machine_path, _) = machine_table(req.machine.as_deref(), req.host_speed, &mut notes)?;
    let platforms = platforms(&req.platforms)?;
    let _tmp;
    let trace_dir = match &req.source {
        Source::Traces(d) => Some(d.clone()),
        Source::TracedRun(k) => {
            let run = TraceRun {
                inputs: &prog.inputs,
                measured: req.measured,
                build: &prog.build,
                launch: &prog.launch,
                args: &prog.trace_args,
                timeout_s: 600.0,
            };
            let (t, out) = take_trace(&run, *k)?;
            _tmp = t;
            Some(out)
        }
        Source::Static { .. } => None,
    };
    let base = Options {
        ranks: 1,
        bindings: bindings.clone(),
        args: prog.args.clone(),
        machine,
        machine_path,
        variant: req.variant,
        platform: platforms[0].clone(),
        cfg: Vec::new(),
        eager_threshold: None,
        mapping: Mapping::RoundRobin,
        what_if: WhatIf {
            hosts: req.hosts,
            cores_per_host: req.cores_per_host,
            ..WhatIf::default()
        },
        timeline: false,
        no_fold: false,
        analytic: false,
        top: 10,
        assumptions: notes,
        save_traces: None,
        defines: prog.defines.clone(),
        build: prog.build.clone(),
        estimate_bulk: false,
        eval_budget_s: None,
        compiled: if req.compiled_ops {
            compiled_ops(&analysed.files, &prog.build, model)
        } else {
            None
        },
        arm_rates: None,
        loop_trips: None,
    };
    progress(SweepStep::Start((req.ranks.len() * platforms.len()) as u64));
    // A static sweep's points are independent: they run on the host's cores at once.
    let mut parallel = match &trace_dir {
        None => static_points(model, &base, &platforms, &req.ranks, req.jobs, &mut progress),
        Some(_) => HashMap::new(),
    };
    let mut points = Vec::new();
    let mut mode = String::from("static");
    let mut topology = None;
    let mut assumptions: Vec<String> = Vec::new();
    // The trace directory, read at the first point and kept for the others.
    let mut set: Option<crate::trace::set::TraceSet> = None;
    for platform in &platforms {
        let mut first: Option<(u32, f64)> = None;
        for &n in &req.ranks {
            let done = parallel.remove(&(platform.clone(), n));
            if done.is_none() {
                progress(SweepStep::Point { ranks: n, platform });
            }
            let opts = Options {
                ranks: n,
                platform: platform.clone(),
                ..base.clone()
            };
            let started = Instant::now();
            let mut wall_s = None;
            let p = match &trace_dir {
                Some(dir) => {
                    let scale = scale_request(n, req.scaling, req.force_topology.as_deref())?;
                    let opened = match set.take() {
                        Some(s) => Ok(s),
                        None => crate::trace::set::TraceSet::open(dir),
                    };
                    let p = opened.and_then(|s| {
                        let p = super::predict_trace_set(&s, &opts, req.measured, false, Some(&scale)).map(|x| x.1);
                        set = Some(s);
                        p
                    });
                    // As predict: the program's own arithmetic where it reproduces the trace
                    // (checked once for the whole sweep).
                    match (p, &set) {
                        (Ok(p), Some(s)) if !req.measured && req.scaling == Mode::Program => {
                            match static_checked(model, &analysed.defines, &opts, dir, s, false, STATIC_CHECK_TOLERANCE, Some(STATIC_CHECK_BUDGET_S)) {
                                Some(q) => Ok(static_for_scaled(p, q)),
                                None => Ok(p),
                            }
                        }
                        // A trace that cannot be scaled: the static path, as predict falls back.
                        (Err(e), Some(s)) if !req.measured && req.scaling == Mode::Program && s.ranks != n => {
                            match super::predict_static(model, &opts).ok().or_else(|| {
                                static_checked(model, &analysed.defines, &opts, dir, s, false, STATIC_FALLBACK_TOLERANCE, None)
                            }) {
                                Some(mut q) => {
                                    q.assumptions.insert(0, format!("the {}-rank trace was not scaled ({}): counts and messages at {n} ranks come from the program's own arithmetic (the static path)", s.ranks, one_line(&e)));
                                    Ok(q)
                                }
                                None => Err(e),
                            }
                        }
                        (other, _) => other,
                    }
                }
                None => match done {
                    Some((p, w)) => {
                        wall_s = Some(w);
                        p
                    }
                    None => super::predict_static(model, &opts),
                },
            }
            .map_err(|e| with_hint(e, model))
            .with_context(|| format!("{n} ranks on {}", platform.display()))?;
            if let Some(s) = &p.scaling {
                mode = format!("trace scaled from {} ranks", s.from_ranks);
                topology.get_or_insert_with(|| {
                    format!(
                        "{} ({}; trace: {}; source: {})",
                        s.topology,
                        s.agreement,
                        s.trace_topology
                            .clone()
                            .unwrap_or_else(|| "not recognised".into()),
                        s.static_topology
                            .clone()
                            .unwrap_or_else(|| "not recognised".into())
                    )
                });
            } else if trace_dir.is_some() {
                mode = p.mode.clone();
            }
            for a in &p.assumptions {
                if !assumptions.contains(a) && !a.starts_with("traces of ") {
                    assumptions.push(a.clone());
                }
            }
            let (b_n, b_t) = *first.get_or_insert((n, p.predicted_s));
            let speedup = if p.predicted_s > 0.0 {
                b_t * b_n as f64 / p.predicted_s
            } else {
                0.0
            };
            let crit = p
                .ranks_detail
                .iter()
                .max_by(|a, b| a.finish_s.total_cmp(&b.finish_s));
            points.push(SweepPoint {
                platform: platform.display().to_string(),
                ranks: n,
                predicted_s: p.predicted_s,
                interval_s: p.interval_s,
                speedup,
                efficiency: speedup / n as f64,
                compute_s: crit.map(|r| r.compute_s).unwrap_or(0.0),
                comm_s: crit.map(|r| r.comm_s).unwrap_or(0.0),
                wait_s: crit.map(|r| r.wait_s).unwrap_or(0.0),
                messages: p.messages,
                wall_s: wall_s.unwrap_or_else(|| started.elapsed().as_secs_f64()),
            });
            if wall_s.is_none() {
                progress(SweepStep::Done);
            }
        }
    }
    Ok(Sweep {
        program: model.files.clone(),
        args: prog.args.clone(),
        bindings,
        mode,
        scaling: req.scaling.name().to_string(),
        trace_ranks: match &req.source {
            Source::TracedRun(k) => Some(*k),
            Source::Traces(d) => set.as_ref().map(|s| s.ranks).or_else(|| crate::trace::discover(d).ok()),
            Source::Static { .. } => None,
        },
        platforms: platforms.iter().map(|p| p.display().to_string()).collect(),
        ranks: req.ranks.clone(),
        points,
        topology,
        assumptions,
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

/// Ranks from which a static point runs alone: its evaluation and simulation take gigabytes
/// (about 85 KiB a rank at 65,536), two of them at once could exhaust the host's memory.
const PARALLEL_POINT_MAX_RANKS: u32 = 16_384;

/// Every static point of a sweep (each platform, each rank count), `max_jobs` at once: each
/// evaluates the program in its own thread and simulates in its own child process. Points of
/// more than PARALLEL_POINT_MAX_RANKS ranks run one at a time. The progress bar advances as
/// points finish. Each point's prediction and its own wall time; empty where one job would run
/// (the sweep then predicts its points in turn).
#[allow(clippy::type_complexity)]
fn static_points(
    model: &ProgramModel,
    base: &Options,
    platforms: &[PathBuf],
    ranks: &[u32],
    max_jobs: usize,
    progress: &mut impl FnMut(SweepStep),
) -> HashMap<(PathBuf, u32), (Result<Prediction>, f64)> {
    let jobs: Vec<(PathBuf, u32)> = platforms.iter().flat_map(|p| ranks.iter().map(move |&n| (p.clone(), n))).collect();
    let workers = max_jobs.min(jobs.len());
    if workers < 2 {
        return HashMap::new();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let large = std::sync::Mutex::new(());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let tx = tx.clone();
            let (jobs, next, large) = (&jobs, &next, &large);
            scope.spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((platform, n)) = jobs.get(i) else { break };
                let _alone = (*n > PARALLEL_POINT_MAX_RANKS).then(|| large.lock().unwrap_or_else(|e| e.into_inner()));
                let opts = Options { ranks: *n, platform: platform.clone(), ..base.clone() };
                let started = Instant::now();
                let p = super::predict_static(model, &opts);
                if tx.send((i, p, started.elapsed().as_secs_f64())).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut out = HashMap::new();
        for (i, p, wall) in rx {
            let (platform, n) = &jobs[i];
            progress(SweepStep::Point { ranks: *n, platform });
            progress(SweepStep::Done);
            out.insert((platform.clone(), *n), (p, wall));
        }
        out
    })
}

/// The scaling request of `--scaling` and `--force-topology`.
pub fn scale_request(ranks: u32, mode: Mode, force: Option<&str>) -> Result<crate::scale::Request> {
    Ok(crate::scale::Request {
        to_ranks: ranks,
        evaluated: Default::default(),
        mode,
        force: force
            .map(crate::scale::detect::parse_topology)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--force-topology {e}"))?,
    })
}

/// `2,4,8` or `2..1024` (powers of two from the first to the last): `-n` of `mpicast sweep`.
pub fn parse_ranks(s: &str) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((a, b)) = part.split_once("..") {
            let a: u32 = a
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("-n {s}: {a:?} is not a rank count"))?;
            let b: u32 = b
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("-n {s}: {b:?} is not a rank count"))?;
            if a == 0 || b < a {
                bail!("-n {s}: a range goes from 1 or more up to at least its start");
            }
            let mut x = a;
            while x <= b {
                out.push(x);
                x = match x.checked_mul(2) {
                    Some(y) => y,
                    None => break,
                };
            }
        } else {
            let n: u32 = part
                .parse()
                .map_err(|_| anyhow::anyhow!("-n {s}: {part:?} is not a rank count"))?;
            if n == 0 {
                bail!("-n {s}: rank counts start at 1");
            }
            out.push(n);
        }
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        bail!("-n {s}: no rank count");
    }
    Ok(out)
}

/// What a traced run needs: the sources, how to build and launch them, the run's arguments.
pub struct TraceRun<'a> {
    pub inputs: &'a [PathBuf],
    pub measured: bool,
    pub build: &'a crate::mpi::build::BuildSpec,
    pub launch: &'a crate::mpi::launch::LaunchSpec,
    pub args: &'a [String],
    pub timeout_s: f64,
}

/// Runs the program instrumented (every block counted, and timed for measured bursts) at `k`
/// ranks into a temporary directory; returns it and the trace directory inside. The program's
/// output goes to stderr: stdout is the prediction's (`--json -`).
pub fn take_trace(run: &TraceRun, k: u32) -> Result<(tempfile::TempDir, PathBuf)> {
    let source = match run.inputs {
        [one] => one.clone(),
        _ => {
            bail!("a traced run takes one source file or directory (give the program's directory)")
        }
    };
    let t = tempfile::Builder::new()
        .prefix("mpicast-trace-run")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let out = t.path().join("traces");
    let files = crate::frontend::collect_sources(run.inputs)?;
    let opts = crate::instrument::TraceOptions {
        source,
        ranks: k,
        output: Some(out.clone()),
        build: run.build.clone(),
        launch: run.launch.clone(),
        args: run.args.to_vec(),
        all_blocks: true,
        time_blocks: run.measured,
        bindings: run.build.numeric_defines(&files),
        timeout_s: Some(run.timeout_s),
        echo: crate::mpi::run::Echo::Stderr,
        ..Default::default()
    };
    eprintln!(
        "mpicast: tracing at {k} ranks: {} PROGRAM {}",
        run.launch.describe(k),
        crate::mpi::build::show(run.args)
    );
    match crate::instrument::trace(&opts) {
        Ok(o) => {
            for w in &o.warnings {
                eprintln!("mpicast: warning: {w}");
            }
        }
        Err(e) => {
            if let Some(f) = e.downcast_ref::<crate::instrument::RunFailure>() {
                for l in f.output_tail.lines() {
                    eprintln!("  | {l}");
                }
            }
            return Err(e.context(format!("the traced run at {k} ranks")));
        }
    }
    Ok((t, out))
}

/// Errors of the static path that a traced run answers (not bad input such as a broken
/// platform file): typed, found anywhere in the cause chain.
fn static_failure(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.is::<super::skeleton::Unresolved>() || c.is::<crate::model::expr::EvalError>()
    })
}

/// The parameter an error says is unbound, from its cause chain.
fn unbound_parameter(e: &anyhow::Error) -> Option<&str> {
    e.chain().find_map(|c| match c.downcast_ref::<crate::model::expr::EvalError>() {
        Some(crate::model::expr::EvalError::Unbound(name)) => Some(name.as_str()),
        _ => None,
    })
}

/// Ranks of the traced run a fallback makes: the predicted count when this host runs it
/// without much oversubscription, else 4 (scaled to N).
fn fallback_ranks(n: u32) -> u32 {
    let cores = std::thread::available_parallelism()
        .map(|c| c.get())
        .unwrap_or(1) as u32;
    if n <= (2 * cores).max(4) {
        n
    } else {
        4
    }
}
/// Adds what would resolve an unbound parameter.
pub fn with_hint(e: anyhow::Error, model: &crate::model::analysis::ProgramModel) -> anyhow::Error {
    let text = one_line(&e);
    if let Some(name) = unbound_parameter(&e) {
        let from_argv = model
            .parameters
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.argv_index);
        let c_name = crate::frontend::analyze::program_name(name);
        let hint = match from_argv {
            Some(k) => format!("pass program argument {k} after `--`, or -D {c_name}=VALUE"),
            None => {
                format!("bind it with -D {c_name}=VALUE, or predict from a trace (--trace-ranks K)")
            }
        };
        return anyhow::anyhow!("{text}; {hint}");
    }
    if e.chain().any(|c| c.is::<super::skeleton::Unresolved>()) {
        return anyhow::anyhow!(
            "{text}; the static path cannot go on: predict from a trace (--trace-ranks K)"
        );
    }
    e
}
fn cached(name: &str) -> PathBuf {
    crate::machine::cache_root().join(name)
}

fn hostname() -> String {
    crate::model::file_name_part(&crate::model::hostname_or("localhost"))
}

/// This host's machine table for mpicc -O2, measured on first use.
pub fn default_machine() -> Result<PathBuf> {
    use std::io::IsTerminal;
    crate::machine::host_table(std::io::stderr().is_terminal())
}

/// This host's network as a platform, measured on first use. One process measures at a time
/// (the others wait for its platform); a platform measured under load is used for this run
/// only, renamed `*.under-load.*`, so the next run measures again.
pub fn default_platform() -> Result<PathBuf> {
    let dir = cached(&format!("networks/{}", hostname()));
    let p = dir.join("platform.xml");
    let _lock = crate::model::CacheLock::acquire(&dir, "default-network")?;
    let table = dir.join("network.json");
    if p.is_file() {
        // A platform fitted through sizes that are now known to be implausible (a busy host's
        // ping-pong, cached before the fit set such sizes aside) is measured again.
        match crate::network::load_table(&table) {
            Ok(t) if !t.implausible_in_fit().is_empty() => eprintln!(
                "mpicast: the cached network platform was fitted through implausible ping-pong times at {} B: measuring it again",
                t.implausible_in_fit().iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
            ),
            // A table measured before the ping-pong timed communicator constructors is
            // measured again (their own work goes into the platform).
            Ok(t) if t.constructors.is_empty() => eprintln!(
                "mpicast: the cached network measurement has no communicator constructors' timings: measuring it again"
            ),
            // A platform written before platforms carried the per-message overheads is
            // written again from its table (the measurement stands).
            Ok(t) if lacks_overheads(&t, &p) => {
                crate::network::bench::write_platform(&t, &p)?;
                return Ok(p);
            }
            _ => return Ok(p),
        }
    } else {
        eprintln!(
            "mpicast: no network measurement for this host yet: measuring one, cached in {}",
            dir.display()
        );
    }
    let measured = measure_network(&table, &p)?;
    if let Some(warning) = measured
        .load
        .as_ref()
        .and_then(|l| l.warning("the network table"))
    {
        let (table_aside, p_aside) = (
            crate::model::under_load_path(&table),
            crate::model::under_load_path(&p),
        );
        for (from, to) in [(&table, &table_aside), (&p, &p_aside)] {
            std::fs::rename(from, to).with_context(|| {
                format!("{}: cannot rename to {}", from.display(), to.display())
            })?;
        }
        eprintln!(
            "mpicast: {warning}; not cached as this host's default: {} is used for this run",
            p_aside.display()
        );
        return Ok(p_aside);
    }
    Ok(p)
}

/// Whether the table measured per-message overheads that its platform file does not carry.
fn lacks_overheads(t: &crate::model::network::NetworkTable, platform: &Path) -> bool {
    let measured = t.smpi.smpi_only_cfg.iter().any(|c| !c.ends_with(":0:0:0"));
    measured && std::fs::read_to_string(platform).is_ok_and(|x| !x.contains(crate::platform::OS_PROP))
}

/// `mpicast bench network --quick` between two ranks of this host, its report on stderr
/// (stdout is the prediction's: `--json -`): the table at `table`, the platform at `platform`,
/// checked by replaying the ping-pong on it.
fn measure_network(table: &Path, platform: &Path) -> Result<crate::model::network::NetworkTable> {
    use crate::network::bench;
    use std::io::IsTerminal;
    let start = std::time::Instant::now();
    let mut measured = bench::measure(&bench::Options {
        mpicc: "mpicc".into(),
        launcher: None,
        hosts: Vec::new(),
        mpirun_args: Vec::new(),
        ranks: 2,
        max_size: 16 << 20,
        budget_s: 0.5,
        quick: true,
        progress: std::io::stderr().is_terminal(),
    })?;
    eprint!("{}", crate::report::network_text(&measured));
    let check = bench::write_platform(&measured, platform)?;
    eprint!("{}", crate::report::self_check_text(&check, platform));
    let passed = check.max_rel_error <= check.tolerance;
    measured.self_check = Some(check);
    measured.duration_s = start.elapsed().as_secs_f64();
    crate::model::write_artifact(table, &measured)?;
    if !passed {
        bail!(
            "{}: the measured platform does not reproduce this host's ping-pong (see the self-check above)",
            platform.display()
        );
    }
    Ok(measured)
}

/// The compiled code's ops per block (`--ops compiled`), or None with a note when the program
/// cannot be rebuilt with -g or its code not read: the source's ops then.
fn compiled_ops(
    files: &[PathBuf],
    build: &crate::mpi::build::BuildSpec,
    model: &crate::model::analysis::ProgramModel,
) -> Option<std::sync::Arc<crate::objcode::CompiledOps>> {
    let r = crate::objcode::build_debug(files, build).and_then(|exe| {
        exe.map(|e| crate::objcode::compiled_ops(model, &e))
            .transpose()
    });
    match r {
        Ok(Some(c)) => Some(std::sync::Arc::new(c)),
        Ok(None) => {
            eprintln!("mpicast: a --build command is not rebuilt with -g: ops from the source (--ops source)");
            None
        }
        Err(e) => {
            eprintln!(
                "mpicast: ops from the source: the compiled code could not be read: {}",
                one_line(&e)
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::analysis::{Parameter, ProgramModel};
    use crate::model::expr::EvalError;

    fn model_with_argv_n() -> ProgramModel {
        ProgramModel {
            parameters: vec![Parameter {
                name: "n".into(),
                origin: "argv".into(),
                argv_index: Some(1),
                default: None,
                file: "a.c".into(),
                line: 3,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn an_unbound_parameter_is_found_by_type_under_context() {
        let e = anyhow::Error::new(EvalError::Unbound("n".into()))
            .context("a.c:7: loop bound")
            .context("the static path");
        assert!(static_failure(&e));
        assert_eq!(unbound_parameter(&e), Some("n"));
        let hinted = one_line(&with_hint(e, &model_with_argv_n()));
        assert!(hinted.ends_with("; pass program argument 1 after `--`, or -D n=VALUE"), "{hinted}");
    }

    #[test]
    fn text_that_only_looks_like_a_static_failure_is_not_one() {
        // A platform file naming a host "unbound parameter x" is bad input, not a limit of the
        // static path: no fallback to a traced run, no hint.
        let e = anyhow::anyhow!("p.xml:3: host `unbound parameter x` is defined twice");
        assert!(!static_failure(&e));
        assert_eq!(unbound_parameter(&e), None);
        let same = one_line(&with_hint(e, &model_with_argv_n()));
        assert_eq!(same, "p.xml:3: host `unbound parameter x` is defined twice");
        let u = anyhow::Error::new(crate::predict::skeleton::Unresolved {
            file: "a.c".into(),
            line: 9,
            what: "MPI_Send: count `k` is not known before running".into(),
        });
        assert!(static_failure(&u));
        assert!(one_line(&with_hint(u, &ProgramModel::default()))
            .ends_with("predict from a trace (--trace-ranks K)"));
    }
}
