//! `mpicast sweep SRC -n 2,4,...,1024 [--platform A --platform B] [--trace-ranks K]`: the
//! predicted time, speedup and efficiency of a program against its number of ranks, on one or
//! more platforms; a table, an SVG plot, and the mpicast/sweep JSON.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use super::predict::{
    default_machine, default_platform, json_out, scale_request, take_trace, with_hint, write_text,
};
use crate::report::table::short_path;
use crate::frontend;
use crate::model::machine::Variant;
use crate::model::sweep::{Sweep, SweepPoint};
use crate::model::trace::Mapping;
use crate::predict::{self, WhatIf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Source files or directories of the program.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Rank counts: a list (2,4,8) or a range of powers of two (2..1024).
    #[arg(short = 'n', long = "ranks", value_name = "LIST")]
    ranks: String,
    /// SimGrid platform (repeatable: one curve per platform; default: this host as measured).
    #[arg(long, value_name = "FILE")]
    platform: Vec<PathBuf>,
    /// Machine table (default: this host with mpicc -O2, measured on first use and cached).
    #[arg(long, value_name = "FILE")]
    machine: Option<PathBuf>,
    /// Op costs: fitted (the bounded fit on the calibration kernels, compiled loops in context; the
    /// default) or raw (each class's throughput kernel alone). A table without a fit uses raw.
    #[arg(long, default_value = "fitted", value_parser = ["fitted", "raw"])]
    costs: String,
    /// Bind a parameter or macro: -D n=1024 (repeatable).
    #[command(flatten)]
    build: super::flags::BuildArgs,
    #[command(flatten)]
    launch: super::flags::LaunchArgs,
    /// The traced run's arguments, when they differ from the predicted runs' (arguments that
    /// name the process grid) [default: the program arguments].
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    trace_args: Option<String>,
    /// Scale the traces in DIR (from `mpicast trace`) to every rank count.
    #[arg(long, value_name = "DIR", conflicts_with = "trace_ranks")]
    trace: Option<PathBuf>,
    /// Trace at K ranks once and scale to every rank count.
    #[arg(long, value_name = "K")]
    trace_ranks: Option<u32>,
    /// Use the trace's measured burst times (`--time-blocks`).
    #[arg(long)]
    measured: bool,
    /// How compute and messages change with the number of ranks (program, weak, strong).
    #[arg(long, default_value = "program", value_parser = ["program", "weak", "strong"])]
    scaling: String,
    /// The traced run's topology when detection does not recognise it.
    #[arg(long, value_name = "TOPOLOGY")]
    force_topology: Option<String>,
    /// Hosts of each platform's template (as predict --hosts).
    #[arg(long, value_name = "H")]
    hosts: Option<u32>,
    /// Cores per host.
    #[arg(long, value_name = "C")]
    cores_per_host: Option<u32>,
    /// Write the sweep (mpicast/sweep JSON) to FILE, `-` for stdout.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write the plot (time, speedup, efficiency against ranks) as SVG.
    #[arg(long, value_name = "FILE", default_value = "sweep.svg")]
    svg: PathBuf,
    /// Also write the HTML report of the sweep.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Program arguments, exactly as the program would get them.
    #[arg(last = true)]
    program_args: Vec<String>,
}

/// `2,4,8` or `2..1024` (powers of two from the first to the last).
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

