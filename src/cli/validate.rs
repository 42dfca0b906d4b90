//! `mpicast validate SRC -n 1,2,4`: real runs against predictions in every mode (src/validate);
//! the measured median and min beside each mode's prediction and error.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::validate::{self, Request, MODES};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Source files or directories of the program.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Rank counts to run and predict, e.g. 1,2,4.
    #[arg(short = 'n', long = "ranks", value_delimiter = ',', required = true, value_name = "N,...")]
    ranks: Vec<u32>,
    /// Program arguments as one string, e.g. --args "256 500" (or give them after `--`).
    #[arg(long = "args", value_name = "ARGS", allow_hyphen_values = true)]
    program_args_str: Option<String>,
    /// Real runs per rank count (the median is compared, the min shown).
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// SimGrid platform to predict on (default: this host as `mpicast predict` measures and
    /// caches it, with the host's core count).
    #[arg(long, value_name = "FILE")]
    platform: Option<PathBuf>,
    /// Machine table (default: this host with mpicc -O2, as `mpicast predict` caches it).
    #[arg(long, value_name = "FILE")]
    machine: Option<PathBuf>,
    /// Write the validation (mpicast/validation JSON) to FILE, `-` for stdout (the table then
    /// goes to stderr).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Prediction modes: static (skeleton execution), trace (block counts of a run at N ranks),
    /// measured (block benchmarking: a --time-blocks run at N ranks), scaled (a run at fewer
    /// ranks scaled to N).
    #[arg(long, value_delimiter = ',', default_value = "static,trace,measured,scaled", value_name = "MODE,...")]
    modes: Vec<String>,
    /// Ranks of the run the scaled mode starts from (default: the smallest rank count of -n
    /// below N that is at least 2, else the smallest below N).
    #[arg(long, value_name = "K")]
    scale_from: Option<u32>,
    #[command(flatten)]
    launch: super::flags::LaunchArgs,
    /// The scaled mode's traced run's arguments, when they depend on its rank count
    /// (arguments that name the process grid) [default: the program arguments].
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    trace_args: Option<String>,
    /// Cores per host of the platform (passed to predict; e.g. 1 for two namespaces sharing a
    /// 2-core machine).
    #[arg(long, value_name = "C")]
    cores_per_host: Option<u32>,
    #[command(flatten)]
    build: super::flags::BuildArgs,
    /// Time limit of each run and of each prediction, seconds.
    #[arg(long, default_value_t = 600.0, value_name = "S")]
    timeout: f64,
    /// Exit with status 1 when a prediction's error is over PCT percent.
    #[arg(long, value_name = "PCT")]
    max_error: Option<f64>,
    /// What the predictions are compared with: span (MPI_Init to MPI_Finalize, what a
    /// prediction covers), elapsed (the program's own `elapsed_s=` line) or wall (mpirun's wall
    /// clock). When a run does not give it: span, then elapsed, then wall.
    #[arg(long, value_enum, default_value = "span", value_name = "WHAT")]
    compare: super::flags::Compare,
    /// Where the predictions take a block's instruction ops from (predict's --ops): compiled
    /// or source.
    #[arg(long, value_enum, default_value = "compiled", value_name = "FROM")]
    ops: super::flags::Ops,
    /// Program arguments, exactly as the program would get them.
    #[arg(last = true)]
    program_args: Vec<String>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let mut ranks = args.ranks.clone();
    if let Some(bad) = ranks.iter().find(|&&n| n == 0) {
        bail!("-n {bad}: rank counts must be at least 1");
    }
    ranks.sort_unstable();
    ranks.dedup();
    if args.runs == 0 {
        bail!("--runs 0: at least one run is needed");
    }
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        bail!("--timeout {}: must be a positive number of seconds", args.timeout);
    }
    if let Some(m) = args.max_error {
        if !(m >= 0.0 && m.is_finite()) {
            bail!("--max-error {m}: must be a percentage at least 0");
        }
    }
    let mut modes: Vec<String> = Vec::new();
    for m in &args.modes {
        let m = m.trim();
        if !MODES.contains(&m) {
            bail!("--modes {m}: unknown mode (valid: {})", MODES.join(", "));
        }
        if !modes.iter().any(|x| x == m) {
            modes.push(m.to_string());
        }
    }
    if modes.is_empty() {
        bail!("--modes: name at least one mode (valid: {})", MODES.join(", "));
    }
    let program_args: Vec<String> = match (&args.program_args_str, args.program_args.is_empty()) {
        (Some(_), false) => bail!("give the program arguments either with --args or after `--`, not both"),
        (Some(s), true) => s.split_whitespace().map(String::from).collect(),
        (None, _) => args.program_args.clone(),
    };
    for p in [&args.platform, &args.machine].into_iter().flatten() {
        if !p.is_file() {
            bail!("{}: no such file", p.display());
        }
    }
    let build_spec = args.build.spec(&args.inputs)?;
    let launch = args.launch.spec()?;
    super::flags::trace_args(args.trace_args.as_deref(), &program_args)?;
    let req = Request {
        inputs: args.inputs.clone(),
        ranks,
        args: program_args,
        runs: args.runs,
        platform: args.platform.clone(),
        machine: args.machine.clone(),
        modes,
        scale_from: args.scale_from,
        build: build_spec,
        launch,
        build_flags: args.build.to_argv(),
        launch_flags: args.launch.to_argv(),
        trace_args: args.trace_args.clone(),
        cores_per_host: args.cores_per_host,
        timeout_s: args.timeout,
        max_error_pct: args.max_error,
        compare: args.compare.compare(),
        compiled_ops: args.ops == super::flags::Ops::Compiled,
    };
    let out = validate::validate(&req)?;
    let (validation, name) = (&out.validation, &out.name);
    let table = crate::report::validation_text(validation, name, &out.notes);
    match &args.json {
        Some(p) if p.as_os_str() == "-" => {
            eprint!("{table}");
            print!("{}", crate::model::to_json(validation));
        }
        Some(p) => {
            print!("{table}");
            crate::model::write_artifact(p, validation)?;
        }
        None => print!("{table}"),
    }
    if !out.failures.is_empty() {
        eprintln!("mpicast: {name}: the real run failed at {}", out.failures.join("; "));
        return Ok(ExitCode::from(super::EXIT_INPUT));
    }
    if let Some(bound) = args.max_error {
        let over = validate::over_bound(validation, bound);
        if !over.is_empty() {
            eprintln!(
                "mpicast: {name}: {} prediction{} over --max-error {bound}%: {}",
                over.len(),
                if over.len() == 1 { "" } else { "s" },
                over.join(", ")
            );
            return Ok(ExitCode::from(super::EXIT_THRESHOLD));
        }
    }
    Ok(ExitCode::SUCCESS)
}
