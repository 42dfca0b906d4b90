//! `mpicast validate`: real runs against predictions in every mode.
//!
//! Builds the program (src/mpi's build model) into a temporary directory, runs it through
//! src/mpi's launcher `runs` times per rank count, timing each run three ways: its span
//! (MPI_Init's return to MPI_Finalize's call on the slowest rank, from a preloaded PMPI library,
//! `mpi::span`: what a prediction covers), the program's own `elapsed_s=` line when it prints
//! one, and the launcher's wall clock (start-up = wall - span). The one compared is `compare`
//! (the span by default, else what the run gave). Each mode is predicted by running this
//! executable's own `mpicast predict ... --json -` (so a prediction is exactly what a user would
//! get, and a mode that cannot run is only "n/a"). Progress goes to stderr as `validate: ...`
//! lines; the result is a `mpicast/validation` artifact.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::model::one_line;
use crate::model::prediction::Prediction;
use crate::model::validation::{
    Measured, ModeResult, ModeSummary, Validation, ValidationHost, ValidationPoint,
};
use crate::mpi::build::BuildSpec;
use crate::mpi::launch::LaunchSpec;
use crate::mpi::run::{describe, run_captured, Echo};
use crate::mpi::span::SpanDir;

/// The modes, in the order they are predicted and shown.
pub const MODES: [&str; 4] = ["static", "trace", "measured", "scaled"];

/// What a run is compared by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// MPI_Init to MPI_Finalize on the slowest rank: what a prediction covers.
    Span,
    /// The program's own `elapsed_s=` line.
    Elapsed,
    /// The launcher's wall clock.
    Wall,
}

impl Compare {
    pub fn name(self) -> &'static str {
        match self {
            Compare::Span => "span",
            Compare::Elapsed => "elapsed",
            Compare::Wall => "wall",
        }
    }
}

/// A validation: the program, how it is built and run, and what is predicted.
#[derive(Debug, Clone)]
pub struct Request {
    pub inputs: Vec<PathBuf>,
    /// Rank counts, ascending, each once.
    pub ranks: Vec<u32>,
    /// The program's arguments.
    pub args: Vec<String>,
    /// Real runs per rank count.
    pub runs: u32,
    /// Platform to predict on; None: this host's (as `mpicast predict` measures and caches it),
    /// with this host's core count.
    pub platform: Option<PathBuf>,
    pub machine: Option<PathBuf>,
    /// Modes to predict (of [`MODES`]), each once.
    pub modes: Vec<String>,
    /// Ranks of the run the scaled mode starts from.
    pub scale_from: Option<u32>,
    pub build: BuildSpec,
    pub launch: LaunchSpec,
    /// The build and launch flags as given, passed on to each `mpicast predict`.
    pub build_flags: Vec<String>,
    pub launch_flags: Vec<String>,
    /// The scaled mode's traced run's arguments, as given (`--trace-args`).
    pub trace_args: Option<String>,
    pub cores_per_host: Option<u32>,
    /// Time limit of each run and of each prediction.
    pub timeout_s: f64,
    /// Recorded in the validation (the caller decides what an error over it means).
    pub max_error_pct: Option<f64>,
    pub compare: Compare,
    /// The predictions' instruction ops from the compiled code (else from the source).
    pub compiled_ops: bool,
}

/// A validation and what its table shows besides.
pub struct Outcome {
    pub validation: Validation,
    /// The program's name in messages.
    pub name: String,
    /// Notes for the table (a core count corrected).
    pub notes: Vec<String>,
    /// Rank counts whose real run failed, with why.
    pub failures: Vec<String>,
}

/// One real run's times.
struct RunTimes {
    /// The slowest rank's MPI_Init-to-MPI_Finalize span, when every rank wrote one.
    span: Option<f64>,
    /// The program's own last `elapsed_s=`.
    elapsed: Option<f64>,
    /// The launcher's wall clock.
    wall: f64,
}

impl RunTimes {
    /// The time compared and its name, as `--compare` asks and the run allows.
    fn pick(&self, want: &str) -> (f64, &'static str) {
        match (want, self.span, self.elapsed) {
            ("wall", _, _) => (self.wall, "wall"),
            ("elapsed", _, Some(e)) => (e, "elapsed_s"),
            (_, Some(s), _) => (s, "span"),
            (_, None, Some(e)) => (e, "elapsed_s"),
            _ => (self.wall, "wall"),
        }
    }
}

