//! Steady-state folding of a replay: a periodic program's main loop is simulated for a few
//! iterations, not all of them.
//!
//! Every rank's trace has the same top-level loops with the same counts (the static path's
//! skeletons and the trace runtime fold each rank's actions into loops). The loop with the most
//! iterations, N, when it has 24 or more, holds three quarters of a rank's actions or more and
//! 10,000 actions or more over all ranks, is simulated three times with k, 2k and 3k iterations. When the
//! last k iterations took what the k before them took (within [`TOLERANCE`]), every figure of the
//! run grows by that much per k iterations, and the remaining N - 3k are added analytically: the
//! makespan, each rank's finish, compute, communication and wait times, messages and bytes,
//! each host's flops and each link's bytes. Otherwise k doubles (from 1), and once 3k passes
//! N / 8 the whole trace is simulated. The three short runs run at once, each in its own child. A short run that fails (a deadlock when ranks' iterations do not
//! pair up) falls back to the whole trace as well.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use anyhow::{Context, Result};

use crate::model::trace::{FoldInfo, ReplayJob, ReplayResult};

/// Two successive spans of k iterations agree within this fraction of the later one.
pub const TOLERANCE: f64 = 0.002;

/// Loops shorter than this are simulated whole.
const MIN_ITERATIONS: u64 = 24;

/// Loops whose iterations hold fewer actions than this over all ranks are simulated whole: the
/// three short runs (three child processes) would cost more than they save.
const MIN_ACTIONS: f64 = 10_000.0;

/// The loop must hold at least this share of a rank's actions: the three short runs each
/// simulate everything else whole (a benchmark's 213 loops of different sizes, folded on its
/// longest, took 105 s against 72 s unfolded).
const MIN_LOOP_SHARE: f64 = 0.75;

/// Folding gives up once a round would simulate more than this share of the loop (3k > N / 8):
/// a loop that never settles costs at most about half a whole simulation more.
const MAX_SHARE: u64 = 8;

/// The loop to fold: its place among each rank's top-level loops, and its count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    pub index: usize,
    pub count: u64,
}

/// Counts of the top-level loops of a trace file, in order, the actions one iteration of each
/// runs (nested loops unrolled), and the actions of the whole file.
fn top_level_loops(path: &Path) -> Result<(Vec<u64>, Vec<f64>, f64)> {
    let f = std::fs::File::open(path).with_context(|| format!("{}: cannot read", path.display()))?;
    // Open loops: (count, actions so far in one iteration).
    let mut open: Vec<(u64, f64)> = Vec::new();
    let (mut counts, mut sizes, mut total) = (Vec::new(), Vec::new(), 0.0);
    for line in BufReader::new(f).lines().skip(1) {
        let line = line.with_context(|| format!("{}: cannot read", path.display()))?;
        let t = line.trim();
        if let Some(n) = t.strip_prefix("loop ") {
            let n = n.trim().parse::<u64>().unwrap_or(0);
            if open.is_empty() {
                counts.push(n);
            }
            open.push((n, 0.0));
        } else if t == "end" {
            if let Some((n, size)) = open.pop() {
                match open.last_mut() {
                    Some(outer) => outer.1 += n as f64 * size,
                    None => {
                        sizes.push(size);
                        total += n as f64 * size;
                    }
                }
            }
        } else if !t.is_empty() && !t.starts_with('#') {
            match open.last_mut() {
                Some(inner) => inner.1 += 1.0,
                None => total += 1.0,
            }
        }
    }
    while let Some((n, size)) = open.pop() {
        if open.is_empty() {
            sizes.push(size);
            total += n as f64 * size;
        }
    }
    Ok((counts, sizes, total))
}

/// The loop every rank has at the same place with the same count, the longest one, when it has
/// at least MIN_ITERATIONS iterations.
pub fn plan(dir: &Path, ranks: u32) -> Result<Option<Plan>> {
    let (first, sizes, total) = top_level_loops(&crate::trace::rank_file(dir, 0))?;
    for r in 1..ranks {
        if top_level_loops(&crate::trace::rank_file(dir, r))?.0 != first {
            return Ok(None);
        }
    }
    let best = first.iter().enumerate().max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)));
    Ok(best
        .filter(|(i, c)| {
            let actions = **c as f64 * sizes.get(*i).copied().unwrap_or(0.0);
            **c >= MIN_ITERATIONS && actions * ranks as f64 >= MIN_ACTIONS && actions >= MIN_LOOP_SHARE * total
        })
        .map(|(index, count)| Plan { index, count: *count }))
}

