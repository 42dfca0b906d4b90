//! The replay's throughput benchmark (`mpicast replay --bench RANKSxITERS`, hidden): a 2D halo
//! exchange written as loop-folded traces, replayed on a generated cluster.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::model::trace::{Mapping, ReplayOptions, TraceAction};

use super::TraceSource;

/// What the benchmark replayed and how long it took.
#[derive(Debug, Clone)]
pub struct HaloBench {
    pub ranks: u32,
    pub iters: u64,
    pub hosts: u32,
    pub cores: u32,
    pub messages: u64,
    pub makespan_s: f64,
    /// Wall time of the replay, the child's simulation alone, and writing the traces.
    pub total_s: f64,
    pub simulation_s: f64,
    pub generation_s: f64,
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

/// `--bench RANKSxITERS`: the halo exchange replayed on a generated cluster of 16-core hosts
/// (MPICAST_BENCH_CORES), bandwidth 1.25 GBps and latency 1 us (MPICAST_BENCH_BB adds a
/// backbone), ranks in blocks; how long it took.
pub fn halo(spec: &str, cfg: &[String], analytic: bool) -> Result<HaloBench> {
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
        analytic,
        ..ReplayOptions::default()
    };
    let r = super::replay(
        &TraceSource::Dir(traces),
        &platform,
        Mapping::Block,
        cfg.to_vec(),
        opts,
    )?;
    let total_s = t1.elapsed().as_secs_f64();
    Ok(HaloBench {
        ranks,
        iters,
        hosts,
        cores,
        messages: r.messages,
        makespan_s: r.makespan_s,
        total_s,
        simulation_s: r.wall_s,
        generation_s: gen_s,
    })
}
