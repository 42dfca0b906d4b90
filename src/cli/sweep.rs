//! `mpicast sweep SRC -n 2,4,...,1024 [--platform A --platform B] [--trace-ranks K]`: the
//! predicted time, speedup and efficiency of a program against its number of ranks, on one or
//! more platforms; a table, an SVG plot, and the mpicast/sweep JSON.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

use crate::predict::session::{self, Source, SweepRequest, SweepStep};
use crate::report::table::short_path;

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
    #[command(flatten)]
    costs: super::flags::CostArgs,
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
    #[arg(long, value_enum, default_value = "program")]
    scaling: super::flags::Scaling,
    /// The traced run's topology when detection does not recognise it.
    #[arg(long, value_name = "TOPOLOGY")]
    force_topology: Option<String>,
    /// Hosts of each platform's template (as predict --hosts).
    #[arg(long, value_name = "H")]
    hosts: Option<u32>,
    /// Cores per host.
    #[arg(long, value_name = "C")]
    cores_per_host: Option<u32>,
    /// Static points predicted at once [default: this host's cores]: each evaluates the
    /// program and simulates in a process of its own; points of more than 16,384 ranks run
    /// one at a time (memory).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
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

pub fn run(args: Args) -> Result<ExitCode> {
    let ranks = session::parse_ranks(&args.ranks)?;
    let req = SweepRequest {
        program: super::flags::program_spec(&args.inputs, &args.build, &args.launch, args.trace_args.as_deref(), &args.program_args)?,
        ranks,
        machine: args.costs.machine.clone(),
        platforms: args.platform.clone(),
        variant: args.costs.costs.variant(),
        source: match (&args.trace, args.trace_ranks) {
            (Some(d), _) => Source::Traces(d.clone()),
            (None, Some(k)) => Source::TracedRun(k),
            (None, None) => Source::Static { only: true },
        },
        measured: args.measured,
        scaling: args.scaling.mode(),
        force_topology: args.force_topology.clone(),
        hosts: args.hosts,
        cores_per_host: args.cores_per_host,
        compiled_ops: args.costs.ops == super::flags::Ops::Compiled,
        host_speed: args.costs.host_speed.session(),
        jobs: args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |c| c.get())).max(1),
    };
    let bar = ProgressBar::new(0);
    let sweep = session::sweep(&req, |step| match step {
        SweepStep::Start(total) => {
            bar.set_length(total);
            bar.set_style(
                ProgressStyle::with_template("sweep [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
        }
        SweepStep::Point { ranks, platform } => {
            bar.set_message(format!("{ranks} ranks on {}", short_path(&platform.display().to_string())))
        }
        SweepStep::Done => bar.inc(1),
    })?;
    bar.finish_and_clear();
    super::write_text(&args.svg, &crate::report::sweep_svg(&sweep))?;
    if let Some(f) = &args.html {
        super::write_text(f, &crate::report::html_sweep(&sweep)?)?;
    }
    if super::json_out(args.json.as_deref(), &sweep)? {
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", crate::report::sweep_text(&sweep));
    println!("plot: {}", args.svg.display());
    Ok(ExitCode::SUCCESS)
}