/// Copies the traces into `out` with the planned loop run `k` times.
fn truncated(dir: &Path, ranks: u32, plan: Plan, k: u64, out: &Path) -> Result<()> {
    for r in 0..ranks {
        let from = crate::trace::rank_file(dir, r);
        let to = crate::trace::rank_file(out, r);
        let f = std::fs::File::open(&from).with_context(|| format!("{}: cannot read", from.display()))?;
        let mut w = std::io::BufWriter::new(std::fs::File::create(&to).with_context(|| format!("{}: cannot write", to.display()))?);
        let (mut depth, mut seen) = (0usize, 0usize);
        for line in BufReader::new(f).lines() {
            let line = line.with_context(|| format!("{}: cannot read", from.display()))?;
            let t = line.trim();
            if t.starts_with("loop ") {
                if depth == 0 {
                    seen += 1;
                    if seen == plan.index + 1 {
                        writeln!(w, "loop {k}")?;
                        depth += 1;
                        continue;
                    }
                }
                depth += 1;
            } else if t == "end" {
                depth = depth.saturating_sub(1);
            }
            writeln!(w, "{line}")?;
        }
        w.flush().with_context(|| format!("{}: cannot write", to.display()))?;
    }
    Ok(())
}

/// `later + (later - earlier) * steps`.
fn ahead(earlier: f64, later: f64, steps: f64) -> f64 {
    later + (later - earlier) * steps
}

/// The whole run from two runs k iterations apart, `steps` spans of k after the later one.
fn extrapolate(earlier: &ReplayResult, later: &ReplayResult, steps: f64) -> ReplayResult {
    let mut out = later.clone();
    out.makespan_s = ahead(earlier.makespan_s, later.makespan_s, steps);
    let count = |a: u64, b: u64| ahead(a as f64, b as f64, steps).round().max(0.0) as u64;
    out.messages = count(earlier.messages, later.messages);
    out.bytes = ahead(earlier.bytes, later.bytes, steps);
    for (o, e) in out.ranks.iter_mut().zip(&earlier.ranks) {
        o.finish_s = ahead(e.finish_s, o.finish_s, steps);
        o.compute_s = ahead(e.compute_s, o.compute_s, steps);
        o.comm_s = ahead(e.comm_s, o.comm_s, steps);
        o.wait_s = ahead(e.wait_s, o.wait_s, steps);
        o.messages_sent = count(e.messages_sent, o.messages_sent);
        o.bytes_sent = count(e.bytes_sent, o.bytes_sent);
    }
    for (o, e) in out.hosts.iter_mut().zip(&earlier.hosts) {
        o.computed_flops = ahead(e.computed_flops, o.computed_flops, steps);
        let capacity = o.speed_flops * o.cores as f64 * out.makespan_s;
        o.cpu_use = if capacity > 0.0 { o.computed_flops / capacity } else { 0.0 };
    }
    for (o, e) in out.links.iter_mut().zip(&earlier.links) {
        o.bytes = ahead(e.bytes, o.bytes, steps);
        let capacity = o.bandwidth_bytes_per_s * out.makespan_s;
        o.utilisation = if capacity > 0.0 { o.bytes / capacity } else { 0.0 };
    }
    out
}

