use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::model::network::NetworkTable;
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
    print_osu(&table);
    print_links(&table);

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
        println!(
            "\n# Self-check: ping-pong replayed through mpicast's simulator on {}",
            p.display()
        );
        println!(
            "# {:>10} {:>14} {:>14} {:>9} {:>14}",
            "Size", "Measured (us)", "Simulated (us)", "Error", "Segments (us)"
        );
        for r in &check.rows {
            println!(
                "  {:>10} {:>14.3} {:>14.3} {:>8.2}% {:>14.3}",
                r.size_bytes,
                r.measured_s * 1e6,
                r.simulated_s * 1e6,
                r.rel_error * 100.0,
                r.fitted_s * 1e6
            );
        }
        let ok = check.max_rel_error <= check.tolerance;
        println!(
            "# self-check {}: largest error {:.2}% (bound {:.0}%)",
            if ok { "passed" } else { "FAILED" },
            check.max_rel_error * 100.0,
            check.tolerance * 100.0
        );
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

fn print_osu(t: &NetworkTable) {
    println!(
        "# mpicast CTC ping-pong: {} ({} ranks, rank 0 on {})",
        t.launch.command.first().map(String::as_str).unwrap_or("?"),
        t.launch.ranks,
        t.launch.host0
    );
    println!("# one-way time = round trip / 2; median of the repetitions; min and p90 beside it");
    println!(
        "# {:<10} {:>12} {:>12} {:>12} {:>8} {:>7}",
        "Size", "Latency (us)", "Min (us)", "P90 (us)", "Reps", "SE"
    );
    for p in &t.pingpong {
        println!(
            "{:<12} {:>12.3} {:>12.3} {:>12.3} {:>8} {:>6.1}%",
            p.size_bytes,
            p.median_s * 1e6,
            p.min_s * 1e6,
            p.p90_s * 1e6,
            p.reps,
            p.rel_stderr * 100.0
        );
    }
    println!("\n# {:<10} {:>16}", "Size", "Bandwidth (MB/s)");
    for p in t.pingpong.iter().filter(|p| p.size_bytes > 0) {
        println!(
            "{:<12} {:>16.2}",
            p.size_bytes,
            p.size_bytes as f64 / p.median_s / 1e6
        );
    }
    println!(
        "\n# {:<10} {:>14} {:>14}",
        "Size", "Isend post (us)", "Irecv post (us)"
    );
    for o in &t.overheads {
        println!(
            "{:<12} {:>14.3} {:>14.3}",
            o.size_bytes,
            o.send_s * 1e6,
            o.recv_s * 1e6
        );
    }
    if !t.collectives.is_empty() {
        println!(
            "\n# {:<10} {:>10} {:>14} {:>12}",
            "Collective", "Size", "Avg (us)", "Min (us)"
        );
        for c in &t.collectives {
            println!(
                "{:<12} {:>10} {:>14.3} {:>12.3}",
                c.name,
                c.size_bytes,
                c.mean_s * 1e6,
                c.min_s * 1e6
            );
        }
    }
    println!("\n# Fitted segments: T(s) = L + s / B");
    print_segments(&t.segments);
    println!(
        "# break points: {}; eager/rendezvous switch: {}",
        if t.break_points_bytes.is_empty() {
            "none".to_string()
        } else {
            t.break_points_bytes
                .iter()
                .map(|b| format!("{b} B"))
                .collect::<Vec<_>>()
                .join(", ")
        },
        t.eager_threshold_bytes
            .map(|b| format!("{b} B"))
            .unwrap_or_else(|| "not seen".into())
    );
    if !t.fit.outlier_sizes_bytes.is_empty() {
        println!(
            "# left out of the fit as outliers (host busy?): {}",
            t.fit
                .outlier_sizes_bytes
                .iter()
                .map(|b| format!("{b} B"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    println!(
        "# fit error: held-out sizes ({} of {}, fit on the others) max {:.1}%, mean {:.1}%; sizes of the final fit max {:.1}%",
        t.fit.heldout_sizes_bytes.len(),
        t.pingpong.len(),
        t.fit.heldout_max_rel_error * 100.0,
        t.fit.heldout_mean_rel_error * 100.0,
        t.fit.fit_max_rel_error * 100.0
    );
}

/// The exchange both ways, the sharing policy it shows, and the intra-host fit.
fn print_links(t: &NetworkTable) {
    if !t.exchange.is_empty() {
        println!("\n# {:<10} {:>16} {:>16} {:>8}", "Size", "Exchange (us)", "One way (us)", "Ratio");
        for x in &t.exchange {
            let one = t.pingpong.iter().find(|p| p.size_bytes == x.size_bytes).map(|p| p.median_s);
            println!(
                "{:<12} {:>16.3} {:>16} {:>8}",
                x.size_bytes,
                x.median_s * 1e6,
                one.map(|o| format!("{:.3}", o * 1e6)).unwrap_or_else(|| "-".into()),
                one.map(|o| format!("{:.2}", x.median_s / o)).unwrap_or_else(|| "-".into())
            );
        }
    }
    if let Some(d) = &t.duplex {
        println!(
            "# both directions at once: {:.2}x the one-way time at {} B: {} (sharing_policy {})",
            d.ratio,
            d.size_bytes,
            if d.sharing_policy == "SHARED" { "the directions share the link" } else { "each direction has its own bandwidth" },
            d.sharing_policy
        );
    }
    if let Some(i) = &t.intra_host {
        println!("\n# Two ranks on {}: T(s) = L + s / B", i.host);
        print_segments(&i.segments);
    }
}

fn print_segments(segments: &[crate::model::network::Segment]) {
    println!("# {:>10} {:>10} {:>12} {:>14}", "From (B)", "To (B)", "L (us)", "B (MB/s)");
    for g in segments {
        // A flat segment (the time does not grow with the size: a minimum frame, a copy too
        // short to see) says nothing of a bandwidth.
        let bw = if g.bandwidth_bytes_per_s >= crate::network::fit::FLAT_BANDWIDTH {
            "flat".to_string()
        } else {
            format!("{:.1}", g.bandwidth_bytes_per_s / 1e6)
        };
        println!("  {:>10} {:>10} {:>12.3} {:>14}", g.from_bytes, g.to_bytes, g.latency_s * 1e6, bw);
    }
}
