//! The command line: clap definitions and one function per subcommand. The work lives in the
//! library modules; this file only wires arguments to them.

mod analyze;
mod flags;
mod bench;
mod bench_machine;
mod bench_network;
mod platform;
mod predict;
mod replay;
mod report;
mod simulate;
mod sweep;
mod trace;
mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Exit status for usage and input errors.
pub const EXIT_INPUT: u8 = 2;
/// Exit status when a prediction or validation misses its threshold.
pub const EXIT_THRESHOLD: u8 = 1;

#[derive(Parser, Debug)]
#[command(
    name = "mpicast",
    version,
    about = "Predicts the run time of C/MPI programs from their source, a machine benchmark and a network benchmark",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Split C/C++ MPI sources into blocks; count ops and loop iterations statically.
    Analyze(analyze::Args),
    /// Benchmark a machine (MTC) or a network (CTC).
    Bench(bench::Args),
    /// Generate a SimGrid platform file from a template.
    Platform(platform::Args),
    /// Predict a program's run time on N ranks on a platform.
    Predict(predict::Args),
    /// Replay per-rank traces through SimGrid with MPI semantics.
    Replay(replay::Args),
    /// Predict a program at several rank counts (and platforms): time, speedup, efficiency.
    Sweep(sweep::Args),
    /// Write the HTML report of a prediction or a sweep.
    Report(report::Args),
    /// Run a program for real and compare with its predictions in every mode.
    Validate(validate::Args),
    /// Run a program instrumented under mpirun and collect per-rank traces.
    Trace(trace::Args),
    /// Run one simulation job in this process (used internally: one SimGrid engine per process).
    #[command(hide = true)]
    Simulate(simulate::Args),
}

/// Parses the command line, runs the subcommand, prints errors as one line, returns the status.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    ExitCode::SUCCESS
                }
                _ => {
                    // clap's message is several lines (usage, tips); keep the first, the one that
                    // says what was wrong, and point at --help.
                    let text = e.render().to_string();
                    let first = text.lines().next().unwrap_or("invalid command line");
                    let first = first.trim_start_matches("error: ");
                    let tips: Vec<&str> =
                        text.lines().filter_map(|l| l.trim().strip_prefix("tip: ")).collect();
                    let tips = if tips.is_empty() { String::new() } else { format!("; {}", tips.join("; ")) };
                    // A wrong word for a flag that takes one of a few: the valid ones, as
                    // mpicast's own checks list them.
                    let valid = match e.get(clap::error::ContextKind::ValidValue) {
                        Some(clap::error::ContextValue::Strings(v)) if !v.is_empty() => {
                            format!(" (valid: {})", v.join(", "))
                        }
                        _ => String::new(),
                    };
                    eprintln!("mpicast: {first}{valid}{tips} (see mpicast --help)");
                    ExitCode::from(EXIT_INPUT)
                }
            };
        }
    };
    let result = match cli.command {
        Command::Analyze(args) => analyze::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Platform(args) => platform::run(args),
        Command::Predict(args) => predict::run(args),
        Command::Replay(args) => replay::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Report(args) => report::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Trace(args) => trace::run(args),
        Command::Simulate(args) => simulate::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("mpicast: {}", one_line(&e));
            ExitCode::from(EXIT_INPUT)
        }
    }
}

pub use crate::model::one_line;

/// Writes a text output file (a report, a plot), naming it when it cannot.
fn write_text(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))
}

/// `--json FILE` (`-`: stdout). True when the artifact went to stdout, which then holds nothing
/// else.
fn json_out<T: crate::model::Artifact>(path: Option<&std::path::Path>, artifact: &T) -> anyhow::Result<bool> {
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
