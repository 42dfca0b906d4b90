//! `mpicast replay TRACE_DIR --platform FILE [--mapping FILE] [--json FILE]`: replays per-rank
//! traces through SimGrid with MPI semantics (in a child process) and prints the prediction.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::model::trace::Mapping;
use crate::sim::replay_dir::{replay_dir, ReplayRequest};

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
    /// Time the replay by formula in one event queue instead of simulating it in SimGrid
    /// (docs/ARCHITECTURE.md, "Analytic replay").
    #[arg(long)]
    analytic: bool,
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
        print!("{}", crate::report::halo_bench_text(&crate::sim::bench::halo(spec, &args.cfg, args.analytic)?));
        return Ok(ExitCode::SUCCESS);
    }
    let result = replay_dir(&ReplayRequest {
        dir: args.trace_dir.clone().expect("clap requires TRACE_DIR"),
        platform: args.platform.clone().expect("clap requires --platform"),
        mapping: args.mapping.clone(),
        placement: match args.placement {
            Placement::RoundRobin => Mapping::RoundRobin,
            Placement::Block => Mapping::Block,
        },
        cfg: args.cfg.clone(),
        eager_threshold: args.eager_threshold,
        reduce_flops_per_byte: args.reduce_flops_per_byte,
        timeline: args.timeline,
        no_fold: args.no_fold,
        analytic: args.analytic,
        export_smpi: args.export_smpi.clone(),
    })?;
    print!("{}", crate::report::replay_text(&result));
    if let Some(j) = &args.json {
        crate::model::write_artifact(j, &result)?;
    }
    Ok(ExitCode::SUCCESS)
}