/// Builds, runs and predicts as `req` says.
pub fn validate(req: &Request) -> Result<Outcome> {
    let start = Instant::now();
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let files = crate::frontend::collect_sources(&req.inputs)?;
    let name = program_name(&req.inputs);

    let work = tempfile::Builder::new()
        .prefix("mpicast-validate")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let (exe, build_cmd) = build(&req.inputs, &files, work.path(), &name, &req.build)?;

    let host_info = crate::machine::sysinfo::host_info();
    let load_before = loadavg();
    let exe_path = crate::sim::child::mpicast_exe()?;
    let spans =
        match crate::mpi::span::shim("mpicc").and_then(|s| crate::mpi::span::SpanDir::new(&s)) {
            Ok(d) => Some(d),
            Err(e) => {
                eprintln!(
                    "validate: no span measurement (runs are compared by their own times): {}",
                    one_line(&e)
                );
                None
            }
        };
    let mut platform_shown = req.platform.as_ref().map(|p| p.display().to_string());
    let mut machine_shown = req.machine.as_ref().map(|p| p.display().to_string());
    // The default platform is checked once (after the first prediction names it): one host
    // must have this host's cores, or oversubscription would be predicted wrong.
    let mut cores_fix: Option<u32> = req.cores_per_host;
    let mut platform_checked = req.platform.is_some() || req.cores_per_host.is_some();
    // This host's platform is found (or measured) once here rather than by every prediction:
    // one measured under load is not cached, and each would measure it again.
    let platform = match &req.platform {
        Some(p) => p.clone(),
        None => crate::predict::session::default_platform()?,
    };
    let mut notes: Vec<String> = Vec::new();

    let mut points: Vec<ValidationPoint> = Vec::new();
    let mut calibration_records = Vec::new();
    let mut calibration_host = String::new();
    let mut failures: Vec<String> = Vec::new();
    for &n in &req.ranks {
        // Real runs.
        let mut runs: Vec<RunTimes> = Vec::new();
        let mut failure = None;
        let meter = crate::model::load::LoadMeter::start();
        for r in 0..req.runs {
            match run_program(
                &req.launch,
                n,
                &exe,
                &req.args,
                spans.as_ref(),
                req.timeout_s,
            ) {
                Ok(t) => {
                    let (v, what) = t.pick(req.compare.name());
                    eprintln!(
                        "validate: {name} n={n} run {}/{}: {} ({what}; mpirun {}{})",
                        r + 1,
                        req.runs,
                        fmt_s(v),
                        fmt_s(t.wall),
                        t.span
                            .map(|s| format!(", start-up {}", fmt_s(t.wall - s)))
                            .unwrap_or_default()
                    );
                    runs.push(t);
                }
                Err(e) => {
                    let msg = one_line(&e);
                    eprintln!(
                        "validate: {name} n={n} run {}/{}: failed: {msg}",
                        r + 1,
                        req.runs
                    );
                    failure = Some(msg);
                    break;
                }
            }
        }
        let measured = if failure.is_none() {
            Some(measured_of(&runs, req.compare.name()))
        } else {
            None
        };
        // The launcher's start-up at n ranks, for predictions on this host (mpicast/startup);
        // not from runs under load, which would stand for this host's start-up afterwards.
        let load = meter.finish();
        if let Some(w) = load.as_ref().and_then(|l| l.warning("the start-up")) {
            eprintln!("validate: n={n}: {w}: not recorded");
        } else if let Some(m) = measured.as_ref().filter(|m| !m.startup_s.is_empty()) {
            if let Err(e) = crate::mpi::startup::record(&req.launch, n, &m.startup_s, "validate") {
                eprintln!("validate: start-up not recorded: {}", one_line(&e));
            }
        }
        if let Some(f) = &failure {
            failures.push(format!("n={n}: {f}"));
        }

        // Predictions.
        let mut predictions = Vec::new();
        for mode in &req.modes {
            if measured.is_none() {
                predictions.push(na(
                    mode,
                    None,
                    "not predicted: the real run failed",
                    Vec::new(),
                    0.0,
                ));
                continue;
            }
            let k = match mode.as_str() {
                "static" => None,
                "trace" | "measured" => Some(n),
                _ => match scale_base(&req.ranks, n, req.scale_from) {
                    Ok(k) => Some(k),
                    Err(why) => {
                        eprintln!("validate: {name} n={n} {mode}: n/a: {why}");
                        predictions.push(na(mode, None, &why, Vec::new(), 0.0));
                        continue;
                    }
                },
            };
            let mut res = predict_mode(&exe_path, req, &platform, mode, n, k, cores_fix);
            if !platform_checked {
                if let Some(p) = &res.1 {
                    platform_checked = true;
                    let host_cores = p.hosts.first().map(|h| h.cores as u32);
                    if p.hosts.len() == 1 && host_cores != Some(host_info.cores) {
                        let msg = format!(
                            "the default platform {} gives its host {} cores, this host has {}: predicting with --cores-per-host {}",
                            p.platform,
                            host_cores.unwrap_or(0),
                            host_info.cores,
                            host_info.cores
                        );
                        eprintln!("validate: {msg}");
                        notes.push(msg);
                        cores_fix = Some(host_info.cores);
                        res = predict_mode(&exe_path, req, &platform, mode, n, k, cores_fix);
                    }
                }
            }
            let (mut r, pred) = res;
            if let Some(p) = &pred {
                platform_shown.get_or_insert_with(|| p.platform.clone());
                machine_shown.get_or_insert_with(|| p.machine.path.clone());
                let m = measured.as_ref().map(|m| m.median_s).unwrap_or(0.0);
                r.error_pct = Some(error_pct(p.predicted_s, m));
                // A prediction for this host with its own table: what the run measured against
                // it widens later predictions' intervals (predict::calibration).
                if let (Some(c), true) = (&p.calibration, m > 0.0 && p.predicted_s > 0.0) {
                    calibration_host.clone_from(&p.machine.hostname);
                    calibration_records.push(crate::predict::calibration::Record {
                        table: c.table_created_unix_s,
                        mode: mode.to_string(),
                        ratio: m / p.predicted_s,
                        program: name.clone(),
                        ranks: n,
                        recorded_unix_s: started_unix_s,
                    });
                }
            }
            match (&r.predicted_s, &r.reason) {
                (Some(t), _) => eprintln!(
                    "validate: {name} n={n} {mode}: {} ({:+.1}%; predicted in {:.1} s)",
                    fmt_s(*t),
                    r.error_pct.unwrap_or(0.0),
                    r.wall_s
                ),
                (None, Some(why)) => eprintln!("validate: {name} n={n} {mode}: n/a: {why}"),
                _ => {}
            }
            predictions.push(r);
        }
        points.push(ValidationPoint {
            ranks: n,
            measured,
            failure,
            predictions,
        });
    }

    if let Err(e) = crate::predict::calibration::record(&calibration_host, &calibration_records) {
        eprintln!("validate: this host's calibration was not updated: {}", crate::model::one_line(&e));
    }
    let summary = summarise(&req.modes, &points);
    let validation = Validation {
        program: req.inputs.iter().map(|p| p.display().to_string()).collect(),
        args: req.args.clone(),
        build: build_cmd,
        launch: req
            .launch
            .command(req.ranks.last().copied().unwrap_or(1), &exe, &req.args, &[])
            .map(|l| l.shown())
            .unwrap_or_default(),
        runs: req.runs,
        platform: platform_shown.unwrap_or_else(|| "(default)".into()),
        cores_per_host: cores_fix,
        machine: machine_shown.unwrap_or_else(|| "(default)".into()),
        host: ValidationHost {
            hostname: host_info.hostname.clone(),
            cpu_model: host_info.cpu_model.clone(),
            cores: host_info.cores,
            load_before,
            load_after: loadavg(),
        },
        modes: req.modes.clone(),
        points,
        summary,
        max_error_pct: req.max_error_pct,
        started_unix_s,
        wall_s: start.elapsed().as_secs_f64(),
    };
    Ok(Outcome {
        validation,
        name,
        notes,
        failures,
    })
}