pub fn run(args: Args) -> Result<ExitCode> {
    let t0 = Instant::now();
    let ranks = parse_ranks(&args.ranks)?;
    let build = args.build.spec(&args.inputs)?;
    let launch = args.launch.spec()?;
    let trace_args = super::flags::trace_args(args.trace_args.as_deref(), &args.program_args)?;
    let files = frontend::collect_sources(&args.inputs)?;
    let defines = args.build.bindings(&build, &files);
    let model = frontend::analyze_built(
        &files,
        &frontend::Options {
            bindings: defines.clone(),
            assume_branches: false,
        },
        &build,
    );
    let (bindings, notes) = predict::bind_parameters(&model, &defines, &args.program_args)?;
    let machine_path = match &args.machine {
        Some(p) => p.clone(),
        None => default_machine()?,
    };
    let machine = crate::machine::load_table(&machine_path)?;
    let platforms = if args.platform.is_empty() {
        vec![default_platform()?]
    } else {
        args.platform.clone()
    };
    for p in &platforms {
        if !p.is_file() {
            bail!("{}: no such platform file", p.display());
        }
    }
    let _tmp;
    let trace_dir = match (&args.trace, args.trace_ranks) {
        (Some(d), _) => Some(d.clone()),
        (None, Some(k)) => {
            let run = super::predict::TraceRun {
                inputs: &args.inputs,
                measured: args.measured,
                build: &build,
                launch: &launch,
                args: &trace_args,
                timeout_s: 600.0,
            };
            let (t, out) = take_trace(&run, k)?;
            _tmp = t;
            Some(out)
        }
        (None, None) => None,
    };
    let base = predict::Options {
        ranks: 1,
        bindings: bindings.clone(),
        args: args.program_args.clone(),
        machine,
        machine_path,
        variant: if args.costs == "fitted" {
            Variant::Fitted
        } else {
            Variant::Throughput
        },
        platform: platforms[0].clone(),
        cfg: Vec::new(),
        eager_threshold: None,
        mapping: Mapping::RoundRobin,
        what_if: WhatIf {
            hosts: args.hosts,
            cores_per_host: args.cores_per_host,
            ..WhatIf::default()
        },
        timeline: false,
        no_fold: false,
        top: 10,
        assumptions: notes,
        save_traces: None,
        defines: args.build.define.clone(),
        build: build.clone(),
        estimate_bulk: false,
        compiled: None,
    };
    let total = (ranks.len() * platforms.len()) as u64;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("sweep [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut points = Vec::new();
    let mut mode = String::from("static");
    let mut topology = None;
    let mut assumptions: Vec<String> = Vec::new();
    for platform in &platforms {
        let mut first: Option<(u32, f64)> = None;
        for &n in &ranks {
            bar.set_message(format!(
                "{n} ranks on {}",
                short_path(&platform.display().to_string())
            ));
            let opts = predict::Options {
                ranks: n,
                platform: platform.clone(),
                ..base.clone()
            };
            let started = Instant::now();
            let p = match &trace_dir {
                Some(dir) => {
                    let req = scale_request(n, &args.scaling, args.force_topology.as_deref())?;
                    predict::predict_trace_scaled(dir, &opts, args.measured, false, Some(&req))
                        .map(|x| x.1)
                }
                None => predict::predict_static(&model, &opts),
            }
            .map_err(|e| with_hint(e, &model))
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
                wall_s: started.elapsed().as_secs_f64(),
            });
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let sweep = Sweep {
        program: model.files.clone(),
        args: args.program_args.clone(),
        bindings,
        mode,
        scaling: args.scaling.clone(),
        trace_ranks: match (&trace_dir, args.trace_ranks) {
            (_, Some(k)) => Some(k),
            (Some(d), None) => crate::trace::discover(d).ok(),
            _ => None,
        },
        platforms: platforms.iter().map(|p| p.display().to_string()).collect(),
        ranks: ranks.clone(),
        points,
        topology,
        assumptions,
        wall_s: t0.elapsed().as_secs_f64(),
    };
    write_text(&args.svg, &crate::report::sweep_svg(&sweep))?;
    if let Some(f) = &args.html {
        write_text(f, &crate::report::html_sweep(&sweep)?)?;
    }
    if json_out(args.json.as_deref(), &sweep)? {
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", crate::report::sweep_text(&sweep));
    println!("plot: {}", args.svg.display());
    Ok(ExitCode::SUCCESS)
}
