//! `mpicast predict SRC -n N [--platform FILE] [--machine FILE] [-D NAME=VALUE] [--json FILE]
//! [-- PROGRAM ARGS]`: the predicted run time of a program, without running it (static path) or
//! from an instrumented run's traces (trace path).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};

use crate::frontend;
use crate::model::machine::Variant;
use crate::model::prediction::Prediction;
use crate::model::trace::Mapping;
use crate::predict::{self, WhatIf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Source files or directories of the program.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Number of ranks (MPI processes).
    #[arg(short = 'n', long = "ranks")]
    ranks: u32,
    /// SimGrid platform (default: this host as measured by `mpicast bench network`, measured on
    /// first use and cached).
    #[arg(long, value_name = "FILE")]
    platform: Option<PathBuf>,
    /// Machine table (default: this host with mpicc -O2, measured on first use and cached).
    #[arg(long, value_name = "FILE")]
    machine: Option<PathBuf>,
    /// Op costs: fitted (the bounded fit on the calibration kernels, compiled loops in context; the
    /// default) or raw (each class's throughput kernel alone). A table without a fit uses raw.
    #[arg(long, default_value = "fitted", value_parser = ["fitted", "raw"])]
    costs: String,
    /// Where a block's instruction ops come from: compiled (the default: the program built with
    /// its compiler and flags plus -g, each instruction placed in its block by the DWARF line
    /// table: what -O2 vectorised, hoisted and inlined; library calls keep the source's counts)
    /// or source (the operators written). When the program cannot be rebuilt (a --build
    /// command, a compile error), source, with a note.
    #[arg(long, default_value = "compiled", value_parser = ["source", "compiled"], value_name = "FROM")]
    ops: String,
    #[command(flatten)]
    build: super::flags::BuildArgs,
    #[command(flatten)]
    launch: super::flags::LaunchArgs,
    /// Count data-dependent branches as taken half the time (the static path always does
    /// for branches without communication, and reports it).
    #[arg(long, hide = true)]
    assume_branches: bool,
    /// Write the prediction (mpicast/prediction JSON) to FILE, `-` for stdout.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Use the traces in DIR (from `mpicast trace`) instead of skeleton execution.
    #[arg(long, value_name = "DIR", conflicts_with = "trace_ranks")]
    trace: Option<PathBuf>,
    /// Run the program instrumented at K ranks first and predict from its traces.
    #[arg(long, value_name = "K")]
    trace_ranks: Option<u32>,
    /// The traced run's arguments, when they differ from the predicted run's (arguments that
    /// name the process grid): --trace-args "2 2 1" [default: the program arguments].
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    trace_args: Option<String>,
    /// Never run the program: when the static path cannot resolve it, fail (exit 2) instead of
    /// falling back to a traced run.
    #[arg(long, conflicts_with_all = ["trace", "trace_ranks"])]
    static_only: bool,
    /// Static path: where a message count or loop bound depends on what a long loop computes
    /// from bulk data (a histogram of generated keys), run that loop's first iterations and
    /// scale its sums to all of them (an estimate, listed in the assumptions) instead of
    /// refusing.
    #[arg(long)]
    estimate_bulk: bool,
    /// Stop a traced run after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 600.0)]
    trace_timeout: f64,
    /// When the trace has another number of ranks than -n: how compute and messages change.
    /// program: the program's own formulas evaluated at the new size where they resolve (what
    /// they do not cover keeps its size; halo messages follow the grid's faces); weak: per-rank
    /// work and messages kept; strong: compute divided by the growth, halos shrunk with the faces.
    #[arg(long, default_value = "program", value_parser = ["program", "weak", "strong"])]
    scaling: String,
    /// The traced run's topology, when detection does not recognise it: master-worker[:ROOT],
    /// independent, mesh:AxB[xC], torus:AxB[xC], chain:N, ring:N.
    #[arg(long, value_name = "TOPOLOGY")]
    force_topology: Option<String>,
    /// With a --time-blocks trace: use the bursts' measured times (block benchmarking) instead
    /// of formula (1).
    #[arg(long)]
    measured: bool,
    /// Predict from a trace some of whose ranks did not finish.
    #[arg(long)]
    allow_incomplete: bool,
    /// Compute runs this many times faster on the target.
    #[arg(long, value_name = "X")]
    cpu_scale: Option<f64>,
    /// Every link's bandwidth multiplied by X.
    #[arg(long, value_name = "X")]
    bw_scale: Option<f64>,
    /// Every link's latency multiplied by X.
    #[arg(long, value_name = "X")]
    lat_scale: Option<f64>,
    /// The platform's template with this many hosts.
    #[arg(long, value_name = "H")]
    hosts: Option<u32>,
    /// Cores per host.
    #[arg(long, value_name = "C")]
    cores_per_host: Option<u32>,
    /// One host name per rank, one per line.
    #[arg(long, value_name = "FILE")]
    mapping: Option<PathBuf>,
    /// Share of each core taken by other work (0 to 1).
    #[arg(long, value_name = "FRACTION")]
    background_load: Option<f64>,
    /// How many blocks and functions to list.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Write the per-rank traces the prediction simulates (compute in seconds) to DIR.
    #[arg(long, value_name = "DIR")]
    save_traces: Option<PathBuf>,
    /// Keep the simulated per-rank timeline in the JSON.
    #[arg(long)]
    timeline: bool,
    /// Simulate every iteration of the main loop. By default a loop that every rank runs the
    /// same number of times is simulated until its iterations repeat in time (within 0.2%),
    /// and the remaining ones are added.
    #[arg(long)]
    no_fold: bool,
    /// Also write the HTML report (source view, timeline, tables) to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Also write the simulated timeline in the Trace Event Format (Perfetto, chrome://tracing).
    #[arg(long, value_name = "FILE")]
    chrome_trace: Option<PathBuf>,
    /// Program arguments, exactly as the program would get them.
    #[arg(last = true)]
    program_args: Vec<String>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.ranks == 0 {
        bail!("-n must be at least 1");
    }
    for (name, v) in [
        ("--cpu-scale", args.cpu_scale),
        ("--bw-scale", args.bw_scale),
        ("--lat-scale", args.lat_scale),
    ] {
        if let Some(v) = v {
            if !(v > 0.0 && v.is_finite()) {
                bail!("{name} {v}: must be a positive number");
            }
        }
    }
    if let Some(l) = args.background_load {
        if !(0.0..1.0).contains(&l) {
            bail!("--background-load {l}: must be at least 0 and below 1");
        }
    }
    let build = args.build.spec(&args.inputs)?;
    let launch = args.launch.spec()?;
    let trace_args = super::flags::trace_args(args.trace_args.as_deref(), &args.program_args)?;
    let files = frontend::collect_sources(&args.inputs)?;
    let defines = args.build.bindings(&build, &files);
    let opts = frontend::Options {
        bindings: defines.clone(),
        assume_branches: args.assume_branches,
    };
    let model = frontend::analyze_built(&files, &opts, &build);
    // The static path's own failure (an unbound parameter included) is not the end: unless
    // --static-only, the prediction falls back to a traced run.
    let bound = predict::bind_parameters(&model, &defines, &args.program_args);
    let (bindings, notes, unbound) = match bound {
        Ok((b, n)) => (b, n, None),
        Err(e) => (defines.clone(), Vec::new(), Some(e)),
    };

    let machine_path = match &args.machine {
        Some(p) => p.clone(),
        None => default_machine()?,
    };
    let machine = crate::machine::load_table(&machine_path)?;
    let platform = match &args.platform {
        Some(p) => p.clone(),
        None => default_platform()?,
    };
    if !platform.is_file() {
        bail!("{}: no such platform file", platform.display());
    }
    let mapping = match &args.mapping {
        Some(p) => Mapping::Hosts {
            hosts: crate::sim::replay::read_mapping_file(p)?,
        },
        None => Mapping::RoundRobin,
    };
    let what_if = WhatIf {
        cpu_scale: args.cpu_scale,
        bw_scale: args.bw_scale,
        lat_scale: args.lat_scale,
        background_load: args.background_load,
        hosts: args.hosts,
        cores_per_host: args.cores_per_host,
    };
    let popts = predict::Options {
        ranks: args.ranks,
        bindings,
        args: args.program_args.clone(),
        machine,
        machine_path,
        variant: if args.costs == "fitted" {
            Variant::Fitted
        } else {
            Variant::Throughput
        },
        platform,
        cfg: Vec::new(),
        eager_threshold: None,
        mapping,
        what_if,
        timeline: args.timeline || args.html.is_some() || args.chrome_trace.is_some(),
        no_fold: args.no_fold,
        top: args.top,
        assumptions: notes,
        save_traces: args.save_traces.clone(),
        defines: args.build.define.clone(),
        build: build.clone(),
        estimate_bulk: args.estimate_bulk,
        compiled: if args.ops == "compiled" { compiled_ops(&files, &build, &model) } else { None },
    };
    let run = TraceRun {
        inputs: &args.inputs,
        measured: args.measured,
        build: &build,
        launch: &launch,
        args: &trace_args,
        timeout_s: args.trace_timeout,
    };
    let req = scale_request(args.ranks, &args.scaling, args.force_topology.as_deref())?;
    let from_trace = |dir: &Path| -> Result<Prediction> {
        let (_, p) = predict::predict_trace_scaled(
            dir,
            &popts,
            args.measured,
            args.allow_incomplete,
            Some(&req),
        )
        .map_err(|e| with_hint(e, &model))?;
        Ok(p)
    };
    // A trace of another rank count that cannot be scaled (a mesh with one rank along a
    // dimension, lists that differ between ranks): the program's own arithmetic at N ranks,
    // the static path, when it resolves (counts only: measured bursts need the trace; weak and
    // strong scaling are assumptions the user chose).
    let scaled = |dir: &Path| -> Result<Prediction> {
        let e = match from_trace(dir) {
            Ok(p) => return Ok(p),
            Err(e) => e,
        };
        let k = crate::trace::discover(dir).ok();
        if args.measured || args.scaling != "program" || unbound.is_some() || k.is_none_or(|k| k == args.ranks) {
            return Err(e);
        }
        let Ok(mut p) = predict::predict_static(&model, &popts) else { return Err(e) };
        let why = super::one_line(&e);
        eprintln!("mpicast: {why}");
        eprintln!("mpicast: predicting at {} ranks from the program's own arithmetic instead (the static path)", args.ranks);
        p.assumptions.insert(
            0,
            format!("the {}-rank trace was not scaled ({why}): counts and messages at {} ranks come from the program's own arithmetic (the static path)", k.unwrap_or(0), args.ranks),
        );
        Ok(p)
    };
    let mut prediction = match (&args.trace, args.trace_ranks) {
        (Some(d), _) => scaled(d)?,
        (None, Some(k)) => {
            let (_tmp, out) = take_trace(&run, k)?;
            scaled(&out)?
        }
        (None, None) => {
            let attempt = match unbound {
                Some(e) => Err(e),
                None => predict::predict_static(&model, &popts),
            };
            match attempt {
                Ok(p) => p,
                Err(e) if args.static_only || !static_failure(&e) => {
                    return Err(with_hint(e, &model))
                }
                Err(e) => {
                    let why = super::one_line(&e);
                    let k = fallback_ranks(args.ranks);
                    eprintln!("mpicast: the static path stops: {why}");
                    eprintln!("mpicast: predicting from a traced run at {k} rank{} instead (--static-only refuses)", if k == 1 { "" } else { "s" });
                    let (_tmp, out) = take_trace(&run, k)?;
                    let mut p = from_trace(&out)?;
                    p.fallback = Some(crate::model::prediction::Fallback {
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
    if args.platform.is_none() {
        let cores = crate::machine::sysinfo::host_info().cores;
        match crate::mpi::startup::startup(&launch, args.ranks, cores) {
            Ok((s, n)) => {
                prediction.startup_s = Some(s);
                prediction.startup_ranks = Some(n);
            }
            Err(e) => eprintln!("mpicast: the launcher's start-up was not measured: {}", super::one_line(&e)),
        }
    }
    if let Some(f) = &args.html {
        write_text(f, &crate::report::html_prediction(&prediction)?)?;
    }
    if let Some(f) = &args.chrome_trace {
        write_text(f, &crate::report::chrome_trace(&prediction)?)?;
    }
    if json_out(args.json.as_deref(), &prediction)? {
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", crate::report::prediction_text(&prediction));
    Ok(ExitCode::SUCCESS)
}

/// What a traced run needs: the sources, how to build and launch them, the run's arguments.
pub(super) struct TraceRun<'a> {
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
pub(super) fn take_trace(run: &TraceRun, k: u32) -> Result<(tempfile::TempDir, PathBuf)> {
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
    let files = frontend::collect_sources(run.inputs)?;
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
/// platform file).
fn static_failure(e: &anyhow::Error) -> bool {
    if e.downcast_ref::<predict::skeleton::Unresolved>().is_some() {
        return true;
    }
    let text = super::one_line(e);
    [
        "unbound parameter",
        "not known before running",
        "needs a trace",
        "cannot be evaluated",
        "unresolved",
        "data-dependent",
    ]
    .iter()
    .any(|k| text.contains(k))
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

/// The scaling request of `--scaling` and `--force-topology`.
pub(super) fn scale_request(
    ranks: u32,
    scaling: &str,
    force: Option<&str>,
) -> Result<crate::scale::Request> {
    Ok(crate::scale::Request {
        to_ranks: ranks,
        mode: crate::scale::Mode::parse(scaling)
            .ok_or_else(|| anyhow::anyhow!("--scaling {scaling}: program, weak or strong"))?,
        force: force
            .map(crate::scale::detect::parse_topology)
            .transpose()
            .map_err(|e| anyhow::anyhow!("--force-topology {e}"))?,
    })
}

/// Writes a text output file (a report, a plot), naming it when it cannot.
pub(super) fn write_text(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))
}

/// `--json FILE` (`-`: stdout). True when the artifact went to stdout, which then holds nothing
/// else.
pub(super) fn json_out<T: crate::model::Artifact>(
    path: Option<&Path>,
    artifact: &T,
) -> Result<bool> {
    match path {
        Some(p) if p.as_os_str() == "-" => {
            print!("{}", crate::model::to_json(artifact));
            Ok(true)
        }
        Some(p) => {
            crate::model::write_artifact(p, artifact)?;
            Ok(false)
        }
        None => Ok(false),
    }
}

/// Adds what would resolve an unbound parameter.
pub(super) fn with_hint(
    e: anyhow::Error,
    model: &crate::model::analysis::ProgramModel,
) -> anyhow::Error {
    let text = super::one_line(&e);
    if let Some(name) = text
        .split("unbound parameter ")
        .nth(1)
        .map(|s| s.split_whitespace().next().unwrap_or(""))
    {
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
    if e.downcast_ref::<predict::skeleton::Unresolved>().is_some() {
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

/// Runs this executable's own subcommand (a benchmark), progress on stderr.
fn run_self(args: &[&str]) -> Result<()> {
    let exe = crate::sim::child::mpicast_exe()?;
    // Its output goes to stderr: stdout is the prediction's (`--json -`).
    let status = Command::new(&exe)
        .args(args)
        .stdout(std::process::Stdio::from(std::io::stderr()))
        .status()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    if !status.success() {
        bail!("`mpicast {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

/// This host's machine table for mpicc -O2, measured on first use.
pub(super) fn default_machine() -> Result<PathBuf> {
    use std::io::IsTerminal;
    crate::machine::host_table(std::io::stderr().is_terminal())
}

/// This host's network as a platform, measured on first use. One process measures at a time
/// (the others wait for its platform); a platform measured under load is used for this run
/// only, renamed `*.under-load.*`, so the next run measures again.
pub(super) fn default_platform() -> Result<PathBuf> {
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
            _ => return Ok(p),
        }
    } else {
        eprintln!(
            "mpicast: no network measurement for this host yet: measuring one, cached in {}",
            dir.display()
        );
    }
    run_self(&[
        "bench",
        "network",
        "--quick",
        "-o",
        &table.to_string_lossy(),
        "--platform-out",
        &p.to_string_lossy(),
    ])?;
    let measured: crate::model::network::NetworkTable = crate::model::read_artifact(&table)?;
    if let Some(warning) = measured.load.as_ref().and_then(|l| l.warning("the network table")) {
        let (table_aside, p_aside) = (
            crate::model::under_load_path(&table),
            crate::model::under_load_path(&p),
        );
        for (from, to) in [(&table, &table_aside), (&p, &p_aside)] {
            std::fs::rename(from, to)
                .with_context(|| format!("{}: cannot rename to {}", from.display(), to.display()))?;
        }
        eprintln!(
            "mpicast: {warning}; not cached as this host's default: {} is used for this run",
            p_aside.display()
        );
        return Ok(p_aside);
    }
    Ok(p)
}

/// The compiled code's ops per block (`--ops compiled`), or None with a note when the program
/// cannot be rebuilt with -g or its code not read: the source's ops then.
fn compiled_ops(files: &[PathBuf], build: &crate::mpi::build::BuildSpec, model: &crate::model::analysis::ProgramModel) -> Option<std::sync::Arc<crate::objcode::CompiledOps>> {
    let r = crate::objcode::build_debug(files, build).and_then(|exe| exe.map(|e| crate::objcode::compiled_ops(model, &e)).transpose());
    match r {
        Ok(Some(c)) => Some(std::sync::Arc::new(c)),
        Ok(None) => {
            eprintln!("mpicast: a --build command is not rebuilt with -g: ops from the source (--ops source)");
            None
        }
        Err(e) => {
            eprintln!("mpicast: ops from the source: the compiled code could not be read: {}", super::one_line(&e));
            None
        }
    }
}
