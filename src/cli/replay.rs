//! `mpicast replay TRACE_DIR --platform FILE [--mapping FILE] [--json FILE]`: replays per-rank
//! traces through SimGrid with MPI semantics (in a child process) and prints the prediction.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};

use crate::model::trace::{Mapping, ReplayOptions, TraceAction};
use crate::sim::TraceSource;

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Placement {
    /// Rank r on host r mod H (hosts in natural name order).
    RoundRobin,
    /// Ranks split into H consecutive blocks.
    Block,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory of per-rank traces (rank-0.trace, rank-1.trace, ...; see traces/FORMAT.md).
    #[arg(required_unless_present = "bench")]
    trace_dir: Option<PathBuf>,
    /// SimGrid platform file.
    #[arg(long, required_unless_present = "bench")]
    platform: Option<PathBuf>,
    /// One host name per rank, in rank order (overrides --placement).
    #[arg(long)]
    mapping: Option<PathBuf>,
    /// How ranks go onto hosts when there is no --mapping.
    #[arg(long, value_enum, default_value = "round-robin")]
    placement: Placement,
    /// Write the result (mpicast/replay JSON) here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// SimGrid configuration item `name:value` (repeatable), e.g. smpi/bw-factor:0:1.
    #[arg(long = "cfg")]
    cfg: Vec<String>,
    /// Messages from this size on use rendezvous; smaller ones are eager [default: the
    /// `smpi/send-is-detached-thresh` of --cfg, else 65536, SMPI's default].
    #[arg(long)]
    eager_threshold: Option<u64>,
    /// Flops charged per byte of reduction arithmetic.
    #[arg(long, default_value_t = 0.125)]
    reduce_flops_per_byte: f64,
    /// Record the per-rank event timeline in the JSON result.
    #[arg(long)]
    timeline: bool,
    /// Simulate every iteration of the main loop (no steady-state folding).
    #[arg(long)]
    no_fold: bool,
    /// Also write the traces in SimGrid's time-independent format into this directory (for
    /// `smpirun -replay`).
    #[arg(long, hide = true)]
    export_smpi: Option<PathBuf>,
    /// Throughput benchmark: replay RANKSxITERS 2D halo exchanges on a generated cluster.
    #[arg(long, hide = true, value_name = "RANKSxITERS")]
    bench: Option<String>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if let Some(spec) = &args.bench {
        return bench(spec, &args.cfg);
    }
    let dir = args.trace_dir.clone().expect("clap requires TRACE_DIR");
    let platform = args.platform.clone().expect("clap requires --platform");
    if !platform.is_file() {
        bail!("{}: no such platform file", platform.display());
    }
    let platform_hosts = crate::platform::platform_hosts(&platform)?;
    let mapping = match &args.mapping {
        Some(p) => {
            let hosts = crate::sim::replay::read_mapping_file(p)?;
            let ranks = crate::trace::discover(&dir)?;
            check_mapping(p, &hosts, ranks, &platform, &platform_hosts)?;
            Mapping::Hosts { hosts }
        }
        None => match args.placement {
            Placement::RoundRobin => Mapping::RoundRobin,
            Placement::Block => Mapping::Block,
        },
    };
    if let Some(out) = &args.export_smpi {
        let n = crate::trace::discover(&dir)?;
        crate::trace::validate_dir(&dir, n)?;
        crate::trace::smpi::export_dir(&dir, n, out)?;
    }
    let options = ReplayOptions {
        eager_threshold_bytes: match args.eager_threshold {
            Some(t) => t,
            None => eager_threshold_from_cfg(&args.cfg)?.unwrap_or(65536),
        },
        reduce_flops_per_byte: args.reduce_flops_per_byte,
        timeline: args.timeline,
        no_fold: args.no_fold,
        ..ReplayOptions::default()
    };
    let result = crate::sim::replay(
        &TraceSource::Dir(dir.clone()),
        &platform,
        mapping,
        args.cfg.clone(),
        options,
    )
    .map_err(|e| {
        // Name the trace directory unless the message already names it (or a file in it).
        if crate::cli::one_line(&e).contains(&dir.display().to_string()) {
            e
        } else {
            e.context(dir.display().to_string())
        }
    })
    .map_err(|e| {
        // SimGrid aborts its process on what check_platform does not catch (and says little).
        if crate::cli::one_line(&e).contains("(signal: 6 (SIGABRT))") {
            e.context(format!(
                "SimGrid aborted while loading or simulating {}: check the platform file",
                platform.display()
            ))
        } else {
            e
        }
    })?;
    print!("{}", crate::report::replay_text(&result));
    if let Some(j) = &args.json {
        crate::model::write_artifact(j, &result)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A mapping file names one host of the platform per rank: the count and every name are checked
/// here, so that the error names the mapping file and its line.
fn check_mapping(
    path: &Path,
    hosts: &[String],
    ranks: u32,
    platform: &Path,
    declared: &crate::platform::PlatformHosts,
) -> Result<()> {
    if hosts.len() != ranks as usize {
        bail!(
            "{}: names {} host{} for {ranks} ranks (one host name per line, one line per rank in rank order)",
            path.display(),
            hosts.len(),
            if hosts.len() == 1 { "" } else { "s" }
        );
    }
    for (r, h) in hosts.iter().enumerate() {
        if !declared.contains(h) {
            // The line of the r-th name (blank and comment lines do not count).
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let line = text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.split('#').next().unwrap_or("").trim().is_empty())
                .nth(r)
                .map_or(0, |(i, _)| i + 1);
            let some = declared.examples(6);
            let more = if declared.count() > some.len() as u64 {
                ", ..."
            } else {
                ""
            };
            bail!(
                "{}:{line}: rank {r}: no host named {h:?} in {} (its hosts: {}{more})",
                path.display(),
                platform.display(),
                some.join(", ")
            );
        }
    }
    Ok(())
}

/// SimGrid's own eager/rendezvous switch, when the user sets it with --cfg.
fn eager_threshold_from_cfg(cfg: &[String]) -> Result<Option<u64>> {
    for c in cfg.iter().rev() {
        if let Some(v) = c.strip_prefix("smpi/send-is-detached-thresh:") {
            return v
                .trim()
                .parse()
                .map(Some)
                .with_context(|| format!("--cfg {c}: the threshold is not a byte count"));
        }
    }
    Ok(None)
}

/// Writes a 2D halo exchange (periodic px x py grid, 4 neighbours) for `ranks` ranks, `iters`
/// iterations, loop-folded.
pub fn write_halo(dir: &Path, ranks: u32, iters: u64, bytes: u64, compute_s: f64) -> Result<()> {
    let mut px = (ranks as f64).sqrt() as u32;
    while ranks % px != 0 {
        px -= 1;
    }
    let py = ranks / px;
    for r in 0..ranks {
        let (x, y) = (r % px, r / px);
        let nb = [
            ((x + px - 1) % px) + y * px,
            ((x + 1) % px) + y * px,
            x + ((y + py - 1) % py) * px,
            x + ((y + 1) % py) * px,
        ];
        let mut w = crate::trace::TraceWriter::create(dir, r, ranks)?;
        w.begin_loop(iters)?;
        for (i, &p) in nb.iter().enumerate() {
            w.action(&TraceAction::Irecv {
                req: i as u64,
                from: crate::model::trace::Peer::Rank(p),
                bytes: Some(bytes),
                tag: crate::model::trace::Tag::Value(i as i32 ^ 1),
                comm: 0,
            })?;
        }
        for (i, &p) in nb.iter().enumerate() {
            // Direction i's message arrives as the neighbour's opposite direction (i ^ 1).
            w.action(&TraceAction::Isend {
                req: 4 + i as u64,
                to: p,
                bytes,
                tag: i as i32,
                comm: 0,
            })?;
        }
        w.action(&TraceAction::Waitall { reqs: vec![] })?;
        w.action(&TraceAction::Compute {
            compute: crate::model::trace::Compute::Seconds(compute_s),
        })?;
        w.end_loop()?;
        w.finish()?;
    }
    Ok(())
}

fn bench(spec: &str, cfg: &[String]) -> Result<ExitCode> {
    let (ranks, iters) = spec
        .split_once('x')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u64>().ok()?)))
        .with_context(|| format!("--bench {spec:?}: expected RANKSxITERS, e.g. 16384x100"))?;
    // MPICAST_BENCH_DIR keeps the generated traces and platform (and reuses them) so that the
    // replay can be profiled alone.
    let tmp = tempfile::Builder::new().prefix("mpicast-bench").tempdir()?;
    let base = std::env::var_os("MPICAST_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let traces = base.join(format!("halo-{ranks}x{iters}"));
    let t0 = Instant::now();
    if crate::trace::discover(&traces).ok() != Some(ranks) {
        write_halo(&traces, ranks, iters, 8192, 1e-4)?;
    }
    let gen_s = t0.elapsed().as_secs_f64();
    let cores: u32 = std::env::var("MPICAST_BENCH_CORES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let hosts = ranks.div_ceil(cores);
    let platform = base.join(format!("cluster-{ranks}.xml"));
    std::fs::write(
        &platform,
        format!(
            "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n\
             <platform version=\"4.1\">\n  <cluster id=\"c\" prefix=\"node-\" suffix=\"\" radical=\"0-{}\" speed=\"1Gf\" \
             core=\"{cores}\" bw=\"1.25GBps\" lat=\"1us\" sharing_policy=\"SPLITDUPLEX\"{bb}/>\n</platform>\n",
            hosts - 1,
            bb = if std::env::var("MPICAST_BENCH_BB").is_ok() {
                " bb_bw=\"100GBps\" bb_lat=\"1us\" bb_sharing_policy=\"FATPIPE\""
            } else {
                ""
            }
        ),
    )?;
    let t1 = Instant::now();
    let opts = ReplayOptions {
        link_usage: false,
        ..ReplayOptions::default()
    };
    let r = crate::sim::replay(
        &TraceSource::Dir(traces),
        &platform,
        Mapping::Block,
        cfg.to_vec(),
        opts,
    )?;
    let total_s = t1.elapsed().as_secs_f64();
    println!(
        "bench halo2d {ranks} ranks x {iters} iterations on {hosts} hosts x {cores} cores: {} messages, \
         simulated makespan {:.4} s",
        r.messages, r.makespan_s
    );
    println!(
        "wall: {:.2} s total (child simulation {:.2} s, trace generation {:.2} s) -> {:.0} messages/s of wall time \
         ({:.0} in the simulation alone)",
        total_s,
        r.wall_s,
        gen_s,
        r.messages as f64 / total_s,
        r.messages as f64 / r.wall_s
    );
    Ok(ExitCode::SUCCESS)
}
