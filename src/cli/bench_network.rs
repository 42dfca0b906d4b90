//! `mpicast bench network`: the CTC. Wires arguments to src/network.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;

use crate::network::bench;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Network table to write (schema mpicast/network).
    #[arg(short = 'o', long = "out", default_value = "network.json")]
    out: PathBuf,
    /// Also write a SimGrid platform (with the SMPI settings in <config>) and replay the ping-pong
    /// on it as a self-check.
    #[arg(long = "platform-out", value_name = "FILE")]
    platform_out: Option<PathBuf>,
    /// Hosts passed to mpirun (--host a,b); default: 2 ranks on this host.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    hosts: Vec<String>,
    /// Replaces `mpirun ... -np N` (e.g. "srun -n 2").
    #[arg(long, value_name = "CMD")]
    launcher: Option<String>,
    /// Extra mpirun options, e.g. "--mca btl self,tcp".
    #[arg(long = "mpirun-args", value_name = "ARGS", allow_hyphen_values = true)]
    mpirun_args: Option<String>,
    /// Ranks to launch (the ping-pong uses ranks 0 and 1; collectives use all).
    #[arg(short = 'n', long, default_value_t = 2)]
    ranks: u32,
    /// Largest ping-pong size in bytes.
    #[arg(long = "max-size", default_value_t = 16 << 20)]
    max_size: u64,
    /// Time budget per size, seconds (repetitions stop earlier when the standard error of the
    /// mean is under 2%).
    #[arg(long, default_value_t = 0.5)]
    budget: f64,
    /// A fast, rougher run: sizes up to 4 MiB, a tenth of the budget.
    #[arg(long)]
    quick: bool,
    /// MPI C compiler.
    #[arg(long, default_value = "mpicc")]
    mpicc: String,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let start = Instant::now();
    if args.ranks < 2 {
        anyhow::bail!("--ranks must be at least 2 (got {})", args.ranks);
    }
    let mut table = bench::measure(&bench::Options {
        mpicc: args.mpicc.clone(),
        launcher: args.launcher.clone(),
        hosts: args.hosts.clone(),
        mpirun_args: crate::mpi::build::split_words(args.mpirun_args.as_deref().unwrap_or(""))?,
        ranks: args.ranks,
        max_size: args.max_size,
        budget_s: args.budget,
        quick: args.quick,
        progress: std::io::stderr().is_terminal(),
    })?;
    print!("{}", crate::report::network_text(&table));
    let mut status = ExitCode::SUCCESS;
    if let Some(p) = &args.platform_out {
        let check = bench::write_platform(&table, p)?;
        print!("{}", crate::report::self_check_text(&check, p));
        let passed = check.max_rel_error <= check.tolerance;
        if !passed {
            status = ExitCode::from(super::EXIT_THRESHOLD);
        }
        table.self_check = Some(check);
    }
    table.duration_s = start.elapsed().as_secs_f64();
    crate::model::write_artifact(&args.out, &table)?;
    let also = args.platform_out.as_ref().map(|p| format!(" and {}", p.display())).unwrap_or_default();
    println!("# wrote {} ({:.1} s){also}", args.out.display(), table.duration_s);
    if let Some(w) = table.load.as_ref().and_then(|l| l.warning("the network table")) {
        eprintln!("mpicast: warning: {w} (the table says so: load.under_load)");
    }
    Ok(status)
}