/// The program's name for messages: the first input's file name.
pub fn program_name(inputs: &[PathBuf]) -> String {
    inputs
        .first()
        .and_then(|p| p.file_name())
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "program".into())
}

/// 100 x (predicted - measured) / measured.
pub fn error_pct(predicted_s: f64, measured_s: f64) -> f64 {
    if measured_s > 0.0 {
        100.0 * (predicted_s - measured_s) / measured_s
    } else {
        f64::NAN
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => 0.5 * (s[n / 2 - 1] + s[n / 2]),
    }
}

fn loadavg() -> [f64; 3] {
    let s = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut it = s
        .split_whitespace()
        .map(|x| x.parse::<f64>().unwrap_or(f64::NAN));
    [
        it.next().unwrap_or(f64::NAN),
        it.next().unwrap_or(f64::NAN),
        it.next().unwrap_or(f64::NAN),
    ]
}

/// The rank count the scaled mode starts from for N.
fn scale_base(ranks: &[u32], n: u32, given: Option<u32>) -> std::result::Result<u32, String> {
    if let Some(k) = given {
        if k >= n {
            return Err(format!("--scale-from {k} is not below {n} ranks"));
        }
        return Ok(k);
    }
    let below: Vec<u32> = ranks.iter().copied().filter(|&k| k < n).collect();
    below
        .iter()
        .copied()
        .find(|&k| k >= 2)
        .or_else(|| below.first().copied())
        .ok_or_else(|| format!("no rank count below {n} in -n to scale from"))
}

