//! `mpicast bench network`'s measurement: the ping-pong (with the send and receive overheads,
//! collectives and the exchange both ways) built and run as `Options` says, fitted into a
//! network table; between hosts, the ping-pong of two ranks on the first host too; the load
//! while it ran. `write_platform` writes the measured platform and checks it by simulation.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::model::network::{NetworkTable, SelfCheck};
use crate::mpi::launch::LaunchSpec;

use super::run;

/// What to measure and how to launch it.
#[derive(Debug, Clone)]
pub struct Options {
    /// MPI C compiler of the ping-pong.
    pub mpicc: String,
    /// Replaces `mpirun ... -np N`.
    pub launcher: Option<String>,
    /// Hosts passed to mpirun (none: this host).
    pub hosts: Vec<String>,
    /// Extra mpirun options.
    pub mpirun_args: Vec<String>,
    /// Ranks to launch (at least 2: the ping-pong uses ranks 0 and 1, collectives all).
    pub ranks: u32,
    /// Largest ping-pong size, bytes.
    pub max_size: u64,
    /// Time budget per size, seconds.
    pub budget_s: f64,
    /// Sizes up to 4 MiB, a tenth of the budget, fewer collective sizes.
    pub quick: bool,
    /// Progress bars on stderr.
    pub progress: bool,
}

fn progress_bar(show: bool, total: u64) -> indicatif::ProgressBar {
    if !show {
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

/// Measures the network and fits its table (`duration_s` is the measurement's).
pub fn measure(opts: &Options) -> Result<NetworkTable> {
    let start = Instant::now();
    let (max_size, budget) = if opts.quick {
        (opts.max_size.min(4 << 20), opts.budget_s / 10.0)
    } else {
        (opts.max_size, opts.budget_s)
    };
    if opts.ranks < 2 {
        bail!("--ranks must be at least 2 (got {})", opts.ranks);
    }
    let spec = run::RunSpec {
        mpicc: opts.mpicc.clone(),
        launch: LaunchSpec {
            launcher: opts.launcher.clone(),
            hosts: opts.hosts.clone(),
            mpirun_args: opts.mpirun_args.clone(),
            hostfile: None,
        },
        ranks: opts.ranks,
        sizes: run::default_sizes(max_size),
        overhead_sizes: [0u64, 64, 1024, 4096, 16384, 65536, 1 << 20]
            .into_iter()
            .filter(|&s| s <= max_size)
            .collect(),
        collective_sizes: if opts.quick {
            vec![8, 65536]
        } else {
            vec![8, 1024, 65536, 1 << 20]
        },
        exchange_sizes: {
            let mut v: Vec<u64> = [65536u64, 1 << 20]
                .into_iter()
                .filter(|&s| s <= max_size)
                .collect();
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
    let pb = progress_bar(opts.progress, run::expected_lines(&spec));
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
    let mut table = super::build_table(raw, opts.hosts.clone(), start.elapsed().as_secs_f64());
    // Between hosts: the ping-pong of two ranks on the first host as well (shared memory or its
    // loopback), for co-located ranks and messages to oneself. A launcher of the user's own
    // places ranks itself.
    let hosts = crate::platform::distinct_hosts(&opts.hosts);
    if hosts.len() >= 2 && opts.launcher.is_none() {
        let intra = run::RunSpec {
            launch: LaunchSpec {
                hosts: vec![hosts[0].clone(), hosts[0].clone()],
                ..spec.launch.clone()
            },
            ranks: 2,
            overhead_sizes: Vec::new(),
            collective_sizes: Vec::new(),
            exchange_sizes: Vec::new(),
            ..spec.clone()
        };
        let pb = progress_bar(opts.progress, run::expected_lines(&intra));
        pb.set_message(format!("ping-pong on {}", hosts[0]));
        let raw = run::run(&intra, &exe, |_| pb.inc(1));
        pb.finish_and_clear();
        table.intra_host = Some(super::intra_host(
            raw.context("the ping-pong of two ranks on one host")?,
        ));
    }
    table.load = meter.finish();
    Ok(table)
}

/// Writes the platform measured in `table` (this host's cores per host) to `path`, then replays
/// the ping-pong on it: the self-check (the caller decides what a miss means).
pub fn write_platform(table: &NetworkTable, path: &Path) -> Result<SelfCheck> {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1) as u32;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create directory", dir.display()))?;
    }
    let write = |ctors: &crate::platform::CtorCosts| {
        let xml = crate::platform::measured(table, cores, ctors);
        std::fs::write(path, xml).with_context(|| format!("{}: cannot write", path.display()))
    };
    // The constructors' own work is what they took beyond what this platform replays of their
    // collectives: the platform is written without it first, their collectives replayed on it.
    let none = crate::platform::CtorCosts::default();
    write(&none)?;
    if !table.constructors.is_empty() {
        let simulated = super::simulated_ctor_collectives(table, path)?;
        write(&table.ctor_costs(Some(simulated)))?;
    }
    super::self_check(table, path).with_context(|| format!("{}: self-check", path.display()))
}
