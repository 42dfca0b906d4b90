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

use crate::model::trace::{FoldInfo, InnerFold, InnerMarks, LoopMarks, RankMark, ReplayJob, ReplayResult};

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

/// Inner loops shorter than this are simulated whole: a short run simulates 3k + 1 of their
/// iterations, and at least half of them must be left out.
const MIN_INNER_ITERATIONS: u64 = 8;

/// The loop to fold: its place among each rank's top-level loops, and its count; and a loop
/// directly in its body folded in each iteration as well.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    pub index: usize,
    pub count: u64,
    pub inner: Option<Inner>,
}

/// A loop directly in the folded loop's body: its place among the loops there, and its count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Inner {
    pub index: usize,
    pub count: u64,
}

/// A trace's loops as folding sees them.
#[derive(Debug, Clone, PartialEq)]
struct Loops {
    /// Counts of the top-level loops, in order.
    counts: Vec<u64>,
    /// The actions one iteration of each runs (nested loops unrolled).
    sizes: Vec<f64>,
    /// The actions of the whole file.
    total: f64,
    /// For each top-level loop, the loops directly in its body: count and actions an iteration.
    inner: Vec<Vec<(u64, f64)>>,
}

/// Counts of the top-level loops of a trace file, in order, the actions one iteration of each
/// runs (nested loops unrolled), and the actions of the whole file.
#[cfg(test)]
fn top_level_loops(path: &Path) -> Result<(Vec<u64>, Vec<f64>, f64)> {
    let l = loops_of(&read(path)?);
    Ok((l.counts, l.sizes, l.total))
}

#[cfg(test)]
fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))
}

/// Rank `r`'s text in a directory of rank files or a packed one.
fn read_rank(dir: &crate::trace::pack::TraceDir, r: u32) -> Result<String> {
    dir.text(r).with_context(|| format!("{}: cannot read", crate::trace::rank_file(dir.path(), r).display()))
}

/// The [`Loops`] of a trace's text.
fn loops_of(text: &str) -> Loops {
    // Open loops: (count, actions so far in one iteration).
    let mut open: Vec<(u64, f64)> = Vec::new();
    let mut l = Loops { counts: Vec::new(), sizes: Vec::new(), total: 0.0, inner: Vec::new() };
    let mut children = Vec::new();
    let close = |open: &mut Vec<(u64, f64)>, l: &mut Loops, children: &mut Vec<(u64, f64)>| {
        if let Some((n, size)) = open.pop() {
            match open.last_mut() {
                Some(outer) => {
                    outer.1 += n as f64 * size;
                    if open.len() == 1 {
                        children.push((n, size));
                    }
                }
                None => {
                    l.sizes.push(size);
                    l.total += n as f64 * size;
                    l.inner.push(std::mem::take(children));
                }
            }
        }
    };
    for line in text.lines().skip(1) {
        let t = line.trim();
        if let Some(n) = t.strip_prefix("loop ") {
            let n = n.trim().parse::<u64>().unwrap_or(0);
            if open.is_empty() {
                l.counts.push(n);
            }
            open.push((n, 0.0));
        } else if t == "end" {
            close(&mut open, &mut l, &mut children);
        } else if !t.is_empty() && !t.starts_with('#') {
            match open.last_mut() {
                Some(inner) => inner.1 += 1.0,
                None => l.total += 1.0,
            }
        }
    }
    while !open.is_empty() {
        close(&mut open, &mut l, &mut children);
    }
    l
}

