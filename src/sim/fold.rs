//! Steady-state folding of a replay: a periodic program's main loop is simulated for a few
//! iterations, not all of them.
//!
//! Every rank's trace has the same top-level loops with the same counts (the static path's
//! skeletons and the trace runtime fold each rank's actions into loops). The loop with the most
//! iterations, N, when it has 24 or more, holds three quarters of a rank's actions or more and
//! 10,000 actions or more over all ranks, is simulated in short runs, every rank recording its
//! figures as it starts marked iterations and as it leaves the loop (`ReplayOptions::marks`):
//! first 2 iterations marked at 0 and 1 (ranks that enter the loop together are often settled
//! from the first), then 3k + 1 iterations marked at k, 2k and 3k (inside the loop, where what
//! follows it does not shift the last mark), k = 1, 2, 4, ... When the time the last rank
//! reached each mark advanced over the last span of k iterations as over the span before
//! (within [`TOLERANCE`]), the makespan grows by that span for each k of the remaining
//! iterations, and every other figure by what it grew over its rank's last span: each rank's
//! finish, compute, communication and wait times, messages and bytes, each host's flops and
//! each link's bytes (those its senders sent in their last span). Once a run would pass N / 8
//! the whole trace is simulated. A short run that fails (a deadlock when ranks' iterations do
//! not pair up) falls back to the whole trace as well. (This replaced three runs of k, 2k and
//! 3k iterations, whose makespans were compared: jacobi2d at 1,024 ranks spent 1.9 s in those
//! three children on 2 cores, 0.9 s in this one.)

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use crate::model::trace::{FoldInfo, LoopMarks, ReplayJob, ReplayResult};

/// Two successive spans of k iterations agree within this fraction of the later one.
pub const TOLERANCE: f64 = 0.002;

/// Loops shorter than this are simulated whole.
const MIN_ITERATIONS: u64 = 24;

/// Loops whose iterations hold fewer actions than this over all ranks are simulated whole: the
/// short runs (a child process each) would cost more than they save.
const MIN_ACTIONS: f64 = 10_000.0;

/// The loop must hold at least this share of a rank's actions: a short run simulates everything
/// else whole (a benchmark's 213 loops of different sizes, folded on its
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
#[cfg(test)]
fn top_level_loops(path: &Path) -> Result<(Vec<u64>, Vec<f64>, f64)> {
    Ok(loops_of(&read(path)?))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))
}

/// [`top_level_loops`] of a trace's text.
fn loops_of(text: &str) -> (Vec<u64>, Vec<f64>, f64) {
    // Open loops: (count, actions so far in one iteration).
    let mut open: Vec<(u64, f64)> = Vec::new();
    let (mut counts, mut sizes, mut total) = (Vec::new(), Vec::new(), 0.0);
    for line in text.lines().skip(1) {
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
    (counts, sizes, total)
}

/// The loop every rank has at the same place with the same count, the longest one, when it has
/// at least MIN_ITERATIONS iterations.
pub fn plan(dir: &Path, ranks: u32) -> Result<Option<Plan>> {
    plan_writing(dir, ranks, None)
}

/// [`plan`], reading each trace once: with `first`, (k, out), each rank's copy with the planned
/// loop run k times is written into `out` as it is read (what the first short run simulates;
/// rank 0 alone decides whether a plan can exist). Reading every trace a second time for that
/// copy cost pi_dartboard scaled to 65,536 ranks about half a second.
fn plan_writing(dir: &Path, ranks: u32, first: Option<(u64, &Path)>) -> Result<Option<Plan>> {
    let text0 = read(&crate::trace::rank_file(dir, 0))?;
    let (counts, sizes, total) = loops_of(&text0);
    let best = counts.iter().enumerate().max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)));
    let Some(plan) = best
        .filter(|(i, c)| {
            let actions = **c as f64 * sizes.get(*i).copied().unwrap_or(0.0);
            **c >= MIN_ITERATIONS && actions * ranks as f64 >= MIN_ACTIONS && actions >= MIN_LOOP_SHARE * total
        })
        .map(|(index, count)| Plan { index, count: *count })
    else {
        return Ok(None);
    };
    for r in 0..ranks {
        let other;
        let text = if r == 0 {
            &text0
        } else {
            other = read(&crate::trace::rank_file(dir, r))?;
            &other
        };
        if r > 0 && loops_of(text).0 != counts {
            return Ok(None);
        }
        if let Some((k, out)) = first {
            write_truncated(text, plan, k, &crate::trace::rank_file(out, r))?;
        }
    }
    Ok(Some(plan))
}

/// Copies the traces into `out` with the planned loop run `k` times.
fn truncated(dir: &Path, ranks: u32, plan: Plan, k: u64, out: &Path) -> Result<()> {
    for r in 0..ranks {
        write_truncated(&read(&crate::trace::rank_file(dir, r))?, plan, k, &crate::trace::rank_file(out, r))?;
    }
    Ok(())
}

