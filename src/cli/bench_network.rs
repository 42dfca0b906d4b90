use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::network::{self, run};
use crate::platform;

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

fn progress_bar(total: u64) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::new(total);
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {elapsed:>3} [{bar:30}] {pos}/{len} {msg}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    pb
}

pub fn run(args: Args) -> Result<ExitCode> {
    let start = Instant::now();
    let (max_size, budget) = if args.quick {
        (args.max_size.min(4 << 20), args.budget / 10.0)
    } else {
        (args.max_size, args.budget)
    };
    if args.ranks < 2 {
        anyhow::bail!("--ranks must be at least 2 (got {})", args.ranks);
    }
    let spec = run::RunSpec {
        mpicc: args.mpicc.clone(),
        launch: crate::mpi::launch::LaunchSpec {
            launcher: args.launcher.clone(),
            hosts: args.hosts.clone(),
            mpirun_args: crate::mpi::build::split_words(args.mpirun_args.as_deref().unwrap_or(""))?,
            hostfile: None,
        },
        ranks: args.ranks,
        sizes: run::default_sizes(max_size),
        overhead_sizes: [0u64, 64, 1024, 4096, 16384, 65536, 1 << 20]
            .into_iter()
            .filter(|&s| s <= max_size)
            .collect(),
        collective_sizes: if args.quick {
            vec![8, 65536]
        } else {
            vec![8, 1024, 65536, 1 << 20]
        },
        exchange_sizes: {
            let mut v: Vec<u64> = [65536u64, 1 << 20].into_iter().filter(|&s| s <= max_size).collect();
            if v.is_empty() {
                v.push(max_size);
            }
            v
        },
        budget_per_size_s: budget,
        target_rel_stderr: 0.02,
        min_reps: 20,
    };
    let exe = run::build(&spec.mpicc)?;
    let meter = crate::model::load::LoadMeter::start();
    let pb = progress_bar(run::expected_lines(&spec));
    pb.set_message("ping-pong");
    let raw = run::run(&spec, &exe, |line| {
        pb.inc(1);
        if let Some(w) = line.split_whitespace().nth(1) {
            pb.set_message(format!(
                "{} {}",
                line.split_whitespace().next().unwrap_or(""),
                w
            ));
        }
    });
    pb.finish_and_clear();
    let raw = raw?;
    let mut table = network::build_table(raw, args.hosts.clone(), start.elapsed().as_secs_f64());
    // Between hosts: the ping-pong of two ranks on the first host as well (shared memory or its
    // loopback), for co-located ranks and messages to oneself. A launcher of the user's own
    // places ranks itself.
    let hosts = platform::distinct_hosts(&args.hosts);
    if hosts.len() >= 2 && args.launcher.is_none() {
        let intra = run::RunSpec {
            launch: crate::mpi::launch::LaunchSpec {
                hosts: vec![hosts[0].clone(), hosts[0].clone()],
                ..spec.launch.clone()
            },
            ranks: 2,
            overhead_sizes: Vec::new(),
            collective_sizes: Vec::new(),
            exchange_sizes: Vec::new(),
            ..spec.clone()
        };
        let pb = progress_bar(run::expected_lines(&intra));
        pb.set_message(format!("ping-pong on {}", hosts[0]));
        let raw = run::run(&intra, &exe, |_| pb.inc(1));
        pb.finish_and_clear();
        table.intra_host = Some(network::intra_host(raw.context("the ping-pong of two ranks on one host")?));
    }
    table.load = meter.finish();
    print!("{}", crate::report::network_text(&table));

    let mut status = ExitCode::SUCCESS;
    if let Some(p) = &args.platform_out {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1) as u32;
        let xml = platform::measured(&table, cores);
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("{}: cannot create directory", dir.display()))?;
        }
        std::fs::write(p, xml).with_context(|| format!("{}: cannot write", p.display()))?;
        let check = network::self_check(&table, p)
            .with_context(|| format!("{}: self-check", p.display()))?;
        print!("{}", crate::report::self_check_text(&check, p));
        let ok = check.max_rel_error <= check.tolerance;
        if !ok {
            status = ExitCode::from(1);
        }
        table.self_check = Some(check);
    }
    table.duration_s = start.elapsed().as_secs_f64();
    crate::model::write_artifact(&args.out, &table)?;
    println!(
        "# wrote {} ({:.1} s){}",
        args.out.display(),
        table.duration_s,
        match &args.platform_out {
            Some(p) => format!(" and {}", p.display()),
            None => String::new(),
        }
    );
    if let Some(w) = table.load.as_ref().and_then(|l| l.warning("the network table")) {
        eprintln!("mpicast: warning: {w} (the table says so: load.under_load)");
    }
    Ok(status)
}