/// Builds the program as the build model says (the default build, or the --build command in a
/// copy of the tree) into `dir`; returns the executable and the commands shown.
fn build(
    inputs: &[PathBuf],
    files: &[PathBuf],
    dir: &Path,
    name: &str,
    spec: &BuildSpec,
) -> Result<(PathBuf, Vec<String>)> {
    use crate::mpi::build::{find_executable, is_unit, run_steps, show, write_wrappers};
    if let Some(cmd) = &spec.command {
        let [root] = inputs else {
            bail!("--build runs in a copy of one source directory: give the program's directory");
        };
        if !root.is_dir() {
            bail!(
                "{}: --build needs the program's directory, not a file",
                root.display()
            );
        }
        let copy = dir.join("src");
        crate::instrument::copy_sources(root, true, &copy)?;
        let bin = dir.join("bin");
        write_wrappers(&bin, spec, &[])?;
        let since = std::time::SystemTime::now() - Duration::from_secs(1);
        let step = vec!["sh".to_string(), "-c".to_string(), cmd.clone()];
        run_steps(std::slice::from_ref(&step), &copy, Some(&bin), name, "")?;
        let exe = find_executable(&copy, since, spec.exe.as_deref(), ".mpicast")
            .map_err(|m| anyhow::anyhow!("{name}: {m}"))?;
        return Ok((exe, vec![cmd.clone()]));
    }
    let units: Vec<PathBuf> = files.iter().filter(|f| is_unit(f)).cloned().collect();
    if units.is_empty() {
        bail!("{name}: no C or C++ file to compile among the sources (headers only?)");
    }
    let stem = Path::new(name)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "program".into());
    let exe = dir.join(stem);
    let steps = spec.default_steps(&units, &units, &exe, &[], dir);
    run_steps(&steps, Path::new("."), None, name, "")?;
    Ok((exe, steps.iter().map(|c| show(c)).collect()))
}

/// The last non-empty line of some output.
fn last_line(s: &str) -> &str {
    s.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("---"))
        .unwrap_or("no output")
}

/// The runs of one rank count as compared: every run is compared by the same measure (the
/// first of `want`, span, elapsed, wall that all of them gave).
fn measured_of(runs: &[RunTimes], want: &str) -> Measured {
    let order: &[&str] = match want {
        "wall" => &["wall"],
        "elapsed" => &["elapsed_s", "span", "wall"],
        _ => &["span", "elapsed_s", "wall"],
    };
    let get = |r: &RunTimes, what: &str| match what {
        "span" => r.span,
        "elapsed_s" => r.elapsed,
        _ => Some(r.wall),
    };
    let source = order
        .iter()
        .copied()
        .find(|w| runs.iter().all(|r| get(r, w).is_some()))
        .unwrap_or("wall");
    let t: Vec<f64> = runs.iter().filter_map(|r| get(r, source)).collect();
    let all = |what: &str| -> Vec<f64> {
        if runs.iter().all(|r| get(r, what).is_some()) {
            runs.iter().filter_map(|r| get(r, what)).collect()
        } else {
            Vec::new()
        }
    };
    let span_s = all("span");
    Measured {
        median_s: median(&t),
        min_s: t.iter().copied().fold(f64::INFINITY, f64::min),
        max_s: t.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        runs_s: t,
        source: source.to_string(),
        wall_s: runs.iter().map(|r| r.wall).collect(),
        startup_s: if span_s.is_empty() {
            Vec::new()
        } else {
            runs.iter().zip(&span_s).map(|(r, s)| r.wall - s).collect()
        },
        span_s,
        elapsed_s: all("elapsed_s"),
    }
}

