//! `mpicast trace SRC -n N [-o DIR] [--build CMD] [-D NAME[=VALUE]] [--mpirun-args ARGS] [-- ARGS]`: runs the
//! program instrumented under mpirun and collects per-rank traces (traces/FORMAT.md), with the
//! analysis and a meta file, in traces/<program>-n<N>/ by default.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::instrument::{self, RunFailure, TraceOptions};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The program's sources: one C or C++ file, or a directory (searched recursively).
    source: PathBuf,
    /// Number of MPI ranks.
    #[arg(short = 'n', long = "ranks", value_name = "N")]
    ranks: u32,
    /// Trace directory [default: traces/<program>-n<N>].
    #[arg(short = 'o', long, value_name = "DIR")]
    output: Option<PathBuf>,
    #[command(flatten)]
    build: super::flags::BuildArgs,
    #[command(flatten)]
    launch: super::flags::LaunchArgs,
    /// Count every block, not only those the analysis cannot count.
    #[arg(long)]
    all_blocks: bool,
    /// Also measure each compute burst (CLOCK_MONOTONIC): `compute blocks ... time=S`.
    #[arg(long)]
    time_blocks: bool,
    /// Run only K iterations of main's time-step loop (its trip count must be known); the meta
    /// file gives the full count for extrapolation.
    #[arg(long, value_name = "K")]
    sample_iterations: Option<u64>,
    /// Also build and run the program without instrumentation and report the slowdown.
    #[arg(long)]
    compare_plain: bool,
    /// Keep the work directory (the instrumented copy, the build, the raw traces).
    #[arg(long)]
    keep: bool,
    /// Work in this directory (kept) instead of a temporary one.
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Stop the run after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<f64>,
    /// The program's arguments (after --).
    #[arg(last = true, value_name = "ARGS")]
    args: Vec<String>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let build = args.build.spec(std::slice::from_ref(&args.source))?;
    let files = crate::frontend::collect_sources(std::slice::from_ref(&args.source))?;
    let bindings = crate::predict::session::bindings(&build, &files);
    let opts = TraceOptions {
        source: args.source,
        ranks: args.ranks,
        output: args.output,
        build,
        launch: args.launch.spec()?,
        echo: crate::mpi::run::Echo::Through,
        args: args.args,
        all_blocks: args.all_blocks,
        time_blocks: args.time_blocks,
        sample_iterations: args.sample_iterations,
        bindings,
        keep_work: args.keep,
        work_dir: args.work_dir,
        compare_plain: args.compare_plain,
        timeout_s: args.timeout,
    };
    let outcome = match instrument::trace(&opts) {
        Ok(o) => o,
        Err(e) => {
            if let Some(f) = e.downcast_ref::<RunFailure>() {
                if !f.output_tail.trim().is_empty() {
                    eprintln!("mpicast: the last lines of the output:");
                    for l in f.output_tail.lines() {
                        eprintln!("  | {l}");
                    }
                }
            }
            return Err(e);
        }
    };
    for w in &outcome.warnings {
        eprintln!("mpicast: warning: {w}");
    }
    print!("{}", crate::report::trace_text(&outcome.meta, &outcome.dir, outcome.blocks));
    Ok(ExitCode::SUCCESS)
}