/// Writes a trace's text to `to` with the planned loop run `k` times.
fn write_truncated(text: &str, plan: Plan, k: u64, to: &Path) -> Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(to).with_context(|| format!("{}: cannot write", to.display()))?);
    let (mut depth, mut seen) = (0usize, 0usize);
    for line in text.lines() {
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
    w.flush().with_context(|| format!("{}: cannot write", to.display()))
}

/// The whole run from a short one whose ranks marked three iterations k apart (the last may be
/// the loop's end): every figure grows by what it grew over its rank's last span, `steps` more
/// times, and the makespan by the last span of the time the last rank reached each mark. None
/// when that time's last span differs from the one before by more than [`TOLERANCE`] of it
/// (each rank's own spans may still differ, as in a flood whose receiver lags by turns), or the
/// marks are missing.
fn extrapolate(run: &ReplayResult, steps: f64) -> Option<(ReplayResult, f64)> {
    let mut last_rank = [f64::NEG_INFINITY; 3];
    for r in &run.ranks {
        let [.., m1, m2, m3] = r.marks[..] else { return None };
        for (t, m) in last_rank.iter_mut().zip([m1, m2, m3]) {
            *t = t.max(m.at_s);
        }
    }
    let (before, span) = (last_rank[1] - last_rank[0], last_rank[2] - last_rank[1]);
    if !(span > 0.0) || (span - before).abs() > TOLERANCE * span {
        return None;
    }
    let mut out = run.clone();
    let grow = |v: f64, d: f64| v + d * steps;
    let count = |v: u64, d: u64| (v as f64 + d as f64 * steps).round().max(0.0) as u64;
    let mut host_flops: std::collections::HashMap<&str, f64> = std::collections::HashMap::new();
    let (mut messages, mut bytes) = (0u64, 0u64);
    for (o, r) in out.ranks.iter_mut().zip(&run.ranks) {
        let [.., a, b] = r.marks[..] else { unreachable!("checked above") };
        o.finish_s = grow(o.finish_s, b.at_s - a.at_s);
        o.compute_s = grow(o.compute_s, b.compute_s - a.compute_s);
        o.comm_s = grow(o.comm_s, b.comm_s - a.comm_s);
        o.wait_s = grow(o.wait_s, b.wait_s - a.wait_s);
        o.messages_sent = count(o.messages_sent, b.messages_sent - a.messages_sent);
        o.bytes_sent = count(o.bytes_sent, b.bytes_sent - a.bytes_sent);
        o.marks.clear();
        messages += b.messages_sent - a.messages_sent;
        bytes += b.bytes_sent - a.bytes_sent;
        *host_flops.entry(r.host.as_str()).or_default() += b.flops - a.flops;
    }
    out.makespan_s = grow(run.makespan_s, span);
    out.messages = count(out.messages, messages);
    out.bytes = grow(out.bytes, bytes as f64);
    for h in &mut out.hosts {
        h.computed_flops = grow(h.computed_flops, host_flops.get(h.name.as_str()).copied().unwrap_or(0.0));
        let capacity = h.speed_flops * h.cores as f64 * out.makespan_s;
        h.cpu_use = if capacity > 0.0 { h.computed_flops / capacity } else { 0.0 };
    }
    for l in &mut out.links {
        if let Some(&last) = l.marked_bytes.last() {
            l.bytes = grow(l.bytes, last);
        }
        l.marked_bytes.clear();
        let capacity = l.bandwidth_bytes_per_s * out.makespan_s;
        l.utilisation = if capacity > 0.0 { l.bytes / capacity } else { 0.0 };
    }
    Some((out, span))
}