/// The loop directly in top-level loop `index`'s body to fold as well: the one with the most
/// actions, when it has at least MIN_INNER_ITERATIONS iterations and holds MIN_LOOP_SHARE of
/// the body's actions.
fn inner_plan(l: &Loops, index: usize) -> Option<Inner> {
    let body = *l.sizes.get(index)?;
    let (i, &(count, size)) = l.inner.get(index)?.iter().enumerate().max_by(|a, b| {
        let w = |x: &(u64, f64)| x.0 as f64 * x.1;
        w(a.1).total_cmp(&w(b.1)).then(b.0.cmp(&a.0))
    })?;
    (count >= MIN_INNER_ITERATIONS && count as f64 * size >= MIN_LOOP_SHARE * body).then_some(Inner { index: i, count })
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
    let dir = &crate::trace::pack::TraceDir::open(dir)?;
    let text0 = read_rank(dir, 0)?;
    let loops = loops_of(&text0);
    let (counts, sizes, total) = (&loops.counts, &loops.sizes, loops.total);
    let best = counts.iter().enumerate().max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)));
    let Some(mut plan) = best
        .filter(|(i, c)| {
            let actions = **c as f64 * sizes.get(*i).copied().unwrap_or(0.0);
            **c >= MIN_ITERATIONS && actions * ranks as f64 >= MIN_ACTIONS && actions >= MIN_LOOP_SHARE * total
        })
        .map(|(index, count)| Plan { index, count: *count, inner: inner_plan(&loops, index) })
    else {
        return Ok(None);
    };
    let inner_counts = |l: &Loops| l.inner.get(plan.index).map(|v| v.iter().map(|x| x.0).collect::<Vec<_>>());
    let inner0 = inner_counts(&loops);
    let mut rewrite = false;
    for r in 0..ranks {
        let other;
        let text = if r == 0 {
            &text0
        } else {
            other = read_rank(dir, r)?;
            &other
        };
        if r > 0 {
            let l = loops_of(text);
            if &l.counts != counts {
                return Ok(None);
            }
            // Ranks whose inner loops differ: the planned loop alone is folded.
            if plan.inner.is_some() && inner_counts(&l) != inner0 {
                plan.inner = None;
                rewrite = true;
            }
        }
        if let (Some((k, out)), false) = (first, rewrite) {
            write_truncated(text, plan, k, first_inner(plan), &crate::trace::rank_file(out, r))?;
        }
    }
    if let (Some((k, out)), true) = (first, rewrite) {
        truncated(dir.path(), ranks, plan, k, None, out)?;
    }
    Ok(Some(plan))
}

/// The inner loop's iterations in the first short run, when the plan has one: 3k + 1, k = 1.
fn first_inner(plan: Plan) -> Option<u64> {
    plan.inner.map(|_| 4)
}

/// Copies the traces into `out` with the planned loop run `k` times, and its inner loop `m`
/// times in each iteration when given.
fn truncated(dir: &Path, ranks: u32, plan: Plan, k: u64, m: Option<u64>, out: &Path) -> Result<()> {
    let dir = crate::trace::pack::TraceDir::open(dir)?;
    for r in 0..ranks {
        write_truncated(&read_rank(&dir, r)?, plan, k, m, &crate::trace::rank_file(out, r))?;
    }
    Ok(())
}

/// Writes a trace's text to `to` with the planned loop run `k` times, and its planned inner
/// loop `m` times when given.
fn write_truncated(text: &str, plan: Plan, k: u64, m: Option<u64>, to: &Path) -> Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(to).with_context(|| format!("{}: cannot write", to.display()))?);
    let (mut depth, mut seen, mut in_plan, mut seen_inner) = (0usize, 0usize, false, 0usize);
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("loop ") {
            if depth == 0 {
                seen += 1;
                if seen == plan.index + 1 {
                    writeln!(w, "loop {k}")?;
                    depth += 1;
                    in_plan = true;
                    continue;
                }
            } else if depth == 1 && in_plan {
                seen_inner += 1;
                if let (Some(inner), Some(m)) = (plan.inner, m) {
                    if seen_inner == inner.index + 1 {
                        writeln!(w, "loop {m}")?;
                        depth += 1;
                        continue;
                    }
                }
            }
            depth += 1;
        } else if t == "end" {
            depth = depth.saturating_sub(1);
            in_plan &= depth > 0;
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

/// A rank's figures from mark `a` to mark `b`.
fn delta(a: &RankMark, b: &RankMark) -> RankMark {
    RankMark {
        at_s: b.at_s - a.at_s,
        compute_s: b.compute_s - a.compute_s,
        comm_s: b.comm_s - a.comm_s,
        wait_s: b.wait_s - a.wait_s,
        messages_sent: b.messages_sent - a.messages_sent,
        bytes_sent: b.bytes_sent - a.bytes_sent,
        flops: b.flops - a.flops,
    }
}

/// The sum of `n` deltas, each taken `steps` times; counts rounded.
fn scaled_sum<'a>(ds: impl Iterator<Item = &'a RankMark>, steps: f64) -> RankMark {
    let (mut sum, mut messages, mut bytes) = (RankMark::default(), 0.0, 0.0);
    for d in ds {
        sum.at_s += d.at_s * steps;
        sum.compute_s += d.compute_s * steps;
        sum.comm_s += d.comm_s * steps;
        sum.wait_s += d.wait_s * steps;
        sum.flops += d.flops * steps;
        messages += d.messages_sent as f64 * steps;
        bytes += d.bytes_sent as f64 * steps;
    }
    sum.messages_sent = messages.round() as u64;
    sum.bytes_sent = bytes.round() as u64;
    sum
}