/// Runs `job` folded when its traces allow it, through `run` (one simulation of a job); None
/// when they do not, or when the loop never settled before 3k reached its count.
pub fn replay_folded(job: &ReplayJob, run: &(dyn Fn(&ReplayJob) -> Result<ReplayResult> + Sync)) -> Result<Option<ReplayResult>> {
    if job.options.timeline {
        return Ok(None);
    }
    let Some(plan) = plan(&job.trace_dir, job.ranks)? else {
        return Ok(None);
    };
    let mut k = 1u64;
    let started = std::time::Instant::now();
    while 3 * k * MAX_SHARE <= plan.count {
        let mut dirs = Vec::new();
        for i in 1..=3 {
            let tmp = crate::trace::scratch_dir("mpicast-fold", job.ranks).context("cannot create a temporary directory")?;
            truncated(&job.trace_dir, job.ranks, plan, i * k, tmp.path())?;
            dirs.push(tmp);
        }
        // The three short runs are independent: one thread (and child process) each.
        let results: Vec<Result<ReplayResult>> = std::thread::scope(|s| {
            let handles: Vec<_> = dirs
                .iter()
                .map(|d| {
                    let short = ReplayJob { trace_dir: d.path().to_path_buf(), ..job.clone() };
                    s.spawn(move || run(&short))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a folded run panicked")))).collect()
        });
        let mut runs = Vec::new();
        for r in results {
            match r {
                Ok(r) => runs.push(r),
                // Iterations that do not pair up across ranks: the whole trace decides.
                Err(_) => return Ok(None),
            }
        }
        let (d1, d2) = (runs[1].makespan_s - runs[0].makespan_s, runs[2].makespan_s - runs[1].makespan_s);
        if std::env::var_os("MPICAST_FOLD_DEBUG").is_some() {
            eprintln!(
                "fold: k={k} makespans {:?}, walls {:?}",
                runs.iter().map(|r| r.makespan_s).collect::<Vec<_>>(),
                runs.iter().map(|r| r.wall_s).collect::<Vec<_>>()
            );
        }
        if d2 > 0.0 && (d2 - d1).abs() <= TOLERANCE * d2 {
            let steps = (plan.count - 3 * k) as f64 / k as f64;
            let mut out = extrapolate(&runs[1], &runs[2], steps);
            // The short runs overlap: the wall time of all of them, not their sum.
            out.wall_s = started.elapsed().as_secs_f64();
            out.folded = Some(FoldInfo { iterations: plan.count, simulated: 3 * k, period_s: d2 / k as f64 });
            return Ok(Some(out));
        }
        k *= 2;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_planned_loop_is_cut_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let text = |r: u32, n: u64| format!("mpicast-trace 1 rank {r} size 2\ncompute 1e-3\nloop 3\n  barrier\nend\nloop {n}\n  loop 2\n    barrier\n  end\n  compute 1e-4\nend\nbarrier\n");
        for r in 0..2 {
            std::fs::write(crate::trace::rank_file(dir.path(), r), text(r, 5000)).unwrap();
        }
        // 3 actions an iteration (the inner loop unrolled).
        assert_eq!(top_level_loops(&crate::trace::rank_file(dir.path(), 0)).unwrap(), (vec![3, 5000], vec![1.0, 3.0], 15_005.0));
        let p = plan(dir.path(), 2).unwrap().expect("a plan");
        assert_eq!(p, Plan { index: 1, count: 5000 });
        let out = tempfile::tempdir().unwrap();
        truncated(dir.path(), 2, p, 8, out.path()).unwrap();
        assert_eq!(std::fs::read_to_string(crate::trace::rank_file(out.path(), 1)).unwrap(), text(1, 8));
        // Counts that differ between ranks, a short loop, or too few actions: no plan.
        std::fs::write(crate::trace::rank_file(dir.path(), 1), text(1, 4999)).unwrap();
        assert_eq!(plan(dir.path(), 2).unwrap(), None);
        for n in [20, 500] {
            for r in 0..2 {
                std::fs::write(crate::trace::rank_file(dir.path(), r), text(r, n)).unwrap();
            }
            assert_eq!(plan(dir.path(), 2).unwrap(), None, "{n}");
        }
        // The longest loop holds 5000 x 3 of 27,000 actions: the rest would be simulated three
        // times.
        for r in 0..2 {
            let t = text(r, 5000).replace("loop 3\n  barrier", "loop 4000\n  barrier\n  barrier\n  barrier");
            std::fs::write(crate::trace::rank_file(dir.path(), r), t).unwrap();
        }
        assert_eq!(plan(dir.path(), 2).unwrap(), None);
    }

    #[test]
    fn figures_grow_by_the_last_span_per_step() {
        assert_eq!(ahead(1.0, 1.5, 10.0), 6.5);
    }
}