/// Runs `job` folded when its traces allow it, through `run` (one simulation of a job); None
/// when they do not, or when the loop never settled before 3k reached its count.
pub fn replay_folded(job: &ReplayJob, run: &(dyn Fn(&ReplayJob) -> Result<ReplayResult> + Sync)) -> Result<Option<ReplayResult>> {
    if job.options.timeline {
        return Ok(None);
    }
    let started = std::time::Instant::now();
    // The first round's copy is written while the plan is made.
    let first = crate::trace::scratch_dir("mpicast-fold", job.ranks).context("cannot create a temporary directory")?;
    let Some(plan) = plan_writing(&job.trace_dir, job.ranks, Some((2, first.path())))? else {
        return Ok(None);
    };
    let mut first = Some(first);
    // First two iterations marked from the loop's start to its end (ranks that enter it
    // together are often settled from the first), then 3k + 1 marked at k, 2k and 3k, k
    // doubling: marks inside the loop, where what follows it (a last exchange, a root that
    // collects) does not shift the last one.
    let rounds = std::iter::once((2, vec![0, 1, 2]))
        .chain(std::iter::successors(Some(1u64), |k| Some(2 * k)).map(|k| (3 * k + 1, vec![k, 2 * k, 3 * k])));
    for (iterations, at) in rounds {
        if iterations * MAX_SHARE > plan.count {
            break;
        }
        let k = at[1] - at[0];
        let tmp = match first.take() {
            Some(t) => t,
            None => {
                let tmp = crate::trace::scratch_dir("mpicast-fold", job.ranks).context("cannot create a temporary directory")?;
                truncated(&job.trace_dir, job.ranks, plan, iterations, tmp.path())?;
                tmp
            }
        };
        let mut short = ReplayJob { trace_dir: tmp.path().to_path_buf(), ..job.clone() };
        short.options.marks = Some(LoopMarks { loop_index: plan.index, at });
        // Iterations that do not pair up across ranks: the whole trace decides.
        let Ok(result) = run(&short) else { return Ok(None) };
        let folded = extrapolate(&result, (plan.count - iterations) as f64 / k as f64);
        if std::env::var_os("MPICAST_FOLD_DEBUG").is_some() {
            eprintln!("fold: {iterations} iterations, makespan {}, wall {} s, settled: {}", result.makespan_s, result.wall_s, folded.is_some());
        }
        if let Some((mut out, span)) = folded {
            out.wall_s = started.elapsed().as_secs_f64();
            out.folded = Some(FoldInfo { iterations: plan.count, simulated: iterations, period_s: span / k as f64 });
            return Ok(Some(out));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::trace::{HostStats, LinkStats, RankMark, RankStats};

    fn mark(at_s: f64, messages_sent: u64) -> RankMark {
        RankMark { at_s, compute_s: at_s / 2.0, comm_s: 0.0, wait_s: at_s / 2.0, messages_sent, bytes_sent: 8 * messages_sent, flops: 1e9 * at_s }
    }

    fn short_run(spans: [[f64; 3]; 2]) -> ReplayResult {
        let rank = |r: u32, m: [f64; 3]| RankStats {
            rank: r,
            host: "h".into(),
            finish_s: m[2] + 1.0,
            compute_s: m[2] / 2.0,
            comm_s: 0.0,
            wait_s: m[2] / 2.0 + 1.0,
            messages_sent: 30,
            bytes_sent: 240,
            marks: vec![mark(m[0], 10), mark(m[1], 20), mark(m[2], 30)],
        };
        ReplayResult {
            makespan_s: spans[1][2] + 1.0,
            ranks: vec![rank(0, spans[0]), rank(1, spans[1])],
            hosts: vec![HostStats { name: "h".into(), ranks: 2, cores: 2, speed_flops: 1e9, computed_flops: 7.0, cpu_use: 0.0 }],
            links: vec![LinkStats { name: "l".into(), bandwidth_bytes_per_s: 1e3, bytes: 500.0, utilisation: 0.0, marked_bytes: vec![100.0, 100.0] }],
            messages: 60,
            bytes: 480.0,
            wall_s: 0.0,
            warnings: Vec::new(),
            timeline: Vec::new(),
            folded: None,
        }
    }

    #[test]
    fn a_settled_short_run_grows_by_each_ranks_last_span() {
        // Iterations k, 2k and 3k start at 1, 3 and 5 s on rank 0 and 1.5, 3.5, 5.5 s on rank 1.
        let (out, span) = extrapolate(&short_run([[1.0, 3.0, 5.0], [1.5, 3.5, 5.5]]), 10.0).expect("settled");
        assert_eq!(span, 2.0);
        assert_eq!(out.ranks[0].finish_s, 6.0 + 20.0);
        assert_eq!(out.makespan_s, 6.5 + 20.0);
        assert_eq!(out.ranks[1].compute_s, 2.75 + 10.0);
        assert_eq!((out.ranks[1].messages_sent, out.messages, out.bytes), (130, 260, 480.0 + 1600.0));
        assert_eq!(out.hosts[0].computed_flops, 7.0 + 2.0 * 10.0 * 2e9);
        assert_eq!(out.links[0].bytes, 500.0 + 1000.0);
        assert!(out.ranks.iter().all(|r| r.marks.is_empty()) && out.links[0].marked_bytes.is_empty());
        // The last rank's last span is 1% longer than the one before: not settled.
        assert!(extrapolate(&short_run([[1.0, 3.0, 5.0], [1.5, 3.5, 5.52]]), 10.0).is_none());
        // Rank 0's spans differ (2.1 s then 1.9 s) while the last rank's repeat: settled, and
        // each rank grows by its own last span.
        let (out, _) = extrapolate(&short_run([[1.0, 3.1, 5.0], [1.5, 3.5, 5.5]]), 10.0).expect("settled");
        assert!((out.ranks[0].finish_s - (6.0 + 19.0)).abs() < 1e-12 && out.makespan_s == 6.5 + 20.0);
    }

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

}