/// One real run, with the span library preloaded when there is one.
fn run_program(
    launch: &LaunchSpec,
    n: u32,
    exe: &Path,
    args: &[String],
    spans: Option<&SpanDir>,
    timeout_s: f64,
) -> Result<RunTimes> {
    let vars = spans.map(SpanDir::vars).unwrap_or_default();
    let (l, env) = launch.command_with_vars(n, exe, args, &vars)?;
    let f = l.run(&env, Echo::Keep, Some(timeout_s))?;
    let shown = l.shown().join(" ");
    if f.timed_out {
        bail!("`{shown}` stopped after the {timeout_s} s time limit");
    }
    if !f.status.success() {
        bail!(
            "`{shown}` failed ({}): {}",
            describe(&f.status),
            last_line(&f.tail)
        );
    }
    Ok(RunTimes {
        span: spans.and_then(|d| d.take(n)).map(|s| s.max_s()),
        elapsed: elapsed_from(&f.stdout),
        wall: f.wall_s,
    })
}

/// The last `elapsed_s=<seconds>` the program printed.
pub fn elapsed_from(out: &str) -> Option<f64> {
    out.split_whitespace()
        .filter_map(|w| w.strip_prefix("elapsed_s="))
        .filter_map(|v| v.trim_end_matches([',', ';']).parse::<f64>().ok())
        .rfind(|t| t.is_finite() && *t >= 0.0)
}

/// Why predict failed, in one line: its own error line (the last line it printed), or where it
/// panicked, or its status and last line.
fn failure_reason(stderr: &str, status: &ExitStatus) -> String {
    let last = last_line(stderr);
    if let Some(msg) = last.strip_prefix("mpicast: ") {
        return tidy_reason(msg);
    }
    let lines: Vec<&str> = stderr.lines().map(str::trim).collect();
    if let Some(k) = lines.iter().position(|l| l.contains("panicked at")) {
        let at = lines[k]
            .split("panicked at")
            .nth(1)
            .unwrap_or("")
            .trim()
            .trim_end_matches(':');
        let what = lines.get(k + 1).copied().unwrap_or("");
        return format!("mpicast predict panicked at {at}: {what}");
    }
    format!("mpicast predict failed ({status}): {last}")
}

/// A reason without the temporary trace directory predict names first (it is gone by now).
fn tidy_reason(line: &str) -> String {
    let tmp = std::env::temp_dir();
    if let Some((head, rest)) = line.split_once(": ") {
        if Path::new(head).starts_with(&tmp) && head.contains("mpicast-") {
            return rest.to_string();
        }
    }
    line.to_string()
}

fn na(mode: &str, k: Option<u32>, why: &str, command: Vec<String>, wall_s: f64) -> ModeResult {
    ModeResult {
        mode: mode.to_string(),
        status: "n/a".into(),
        predicted_s: None,
        interval_s: None,
        error_pct: None,
        trace_ranks: k,
        reason: Some(why.to_string()),
        command,
        wall_s,
    }
}

