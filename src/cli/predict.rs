//! `mpicast predict SRC -n N [--platform FILE] [--machine FILE] [-D NAME=VALUE] [--json FILE]
//! [-- PROGRAM ARGS]`: the predicted run time of a program, without running it (static path) or
//! from an instrumented run's traces (trace path).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::predict::session::{self, Request, Source};
use crate::predict::WhatIf;

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
    #[command(flatten)]
    costs: super::flags::CostArgs,
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
    #[arg(long, value_enum, default_value = "program")]
    scaling: super::flags::Scaling,
    /// The traced run's topology, when detection does not recognise it: master-worker[:ROOT],
    /// independent, pairs, mesh:AxB[xC], torus:AxB[xC], chain:N, ring:N.
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
    /// Time the replay by formula in one event queue instead of simulating it in SimGrid: a
    /// message takes the platform's latency and bandwidth (SMPI's factors and overheads), and a
    /// link's later transfers delay the earlier ones by the bytes they have in common (SimGrid's
    /// sharing, approximated). For rank counts SimGrid cannot reach in reasonable time; SimGrid
    /// stays the reference.
    #[arg(long)]
    analytic: bool,
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
    let what_if = WhatIf {
        cpu_scale: args.cpu_scale,
        bw_scale: args.bw_scale,
        lat_scale: args.lat_scale,
        background_load: args.background_load,
        hosts: args.hosts,
        cores_per_host: args.cores_per_host,
    };
    what_if.check()?;
    let req = Request {
        program: super::flags::program_spec(&args.inputs, &args.build, &args.launch, args.trace_args.as_deref(), &args.program_args)?,
        ranks: args.ranks,
        machine: args.costs.machine.clone(),
        platform: args.platform.clone(),
        variant: args.costs.costs.variant(),
        compiled_ops: args.costs.ops == super::flags::Ops::Compiled,
        assume_branches: args.assume_branches,
        source: match (&args.trace, args.trace_ranks) {
            (Some(d), _) => Source::Traces(d.clone()),
            (None, Some(k)) => Source::TracedRun(k),
            (None, None) => Source::Static { only: args.static_only },
        },
        estimate_bulk: args.estimate_bulk,
        trace_timeout_s: args.trace_timeout,
        scaling: args.scaling.mode(),
        force_topology: args.force_topology.clone(),
        measured: args.measured,
        allow_incomplete: args.allow_incomplete,
        what_if,
        mapping: args.mapping.clone(),
        top: args.top,
        save_traces: args.save_traces.clone(),
        timeline: args.timeline || args.html.is_some() || args.chrome_trace.is_some(),
        no_fold: args.no_fold,
        analytic: args.analytic,
        host_speed: args.costs.host_speed.session(),
    };
    let prediction = session::predict(&req)?;
    if let Some(f) = &args.html {
        super::write_text(f, &crate::report::html_prediction(&prediction)?)?;
    }
    if let Some(f) = &args.chrome_trace {
        super::write_text(f, &crate::report::chrome_trace(&prediction)?)?;
    }
    if super::json_out(args.json.as_deref(), &prediction)? {
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", crate::report::prediction_text(&prediction));
    Ok(ExitCode::SUCCESS)
}