/// The short run as if every run of the inner loop had had all `count` iterations: each ran
/// `simulated` (3k + 1), its starts of iterations k, 2k and 3k marked on every rank; the outer
/// loop's marks were at iterations `outer_at`, each of which runs the inner loop once. For each
/// run, when the time the last rank reached the inner marks advanced over the last span of k
/// iterations as over the one before (within [`TOLERANCE`]), everything that came after it
/// moves by that span for each k of its iterations left out (each rank's figures by its own
/// last span, the makespan by the last rank's, each link by the bytes sent in that span). None
/// when a run was not settled or the marks are missing.
fn unfold_inner(run: &ReplayResult, outer_at: &[u64], count: u64, simulated: u64, k: u64) -> Option<ReplayResult> {
    let runs = run.ranks.first()?.inner_marks.len() / 3;
    if runs == 0 || run.ranks.iter().any(|r| r.inner_marks.len() != 3 * runs) {
        return None;
    }
    let steps = count.checked_sub(simulated)? as f64 / k as f64;
    let mut added = 0.0;
    for i in 0..runs {
        let t = |j: usize| run.ranks.iter().map(|r| r.inner_marks[3 * i + j].at_s).fold(f64::NEG_INFINITY, f64::max);
        let (before, span) = (t(1) - t(0), t(2) - t(1));
        if !(span > 0.0) || (span - before).abs() > TOLERANCE * span {
            return None;
        }
        added += span * steps;
    }
    // Runs of the inner loop before the start of outer iteration j.
    let before = |j: u64| (j as usize).min(runs);
    let mut out = run.clone();
    let mut host_flops: std::collections::HashMap<&str, f64> = std::collections::HashMap::new();
    let (mut messages, mut bytes) = (0u64, 0u64);
    for (o, r) in out.ranks.iter_mut().zip(&run.ranks) {
        let spans: Vec<RankMark> = (0..runs).map(|i| delta(&r.inner_marks[3 * i + 1], &r.inner_marks[3 * i + 2])).collect();
        for (m, &j) in o.marks.iter_mut().zip(outer_at) {
            let s = scaled_sum(spans[..before(j)].iter(), steps);
            *m = RankMark {
                at_s: m.at_s + s.at_s,
                compute_s: m.compute_s + s.compute_s,
                comm_s: m.comm_s + s.comm_s,
                wait_s: m.wait_s + s.wait_s,
                messages_sent: m.messages_sent + s.messages_sent,
                bytes_sent: m.bytes_sent + s.bytes_sent,
                flops: m.flops + s.flops,
            };
        }
        let all = scaled_sum(spans.iter(), steps);
        o.finish_s += all.at_s;
        o.compute_s += all.compute_s;
        o.comm_s += all.comm_s;
        o.wait_s += all.wait_s;
        o.messages_sent += all.messages_sent;
        o.bytes_sent += all.bytes_sent;
        o.inner_marks.clear();
        messages += all.messages_sent;
        bytes += all.bytes_sent;
        *host_flops.entry(r.host.as_str()).or_default() += all.flops;
    }
    out.makespan_s += added;
    out.messages += messages;
    out.bytes += bytes as f64;
    for h in &mut out.hosts {
        h.computed_flops += host_flops.get(h.name.as_str()).copied().unwrap_or(0.0);
        let capacity = h.speed_flops * h.cores as f64 * out.makespan_s;
        h.cpu_use = if capacity > 0.0 { h.computed_flops / capacity } else { 0.0 };
    }
    for l in &mut out.links {
        let in_runs = |a: usize, b: usize| l.inner_marked_bytes.iter().take(b).skip(a).sum::<f64>() * steps;
        l.bytes += in_runs(0, runs);
        for (s, m) in l.marked_bytes.iter_mut().enumerate() {
            if let (Some(&a), Some(&b)) = (outer_at.get(s), outer_at.get(s + 1)) {
                *m += in_runs(before(a), before(b));
            }
        }
        l.inner_marked_bytes.clear();
        let capacity = l.bandwidth_bytes_per_s * out.makespan_s;
        l.utilisation = if capacity > 0.0 { l.bytes / capacity } else { 0.0 };
    }
    Some(out)
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
    // The inner loop, when folded, runs 3k' + 1 iterations marked at k', 2k' and 3k' (k'
    // doubling while a run is not settled), and at most half its count.
    let mut inner_k = plan.inner.map(|_| 1u64);
    for (iterations, at) in rounds {
        if iterations * MAX_SHARE > plan.count {
            break;
        }
        let k = at[1] - at[0];
        let (result, inner) = loop {
            let inner = plan.inner.zip(inner_k).filter(|(i, k)| 2 * (3 * k + 1) <= i.count);
            let m = inner.map(|(_, k)| 3 * k + 1);
            let tmp = match first.take() {
                Some(t) if m == first_inner(plan) => t,
                _ => {
                    let tmp = crate::trace::scratch_dir("mpicast-fold", job.ranks).context("cannot create a temporary directory")?;
                    truncated(&job.trace_dir, job.ranks, plan, iterations, m, tmp.path())?;
                    tmp
                }
            };
            let mut short = ReplayJob { trace_dir: tmp.path().to_path_buf(), ..job.clone() };
            short.options.marks = Some(LoopMarks {
                loop_index: plan.index,
                at: at.clone(),
                inner: inner.map(|(i, k)| InnerMarks { loop_index: i.index, at: vec![k, 2 * k, 3 * k] }),
            });
            // Iterations that do not pair up across ranks: the whole trace decides.
            let Ok(result) = run(&short) else { return Ok(None) };
            let Some((i, ki)) = inner else { break (result, None) };
            let m = 3 * ki + 1;
            let unfolded = unfold_inner(&result, &at, i.count, m, ki);
            if std::env::var_os("MPICAST_FOLD_DEBUG").is_some() {
                eprintln!("fold: inner loop {m} of {} iterations, wall {} s, settled: {}", i.count, result.wall_s, unfolded.is_some());
            }
            match unfolded {
                Some(u) => break (u, Some(InnerFold { iterations: i.count, simulated: m })),
                None => inner_k = Some(2 * ki),
            }
        };
        let folded = extrapolate(&result, (plan.count - iterations) as f64 / k as f64);
        if std::env::var_os("MPICAST_FOLD_DEBUG").is_some() {
            eprintln!("fold: {iterations} iterations, makespan {}, wall {} s, settled: {}", result.makespan_s, result.wall_s, folded.is_some());
        }
        if let Some((mut out, span)) = folded {
            out.wall_s = started.elapsed().as_secs_f64();
            out.folded = Some(FoldInfo { iterations: plan.count, simulated: iterations, period_s: span / k as f64, inner });
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
            inner_marks: Vec::new(),
        };
        ReplayResult {
            makespan_s: spans[1][2] + 1.0,
            ranks: vec![rank(0, spans[0]), rank(1, spans[1])],
            hosts: vec![HostStats { name: "h".into(), ranks: 2, cores: 2, speed_flops: 1e9, computed_flops: 7.0, cpu_use: 0.0 }],
            links: vec![LinkStats { name: "l".into(), bandwidth_bytes_per_s: 1e3, bytes: 500.0, utilisation: 0.0, marked_bytes: vec![100.0, 100.0], inner_marked_bytes: Vec::new() }],
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
        assert_eq!(p, Plan { index: 1, count: 5000, inner: None });
        let out = tempfile::tempdir().unwrap();
        truncated(dir.path(), 2, p, 8, None, out.path()).unwrap();
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
    fn a_long_loop_in_the_folded_one_is_cut_too() {
        let dir = tempfile::tempdir().unwrap();
        let text = |r: u32, n: u64, m: u64| {
            format!("mpicast-trace 1 rank {r} size 2\nloop {n}\n  loop 3\n    barrier\n  end\n  loop {m}\n    barrier\n    barrier\n  end\n  compute 1e-4\nend\n")
        };
        for r in 0..2 {
            std::fs::write(crate::trace::rank_file(dir.path(), r), text(r, 5000, 20)).unwrap();
        }
        // The second loop in the body holds 40 of its 44 actions.
        let p = plan(dir.path(), 2).unwrap().expect("a plan");
        assert_eq!(p, Plan { index: 0, count: 5000, inner: Some(Inner { index: 1, count: 20 }) });
        let out = tempfile::tempdir().unwrap();
        truncated(dir.path(), 2, p, 2, Some(4), out.path()).unwrap();
        let cut = std::fs::read_to_string(crate::trace::rank_file(out.path(), 0)).unwrap();
        assert_eq!(cut.replace("loop 4\n", "  loop 4\n"), text(0, 2, 4));
        // Too short to leave half out, or too small a share of the body: the outer loop alone.
        for (m, extra) in [(7, ""), (20, "  loop 100\n    barrier\n  end\n")] {
            for r in 0..2 {
                let t = text(r, 5000, m).replace("  compute", &format!("{extra}  compute"));
                std::fs::write(crate::trace::rank_file(dir.path(), r), t).unwrap();
            }
            assert_eq!(plan(dir.path(), 2).unwrap().and_then(|p| p.inner), None, "{m}");
        }
        // Ranks whose inner loops differ: the outer loop alone.
        std::fs::write(crate::trace::rank_file(dir.path(), 0), text(0, 5000, 20)).unwrap();
        std::fs::write(crate::trace::rank_file(dir.path(), 1), text(1, 5000, 21)).unwrap();
        assert_eq!(plan(dir.path(), 2).unwrap(), Some(Plan { index: 0, count: 5000, inner: None }));
    }
}