/// Predicts one mode at N ranks through `mpicast predict ... --json -`.
fn predict_mode(
    exe: &Path,
    req: &Request,
    platform: &Path,
    mode: &str,
    n: u32,
    k: Option<u32>,
    cores: Option<u32>,
) -> (ModeResult, Option<Prediction>) {
    let mut a: Vec<String> = vec!["predict".into()];
    a.extend(req.inputs.iter().map(|p| p.display().to_string()));
    a.extend(["-n".into(), n.to_string()]);
    a.extend(["--platform".into(), platform.display().to_string()]);
    if let Some(m) = &req.machine {
        a.extend(["--machine".into(), m.display().to_string()]);
    }
    if let Some(c) = cores {
        a.extend(["--cores-per-host".into(), c.to_string()]);
    }
    a.extend(req.build_flags.iter().cloned());
    a.push(format!(
        "--ops={}",
        if req.compiled_ops {
            "compiled"
        } else {
            "source"
        }
    ));
    if let Some(k) = k {
        a.extend(["--trace-ranks".into(), k.to_string()]);
        a.extend(req.launch_flags.iter().cloned());
        if k != n {
            if let Some(t) = &req.trace_args {
                a.push(format!("--trace-args={t}"));
            }
        }
    }
    if mode == "static" {
        a.push("--static-only".into());
    }
    if mode == "measured" {
        a.push("--measured".into());
    }
    a.extend(["--json".into(), "-".into(), "--".into()]);
    a.extend(req.args.iter().cloned());
    let t0 = Instant::now();
    let f = match run_captured(Command::new(exe).args(&a), Echo::Keep, Some(req.timeout_s)) {
        Ok(f) => f,
        Err(e) => {
            let why = format!("cannot start {}: {e}", exe.display());
            return (na(mode, k, &why, a, t0.elapsed().as_secs_f64()), None);
        }
    };
    let wall_s = f.wall_s;
    let why = match f.status {
        _ if f.timed_out => format!(
            "the prediction was stopped after the {} s time limit",
            req.timeout_s
        ),
        s if !s.success() => failure_reason(&f.tail, &s),
        _ => {
            match crate::model::parse_artifact::<Prediction>(&f.stdout, "mpicast predict --json -")
            {
                Ok(p) => {
                    let r = ModeResult {
                        mode: mode.to_string(),
                        status: "ok".into(),
                        predicted_s: Some(p.predicted_s),
                        interval_s: Some(p.interval_s),
                        error_pct: None,
                        trace_ranks: k,
                        reason: None,
                        command: a,
                        wall_s,
                    };
                    return (r, Some(p));
                }
                Err(e) => e.to_string(),
            }
        }
    };
    (na(mode, k, &why, a, wall_s), None)
}

fn summarise(modes: &[String], points: &[ValidationPoint]) -> BTreeMap<String, ModeSummary> {
    let mut out = BTreeMap::new();
    for m in modes {
        let mut errs = Vec::new();
        let mut unavailable = 0;
        for p in points {
            for r in p.predictions.iter().filter(|r| &r.mode == m) {
                match r.error_pct {
                    Some(e) if e.is_finite() => errs.push(e.abs()),
                    _ => unavailable += 1,
                }
            }
        }
        let mape = (!errs.is_empty()).then(|| errs.iter().sum::<f64>() / errs.len() as f64);
        let max = errs
            .iter()
            .copied()
            .fold(None, |a: Option<f64>, e| Some(a.map_or(e, |a| a.max(e))));
        out.insert(
            m.clone(),
            ModeSummary {
                points: errs.len() as u32,
                unavailable,
                mape_pct: mape,
                max_abs_error_pct: max,
            },
        );
    }
    out
}

fn fmt_s(s: f64) -> String {
    crate::report::table::seconds_as(s, crate::report::table::BRIEF)
}

pub fn over_bound(v: &Validation, bound: f64) -> Vec<String> {
    let mut over = Vec::new();
    for p in &v.points {
        for r in &p.predictions {
            if let Some(e) = r.error_pct {
                if e.abs() > bound {
                    over.push(format!("{} n={} ({:+.1}%)", r.mode, p.ranks, e));
                }
            }
        }
    }
    over
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elapsed_is_the_last_one_printed() {
        assert_eq!(
            elapsed_from("a=1 elapsed_s=2.5e-1\nelapsed_s=0.75\n"),
            Some(0.75)
        );
        assert_eq!(
            elapsed_from("iterations=3 elapsed_s=1.0 contact=2"),
            Some(1.0)
        );
        assert_eq!(elapsed_from("no time here"), None);
    }

    #[test]
    fn scaled_mode_starts_from_the_smallest_count_of_two_or_more() {
        assert_eq!(scale_base(&[1, 2, 4], 4, None), Ok(2));
        assert_eq!(scale_base(&[1, 2, 4], 2, None), Ok(1));
        assert!(scale_base(&[1, 2, 4], 1, None).is_err());
        assert_eq!(scale_base(&[2, 4], 4, Some(1)), Ok(1));
    }

    #[test]
    fn median_of_even_and_odd_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!((error_pct(1.1, 1.0) - 10.0).abs() < 1e-9);
    }
}
