//! Trace rewriting from K to N' ranks (dPerf's formulas (3) to (6), generalised).
//!
//! - Master-worker: workers are cloned from the traced worker at the same relative position; the
//!   master's sweeps over its workers (one message per worker, in rank order, with what happens
//!   between them) are replayed for every new worker, and its receives from any source repeated
//!   once per worker. A self-scheduling farm (each result, received from any worker, answered
//!   with the next task) has its tasks dealt to the new workers instead ([`super::farm`]).
//! - Grids (chains, rings, meshes, tori in 1 to 3 dimensions): every traced rank's messages are
//!   written as directions (offsets in the grid) instead of ranks; a new rank takes the trace of a
//!   traced rank in the same position class (per dimension: first, last, inner, or any position of
//!   a periodic dimension) and its peers are found again from its coordinates. A class the trace
//!   lacks (inner ranks when every dimension had 2 ranks) is synthesised by merging the traces of
//!   the first and last ranks of that dimension: a blocking send in one and the matching receive
//!   in the other (one MPI_Sendrecv whose other half went to MPI_PROC_NULL) become one sendrecv.
//! - Collectives only: every new rank copies a traced rank other than the roots.
//!
//! Compute bursts and message sizes go through [`Scaler`].

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use anyhow::{bail, Result};

use crate::model::trace::{Peer, RankList, Tag, TraceAction};
use crate::mpi::cart::{cart_coords, cart_rank};

use super::items::Item;
use super::ratio::{Mode, Scaler};

/// What every rewrite needs: the sizes, the scaler and the environments of formulas.
pub struct Ctx<'a> {
    pub k: u32,
    pub n: u32,
    pub scaler: &'a Scaler<'a>,
    pub base_env: HashMap<String, f64>,
}

impl Ctx<'_> {
    /// The formula environment of `rank` of `size` ranks (with its grid coordinates).
    pub fn env(&self, rank: u32, size: u32, dims: Option<&[u32]>) -> HashMap<String, f64> {
        let mut e = self.base_env.clone();
        e.insert("rank".into(), rank as f64);
        e.insert("size".into(), size as f64);
        if let Some(d) = dims {
            let d64: Vec<i64> = d.iter().map(|x| *x as i64).collect();
            for (i, c) in cart_coords(rank as i64, &d64).iter().enumerate() {
                e.insert(format!("cart_dims{i}"), d[i] as f64);
                e.insert(format!("cart_coord{i}"), *c as f64);
            }
        }
        e
    }
}

/// Counters of message sizes for the report.
fn count_bytes(ctx: &Ctx, how: u8) {
    let mut s = ctx.scaler.stats.borrow_mut();
    match how {
        0 => s.bytes_formula += 1,
        1 => s.bytes_faces += 1,
        _ => s.bytes_kept += 1,
    }
}

/// Replaces an action's message size(s) for a new rank: the site's formula when it resolves,
/// else `fallback` times the traced size (the faces of the decomposition), else kept.
fn resize(ctx: &Ctx, a: &TraceAction, old: &HashMap<String, f64>, new: &HashMap<String, f64>, peers: (Option<u32>, Option<u32>), fallback: f64) -> TraceAction {
    let orig = a.clone();
    let mut a = a.clone();
    let collective = !is_message(&orig);
    let one = |b: &mut u64| {
        if let Some(x) = ctx.scaler.bytes_formula(&orig, *b, old, new, peers) {
            *b = x;
            count_bytes(ctx, 0);
        } else if fallback != 1.0 && !collective {
            *b = (*b as f64 * fallback).round().max(0.0) as u64;
            count_bytes(ctx, 1);
        } else {
            count_bytes(ctx, 2);
        }
    };
    match &mut a {
        TraceAction::Send { bytes, .. } | TraceAction::Isend { bytes, .. } => one(bytes),
        TraceAction::Recv { bytes: Some(b), .. } | TraceAction::Irecv { bytes: Some(b), .. } | TraceAction::Arecv { bytes: Some(b), .. } => one(b),
        TraceAction::Sendrecv { send_bytes, recv_bytes, .. } => {
            one(send_bytes);
            if let Some(r) = recv_bytes {
                one(r);
            }
        }
        TraceAction::Bcast { bytes, .. }
        | TraceAction::Reduce { bytes, .. }
        | TraceAction::Allreduce { bytes, .. }
        | TraceAction::Gather { bytes, .. }
        | TraceAction::Scatter { bytes, .. }
        | TraceAction::Allgather { bytes, .. }
        | TraceAction::Alltoall { bytes, .. }
        | TraceAction::Scan { bytes, .. } => one(bytes),
        _ => {}
    }
    a
}

/// Resizes a v-collective's per-rank list to the new size (entry j from the traced rank that
/// new rank j copies).
fn resize_counts(c: &[u64], n: u32, origin_of: &dyn Fn(u32) -> u32) -> Vec<u64> {
    (0..n).map(|j| c.get(origin_of(j) as usize).copied().unwrap_or(0)).collect()
}

/// Members at N' of a communicator of `ranks` that traced rank `origin` defines, as new rank
/// `rank` defines it, and whether they came from the static path's evaluation: the world (also
/// reversed, as MPICH's test harness splits it with key size - rank), the new rank's group where
/// groups of consecutive ranks tile the world, else the members the program computes at N'.
fn scaled_members(ctx: &Ctx, ranks: &RankList, origin: u32, rank: u32) -> Option<(RankList, bool)> {
    let g = ranks.len() as u32;
    let first = ranks.first().unwrap_or(0);
    let consecutive = ranks.runs().len() == 1 && ranks.runs()[0].1 >= first;
    let reversed = g == ctx.k && g > 1 && ranks.runs() == [(g - 1, 0)];
    if consecutive && g == ctx.k {
        Some((RankList::world(ctx.n), false))
    } else if reversed {
        let mut l = RankList::default();
        l.push_run(ctx.n - 1, 0);
        Some((l, false))
    } else if consecutive && g > 0 && first % g == 0 && ctx.k % g == 0 {
        // Groups of g consecutive ranks tiling the world (MPI_Comm_split by rank / g, e.g.
        // P2PDC's hybrid groups): the new rank's group. Ranks 0-2 of 4 are no such group
        // (MPICH's comm_group_half: ranks up to size / 2), and scaled as groups of 3 they gave
        // 16 ranks a 3-rank barrier where the program makes a 9-rank one.
        let b = rank / g * g;
        let mut l = RankList::default();
        l.push_run(b, (b + g).min(ctx.n) - 1);
        Some((l, false))
    } else {
        ctx.scaler.evaluated.communicator(origin, rank, ranks).map(|m| (m, true))
    }
}

/// The communicators a rank's trace defines (members), in order.
fn comm_defs(items: &[Item]) -> Vec<RankList> {
    let mut out = Vec::new();
    super::items::walk(items, 1, &mut |a, _| {
        if let TraceAction::CommDef { ranks, .. } = a {
            out.push(ranks.clone());
        }
    });
    out
}

/// Rewrites what is not a point-to-point message: compute, communicators, v-collective lists.
pub(super) fn common(ctx: &Ctx, a: &TraceAction, origin: u32, old: &HashMap<String, f64>, new: &HashMap<String, f64>, uniform: f64, origin_of: &dyn Fn(u32) -> u32) -> Result<Option<TraceAction>> {
    Ok(Some(match a {
        TraceAction::Compute { compute } => match ctx.scaler.compute(compute, origin, old, new, uniform) {
            Some(c) => TraceAction::Compute { compute: c },
            None => return Ok(None),
        },
        TraceAction::CommDef { id, ranks } => {
            let r = new.get("rank").copied().unwrap_or(0.0) as u32;
            match scaled_members(ctx, ranks, origin, r) {
                Some((m, evaluated)) => {
                    if evaluated {
                        ctx.scaler.stats.borrow_mut().comms_evaluated += 1;
                    }
                    TraceAction::CommDef { id: *id, ranks: m }
                }
                None => bail!("communicator {id} holds ranks {:?}: only communicators of every rank, of groups of consecutive ranks, or whose members the static path evaluates at both sizes can be scaled", ranks.to_vec()),
            }
        }
        TraceAction::Gatherv { counts, root, comm } => TraceAction::Gatherv { counts: resize_counts(counts, ctx.n, origin_of), root: *root, comm: *comm },
        TraceAction::Scatterv { counts, root, comm } => TraceAction::Scatterv { counts: resize_counts(counts, ctx.n, origin_of), root: *root, comm: *comm },
        TraceAction::Allgatherv { counts, comm } => TraceAction::Allgatherv { counts: resize_counts(counts, ctx.n, origin_of), comm: *comm },
        TraceAction::ReduceScatter { counts, comm } => TraceAction::ReduceScatter { counts: resize_counts(counts, ctx.n, origin_of), comm: *comm },
        TraceAction::Alltoallv { send, recv, comm } => {
            // What a rank sends in all is what it holds: the same at N' ranks in program and
            // weak scaling (a bucket sort's keys per rank), K/N' of it in strong; spread over
            // N' peers instead of K. Copying the K-rank lists gave each rank N'/K times its data.
            let kn = ctx.k as f64 / ctx.n as f64;
            let f = if ctx.scaler.mode == Mode::Strong { kn * kn } else { kn };
            let spread = |c: &[u64]| -> Vec<u64> { resize_counts(c, ctx.n, origin_of).into_iter().map(|x| (x as f64 * f).round() as u64).collect() };
            TraceAction::Alltoallv { send: spread(send), recv: spread(recv), comm: *comm }
        }
        other => resize(ctx, other, old, new, (None, None), 1.0),
    }))
}

fn is_message(a: &TraceAction) -> bool {
    matches!(a, TraceAction::Send { .. } | TraceAction::Recv { .. } | TraceAction::Arecv { .. } | TraceAction::Isend { .. } | TraceAction::Irecv { .. } | TraceAction::Sendrecv { .. })
}

fn is_waitish(a: &TraceAction) -> bool {
    matches!(a, TraceAction::Wait { .. } | TraceAction::Waitall { .. } | TraceAction::Test { .. } | TraceAction::Cancel { .. })
}

/// The traced rank a new rank copies, at the same relative position among `from` ranks.
pub(super) fn proportional(i: u32, to: u32, from: u32) -> u32 {
    if from <= 1 || to <= 1 {
        return 0;
    }
    ((i as u64 * (from as u64 - 1) + (to as u64 - 1) / 2) / (to as u64 - 1)).min(from as u64 - 1) as u32
}

// ---- independent ranks (collectives only) --------------------------------------------------------

pub fn independent(ctx: &Ctx, traces: &[Vec<Item>], emit: &mut dyn FnMut(u32, Vec<Item>) -> Result<()>, notes: &mut Vec<String>) -> Result<()> {
    if traces.iter().any(|t| has_messages(t)) {
        return replicas(ctx, traces, emit, notes);
    }
    let near = |r: u32| -> u32 {
        if r == 0 || ctx.k == 1 {
            0
        } else {
            1 + proportional(r - 1, ctx.n - 1, ctx.k - 1)
        }
    };
    // A new rank copies a traced rank in the same communicators: where the program makes
    // communicators of some ranks (the first half and one), the nearest traced rank whose
    // communicators, evaluated at N', hold the new rank and are as many as its own.
    let ev = &ctx.scaler.evaluated;
    let origins: Vec<u32> = if ev.rank_comms.0.is_empty() || ev.rank_comms.1.is_empty() {
        (0..ctx.n).map(near).collect()
    } else {
        let defs: Vec<Vec<RankList>> = traces.iter().map(|t| comm_defs(t)).collect();
        let fits = |o: u32, r: u32| -> bool {
            let same_count = match (ev.rank_comms.0.get(o as usize), ev.rank_comms.1.get(r as usize)) {
                (Some(a), Some(b)) => a.len() == b.len(),
                _ => false,
            };
            same_count && defs[o as usize].iter().all(|d| scaled_members(ctx, d, o, r).is_some_and(|(m, _)| m.contains(r)))
        };
        (0..ctx.n)
            .map(|r| {
                let p = near(r);
                if r == 0 || fits(p, r) {
                    return p;
                }
                (1..ctx.k).filter(|o| fits(*o, r)).min_by_key(|o| (o.abs_diff(p), *o)).unwrap_or(p)
            })
            .collect()
    };
    let origin_of = |r: u32| -> u32 { origins[r as usize] };
    let uniform = ctx.k as f64 / ctx.n as f64;
    for r in 0..ctx.n {
        let o = origin_of(r);
        let old = ctx.env(o, ctx.k, None);
        let new = ctx.env(r, ctx.n, None);
        let items = map_items(&traces[o as usize], &mut |a| common(ctx, a, o, &old, &new, uniform, &origin_of))?;
        emit(r, items)?;
    }
    Ok(())
}

fn has_messages(items: &[Item]) -> bool {
    let mut found = false;
    super::items::walk(items, 1, &mut |a, _| found |= is_message(a));
    found
}

/// Independent ranks forced on a trace whose ranks exchange messages: the traced job of K
/// ranks copied N' / K times (new rank r is traced rank r mod K, its peers in its own copy), so
/// every message has its partner and the simulation cannot deadlock on them; the ranks after
/// the last whole copy keep their compute and collectives, not their messages.
fn replicas(ctx: &Ctx, traces: &[Vec<Item>], emit: &mut dyn FnMut(u32, Vec<Item>) -> Result<()>, notes: &mut Vec<String>) -> Result<()> {
    let k = ctx.k;
    let whole = ctx.n / k * k;
    let origin_of = |r: u32| -> u32 { r % k };
    let uniform = k as f64 / ctx.n as f64;
    notes.push(format!(
        "independent ranks, but the {k}-rank trace has point-to-point messages: its ranks' messages copied in {} groups of {k} (ranks 0-{}){}",
        ctx.n / k,
        whole.saturating_sub(1),
        if whole < ctx.n { format!("; ranks {whole}-{} keep their compute and collectives, not their messages", ctx.n - 1) } else { String::new() }
    ));
    for r in 0..ctx.n {
        let o = origin_of(r);
        let base = r - o;
        let old = ctx.env(o, k, None);
        let new = ctx.env(r, ctx.n, None);
        let items = map_items(&traces[o as usize], &mut |a| {
            if r >= whole && (is_message(a) || is_waitish(a)) {
                return Ok(None);
            }
            if is_message(a) {
                let peer = peer_of(a);
                return Ok(Some(resize(ctx, &map_peers(a, |p| p + base), &old, &new, (peer, peer.map(|p| p + base)), 1.0)));
            }
            common(ctx, a, o, &old, &new, uniform, &origin_of)
        })?;
        emit(r, items)?;
    }
    Ok(())
}

// ---- pairs (rank 2i with 2i + 1) ------------------------------------------------------------------

/// New rank r is traced rank r mod K (its place in its pair kept), its partner r ^ 1.
pub fn pairs(ctx: &Ctx, traces: &[Vec<Item>], emit: &mut dyn FnMut(u32, Vec<Item>) -> Result<()>) -> Result<()> {
    let k = ctx.k;
    let origin_of = |r: u32| -> u32 { r % k };
    let uniform = ctx.k as f64 / ctx.n as f64;
    for r in 0..ctx.n {
        let o = origin_of(r);
        let old = ctx.env(o, ctx.k, None);
        let new = ctx.env(r, ctx.n, None);
        let items = map_items(&traces[o as usize], &mut |a| {
            if is_message(a) {
                let a = match peer_of(a) {
                    Some(p) if p == o ^ 1 => with_peer(a, r ^ 1),
                    Some(p) => bail!("rank {o} talks to rank {p}, not to its partner {}", o ^ 1),
                    None => a.clone(),
                };
                return Ok(Some(resize(ctx, &a, &old, &new, (Some(r ^ 1), Some(r ^ 1)), 1.0)));
            }
            common(ctx, a, o, &old, &new, uniform, &origin_of)
        })?;
        emit(r, items)?;
    }
    Ok(())
}

fn map_items(items: &[Item], f: &mut dyn FnMut(&TraceAction) -> Result<Option<TraceAction>>) -> Result<Vec<Item>> {
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        match it {
            Item::Action(a) => {
                if let Some(b) = f(a)? {
                    out.push(Item::Action(b));
                }
            }
            Item::Loop(k, body) => {
                let b = map_items(body, f)?;
                if !b.is_empty() {
                    out.push(Item::Loop(*k, b));
                }
            }
        }
    }
    Ok(out)
}

// ---- master-worker ---------------------------------------------------------------------------------

fn peer_of(a: &TraceAction) -> Option<u32> {
    match a {
        TraceAction::Send { to, .. } | TraceAction::Isend { to, .. } | TraceAction::Sendrecv { to, .. } => Some(*to),
        TraceAction::Recv { from: Peer::Rank(p), .. } | TraceAction::Irecv { from: Peer::Rank(p), .. } => Some(*p),
        TraceAction::Arecv { from, .. } => Some(*from),
        _ => None,
    }
}

/// The action with every peer it names (not MPI_ANY_SOURCE) replaced by `f(peer)`.
fn map_peers(a: &TraceAction, f: impl Fn(u32) -> u32) -> TraceAction {
    let mut a = a.clone();
    match &mut a {
        TraceAction::Send { to, .. } | TraceAction::Isend { to, .. } => *to = f(*to),
        TraceAction::Sendrecv { to, from, .. } => {
            *to = f(*to);
            if let Peer::Rank(r) = from {
                *r = f(*r);
            }
        }
        TraceAction::Recv { from: Peer::Rank(r), .. } | TraceAction::Irecv { from: Peer::Rank(r), .. } => *r = f(*r),
        TraceAction::Arecv { from, .. } => *from = f(*from),
        _ => {}
    }
    a
}

fn with_peer(a: &TraceAction, p: u32) -> TraceAction {
    map_peers(a, |_| p)
}

fn op_name(a: &TraceAction) -> &'static str {
    match a {
        TraceAction::Send { .. } => "send",
        TraceAction::Isend { .. } => "isend",
        TraceAction::Recv { .. } => "recv",
        TraceAction::Arecv { .. } => "arecv",
        TraceAction::Irecv { .. } => "irecv",
        TraceAction::Sendrecv { .. } => "sendrecv",
        _ => "other",
    }
}

fn any_recv(a: &TraceAction) -> bool {
    matches!(a, TraceAction::Recv { from: Peer::Any, .. } | TraceAction::Irecv { from: Peer::Any, .. })
}

fn has_any_recv(items: &[Item]) -> bool {
    items.iter().any(|i| match i {
        Item::Action(a) => any_recv(a),
        Item::Loop(_, b) => has_any_recv(b),
    })
}

struct Mw {
    root: u32,
    old_workers: Vec<u32>,
    new_workers: Vec<u32>,
    notes: Vec<String>,
}

impl Mw {
    /// The master's items with every sweep over the workers replayed for the new workers.
    fn expand(&mut self, items: &[Item]) -> Vec<Tagged> {
        let w = self.old_workers.clone();
        let mut out: Vec<Tagged> = Vec::new();
        let mut i = 0;
        while i < items.len() {
            match &items[i] {
                Item::Action(a) if peer_of(a) == w.first().copied() && is_message(a) => {
                    // A sweep: one message of this kind to each worker in order.
                    let kind = op_name(a);
                    let mut segs: Vec<Vec<Item>> = vec![vec![items[i].clone()]];
                    let mut gap: Vec<Item> = Vec::new();
                    let mut j = i + 1;
                    while j < items.len() && segs.len() < w.len() {
                        match &items[j] {
                            Item::Action(b) if is_message(b) && peer_of(b).is_some() => {
                                if peer_of(b) == Some(w[segs.len()]) && op_name(b) == kind {
                                    let mut s = std::mem::take(&mut gap);
                                    s.push(items[j].clone());
                                    segs.push(s);
                                } else {
                                    break;
                                }
                            }
                            Item::Action(b) if matches!(b, TraceAction::Compute { .. }) || is_waitish(b) => gap.push(items[j].clone()),
                            _ => break,
                        }
                        j += 1;
                    }
                    if segs.len() == w.len() {
                        let nw = self.new_workers.clone();
                        for (idx, p) in nw.iter().enumerate() {
                            let seg = if idx == 0 || segs.len() == 1 {
                                // The first worker's message alone: what precedes it is not per worker.
                                vec![segs[0].last().cloned().expect("message")]
                            } else {
                                segs[1 + proportional(idx as u32 - 1, nw.len() as u32 - 1, segs.len() as u32 - 1) as usize].clone()
                            };
                            let origin = if idx == 0 || segs.len() == 1 { w[0] } else { w[(1 + proportional(idx as u32 - 1, nw.len() as u32 - 1, segs.len() as u32 - 1)) as usize] };
                            for it in seg {
                                match it {
                                    Item::Action(b) if peer_of(&b) == Some(origin) => out.push(Tagged::Act(with_peer(&b, *p), Some((origin, *p)))),
                                    other => out.push(Tagged::plain(&other)),
                                }
                            }
                        }
                        i = j - gap.len();
                        continue;
                    }
                    self.notes.push(format!("the master's {kind} to worker {} is not part of a sweep over every worker: kept as is", w[0]));
                    out.push(Tagged::plain(&items[i]));
                    i += 1;
                }
                Item::Loop(k, body) => {
                    let body_x = self.expand(body);
                    let count = if *k == w.len() as u64 && has_any_recv(body) && w.len() > 0 { self.new_workers.len() as u64 } else { *k };
                    out.push(Tagged::Loop(count, body_x));
                    i += 1;
                }
                Item::Action(a) if any_recv(a) => {
                    // Consecutive receives from any source, one per worker.
                    let mut j = i;
                    while j < items.len() && items[j] == items[i] {
                        j += 1;
                    }
                    let run = j - i;
                    let count = if run == w.len() { self.new_workers.len() } else { run };
                    for _ in 0..count {
                        out.push(Tagged::plain(&items[i]));
                    }
                    i = j;
                }
                other => {
                    out.push(Tagged::plain(other));
                    i += 1;
                }
            }
        }
        out
    }
}

pub fn master_worker(ctx: &Ctx, root: u32, traces: &[Vec<Item>], emit: &mut dyn FnMut(u32, Vec<Item>) -> Result<()>, notes: &mut Vec<String>) -> Result<()> {
    if root >= ctx.n {
        bail!("the master is rank {root}: {} ranks have no such rank", ctx.n);
    }
    let old_workers: Vec<u32> = (0..ctx.k).filter(|r| *r != root).collect();
    let new_workers: Vec<u32> = (0..ctx.n).filter(|r| *r != root).collect();
    if old_workers.is_empty() {
        bail!("the trace has no worker to copy");
    }
    let origin_of = |r: u32| -> u32 {
        if r == root {
            root
        } else {
            // Its place among the workers (every rank but the master's, in order).
            let idx = if r < root { r } else { r - 1 };
            old_workers[proportional(idx, new_workers.len() as u32, old_workers.len() as u32) as usize]
        }
    };
    let worker_uniform = old_workers.len() as f64 / new_workers.len().max(1) as f64;
    let mut mw = Mw { root, old_workers: old_workers.clone(), new_workers: new_workers.clone(), notes: Vec::new() };
    let expanded = mw.expand(&traces[root as usize]);
    let _ = mw.root;
    notes.extend(mw.notes.drain(..));
    let old_root = ctx.env(root, ctx.k, None);
    let new_root = ctx.env(root, ctx.n, None);
    // The master: messages resized with their worker as the peer.
    let root_items = map_tagged(&expanded, &mut |a, peers| {
        if is_message(a) {
            let (old_peer, new_peer) = match peers {
                Some((o, n)) => (Some(o), Some(n)),
                None => (peer_of(a), peer_of(a)),
            };
            let f = if ctx.scaler.mode == Mode::Strong { worker_uniform } else { 1.0 };
            Ok(Some(resize(ctx, a, &old_root, &new_root, (old_peer, new_peer), f)))
        } else {
            common(ctx, a, root, &old_root, &new_root, 1.0, &origin_of)
        }
    })?;
    for r in 0..ctx.n {
        if r == root {
            emit(r, root_items.clone())?;
            continue;
        }
        let o = origin_of(r);
        let old = ctx.env(o, ctx.k, None);
        let new = ctx.env(r, ctx.n, None);
        let items = map_items(&traces[o as usize], &mut |a| {
            if is_message(a) {
                let f = if ctx.scaler.mode == Mode::Strong { worker_uniform } else { 1.0 };
                Ok(Some(resize(ctx, a, &old, &new, (Some(root), Some(root)), f)))
            } else {
                common(ctx, a, o, &old, &new, worker_uniform, &origin_of)
            }
        })?;
        emit(r, items)?;
    }
    Ok(())
}

fn map_tagged(items: &[Tagged], f: &mut dyn FnMut(&TraceAction, Option<(u32, u32)>) -> Result<Option<TraceAction>>) -> Result<Vec<Item>> {
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        match it {
            Tagged::Act(a, p) => {
                if let Some(b) = f(a, *p)? {
                    out.push(Item::Action(b));
                }
            }
            Tagged::Loop(k, body) => {
                let b = map_tagged(body, f)?;
                if !b.is_empty() {
                    out.push(Item::Loop(*k, b));
                }
            }
        }
    }
    Ok(out)
}

/// The master's trace after expansion: each message to a new worker carries the traced worker
/// it was copied from and the new one (old peer, new peer), for its size.
enum Tagged {
    Act(TraceAction, Option<(u32, u32)>),
    Loop(u64, Vec<Tagged>),
}

impl Tagged {
    fn plain(it: &Item) -> Tagged {
        match it {
            Item::Action(a) => Tagged::Act(a.clone(), None),
            Item::Loop(k, b) => Tagged::Loop(*k, b.iter().map(Tagged::plain).collect()),
        }
    }
}

// ---- grids -----------------------------------------------------------------------------------------

type Dir = Vec<i64>;

/// A traced action with its peers as directions in the grid, and the traced rank it came from.
#[derive(Debug, Clone)]
enum Tok {
    A { a: TraceAction, to: Option<Dir>, from: Option<Dir>, origin: u32 },
    L(u64, Vec<Tok>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Class {
    /// Any position of a periodic dimension.
    Wrap,
    Only,
    First,
    Inner,
    Last,
}

fn class_of(c: i64, d: u32, periodic: bool) -> Class {
    if periodic {
        Class::Wrap
    } else if d == 1 {
        Class::Only
    } else if c == 0 {
        Class::First
    } else if c == d as i64 - 1 {
        Class::Last
    } else {
        Class::Inner
    }
}

pub struct Grid<'c, 'a> {
    ctx: &'c Ctx<'a>,
    dims: Vec<u32>,
    new_dims: Vec<u32>,
    periodic: Vec<bool>,
    norm: Vec<Rc<Vec<Tok>>>,
    templates: HashMap<Vec<Class>, Rc<Vec<Tok>>>,
    /// Size of the groups of consecutive ranks a communicator of the trace forms (P2PDC's
    /// hybrid groups): a rank's place in its group matters as much as its place in the grid.
    group: Option<u32>,
}

fn req_of(a: &TraceAction) -> Option<u64> {
    match a {
        TraceAction::Isend { req, .. } | TraceAction::Irecv { req, .. } => Some(*req),
        _ => None,
    }
}

fn set_req(a: &mut TraceAction, f: &dyn Fn(u64) -> u64) {
    match a {
        TraceAction::Isend { req, .. }
        | TraceAction::Irecv { req, .. }
        | TraceAction::Wait { req }
        | TraceAction::Test { req }
        | TraceAction::Cancel { req } => *req = f(*req),
        TraceAction::Waitall { reqs } => reqs.iter_mut().for_each(|r| *r = f(*r)),
        _ => {}
    }
}

/// The action with peers and request ids blanked, and its directions: equal shapes are the same
/// message seen from two traced ranks.
fn shape(t: &Tok) -> String {
    match t {
        Tok::A { a, to, from, .. } => {
            let mut b = with_peer(a, 0);
            set_req(&mut b, &|_| 0);
            format!("{} {:?} {:?}", crate::trace::format_action(&b), to, from)
        }
        Tok::L(k, _) => format!("loop {k}"),
    }
}

impl<'c, 'a> Grid<'c, 'a> {
    pub fn new(ctx: &'c Ctx<'a>, dims: Vec<u32>, periodic: Vec<bool>, new_dims: Vec<u32>, traces: &[Vec<Item>]) -> Result<Grid<'c, 'a>> {
        let mut group = None;
        for t in traces {
            super::items::walk(t, 1, &mut |a, _| {
                if let TraceAction::CommDef { ranks, .. } = a {
                    let g = ranks.len() as u32;
                    let first = ranks.first().unwrap_or(0);
                    if g > 1 && g < ctx.k && first % g == 0 && ctx.k % g == 0 && ranks.runs() == [(first, first + g - 1)] {
                        group = Some(g);
                    }
                }
            });
        }
        let mut g = Grid { ctx, dims, new_dims, periodic, norm: Vec::new(), templates: HashMap::new(), group };
        for (r, t) in traces.iter().enumerate() {
            let n = g.normalise(t, r as u32)?;
            g.norm.push(Rc::new(n));
        }
        Ok(g)
    }

    fn old_class(&self, r: u32) -> Vec<Class> {
        let c = self.coords(r);
        (0..self.dims.len()).map(|e| class_of(c[e], self.dims[e], self.periodic[e])).collect()
    }

    /// The template of a class for a rank at `phase` within its group, whose group's members
    /// have the classes `group_classes`: a traced rank at the same phase of a traced group of the
    /// same classes, so that a group's members come from one traced group and agree on their
    /// (data-dependent) iteration counts.
    fn template_for(&mut self, s: &[Class], phase: Option<(u32, Vec<Vec<Class>>)>) -> Result<Rc<Vec<Tok>>> {
        if let (Some((p, want)), Some(g)) = (phase, self.group) {
            let sig = |r: u32| -> Vec<Vec<Class>> {
                let b = r / g * g;
                (b..(b + g).min(self.ctx.k)).map(|q| self.old_class(q)).collect()
            };
            if let Some(r) = (0..self.ctx.k).find(|&r| r % g == p && sig(r) == want) {
                return Ok(self.norm[r as usize].clone());
            }
            bail!(
                "the trace's groups of {g} ranks (a communicator of consecutive ranks, e.g. P2PDC's hybrid scheme) have no group placed in the grid like the new ranks' groups; trace with at least {} ranks",
                3 * g
            );
        }
        self.template(s)
    }

    fn coords(&self, r: u32) -> Vec<i64> {
        let d: Vec<i64> = self.dims.iter().map(|x| *x as i64).collect();
        cart_coords(r as i64, &d)
    }

    /// The offset from rank r to peer p, and the dimensions where its sign is ambiguous
    /// (periodic dimensions of 1 or 2 ranks, where +1 and -1 reach the same rank).
    fn delta(&self, r: u32, p: u32) -> (Dir, Vec<usize>) {
        let (cr, cp) = (self.coords(r), self.coords(p));
        let mut d = Vec::with_capacity(cr.len());
        let mut amb = Vec::new();
        for e in 0..cr.len() {
            let mut x = cp[e] - cr[e];
            if self.periodic[e] {
                let dd = self.dims[e] as i64;
                x = x.rem_euclid(dd);
                if 2 * x > dd {
                    x -= dd;
                }
                if dd == 2 && x != 0 {
                    amb.push(e);
                }
            }
            d.push(x);
        }
        if r == p {
            amb = (0..cr.len()).filter(|e| self.periodic[*e] && self.dims[*e] == 1).collect();
        }
        (d, amb)
    }

    /// Resolves an ambiguous direction: the k-th such message of a run gets -1 when k is even.
    fn resolve(&self, mut d: Dir, amb: &[usize], self_msg: bool, k: usize, first_sign: i64) -> Dir {
        if amb.is_empty() {
            return d;
        }
        let sign = if k % 2 == 0 { first_sign } else { -first_sign };
        if self_msg {
            let e = amb[(k / 2) % amb.len()];
            d[e] = sign;
        } else {
            for e in amb {
                d[*e] = sign;
            }
        }
        d
    }

    fn normalise(&self, items: &[Item], r: u32) -> Result<Vec<Tok>> {
        let mut out = Vec::with_capacity(items.len());
        let mut run: Vec<TraceAction> = Vec::new();
        let flush = |run: &mut Vec<TraceAction>, out: &mut Vec<Tok>| {
            out.extend(self.normalise_run(std::mem::take(run), r));
        };
        for it in items {
            match it {
                Item::Action(a) if is_message(a) || is_waitish(a) || matches!(a, TraceAction::Compute { .. }) => run.push(a.clone()),
                Item::Action(a) => {
                    flush(&mut run, &mut out);
                    if let Some(c) = comm_of(a) {
                        if c != 0 && !matches!(a, TraceAction::CommDef { .. }) {
                            // Checked identical to the world by the caller.
                        }
                    }
                    out.push(Tok::A { a: a.clone(), to: None, from: None, origin: r });
                }
                Item::Loop(k, body) => {
                    flush(&mut run, &mut out);
                    out.push(Tok::L(*k, self.normalise(body, r)?));
                }
            }
        }
        flush(&mut run, &mut out);
        Ok(out)
    }

    fn normalise_run(&self, run: Vec<TraceAction>, r: u32) -> Vec<Tok> {
        // Sends first: their ambiguous directions by order, then receives opposite to the send
        // with the same tag to the same peer.
        let mut sent: HashMap<(u32, i32), Dir> = HashMap::new();
        let mut send_k: HashMap<u32, usize> = HashMap::new();
        let mut recv_k: HashMap<u32, usize> = HashMap::new();
        let mut to_dirs: Vec<Option<Dir>> = vec![None; run.len()];
        for (i, a) in run.iter().enumerate() {
            let (to, tag) = match a {
                TraceAction::Send { to, tag, .. } | TraceAction::Isend { to, tag, .. } => (*to, *tag),
                TraceAction::Sendrecv { to, send_tag, .. } => (*to, *send_tag),
                _ => continue,
            };
            let (d, amb) = self.delta(r, to);
            let k = send_k.entry(to).or_default();
            let d = self.resolve(d, &amb, to == r, *k, -1);
            if !amb.is_empty() {
                *k += 1;
                sent.insert((to, tag), d.clone());
            }
            to_dirs[i] = Some(d);
        }
        let mut out = Vec::with_capacity(run.len());
        for (i, a) in run.into_iter().enumerate() {
            let from = match &a {
                TraceAction::Recv { from: Peer::Rank(p), tag, .. } | TraceAction::Irecv { from: Peer::Rank(p), tag, .. } => Some((*p, *tag)),
                TraceAction::Arecv { from: p, tag, .. } => Some((*p, *tag)),
                TraceAction::Sendrecv { from: Peer::Rank(p), recv_tag, .. } => Some((*p, *recv_tag)),
                _ => None,
            };
            let from_dir = from.map(|(p, tag)| {
                let (d, amb) = self.delta(r, p);
                if amb.is_empty() {
                    return d;
                }
                if let Tag::Value(t) = tag {
                    if let Some(s) = sent.get(&(p, t)) {
                        return s.iter().map(|x| -x).collect();
                    }
                }
                if let (TraceAction::Sendrecv { to, .. }, Some(td)) = (&a, &to_dirs[i]) {
                    if *to == p {
                        return td.iter().map(|x| -x).collect();
                    }
                }
                let k = recv_k.entry(p).or_default();
                let d = self.resolve(d, &amb, p == r, *k, 1);
                *k += 1;
                d
            });
            out.push(Tok::A { a, to: to_dirs[i].take(), from: from_dir, origin: r });
        }
        out
    }

    /// The trace of a position class: a traced rank of that class, or a merge of the first and
    /// last positions of a dimension the trace has no inner rank of.
    fn template(&mut self, s: &[Class]) -> Result<Rc<Vec<Tok>>> {
        if let Some(t) = self.templates.get(s) {
            return Ok(t.clone());
        }
        let k = self.ctx.k;
        let classes: Vec<Vec<Class>> = (0..k)
            .map(|r| {
                let c = self.coords(r);
                (0..self.dims.len()).map(|e| class_of(c[e], self.dims[e], self.periodic[e])).collect()
            })
            .collect();
        let t = if let Some(r) = classes.iter().position(|c| c == s) {
            self.norm[r].clone()
        } else {
            // The first dimension whose class the trace lacks.
            let e = (0..s.len()).find(|e| !classes.iter().any(|c| c[*e] == s[*e])).expect("some class is missing");
            let old = self.dims[e];
            match s[e] {
                Class::Inner if old == 2 => {
                    let mut a = s.to_vec();
                    a[e] = Class::First;
                    let mut b = s.to_vec();
                    b[e] = Class::Last;
                    let ta = self.template(&a)?;
                    let tb = self.template(&b)?;
                    // Folding is compression: traces whose loops were folded differently (data-
                    // dependent bursts) are merged unfolded.
                    let merged = merge(&ta, &tb, 1 << 32).or_else(|first| match (unfold(&ta, UNFOLD_LIMIT), unfold(&tb, UNFOLD_LIMIT)) {
                        (Some(ua), Some(ub)) => merge(&ua, &ub, 1 << 32),
                        _ => Err(first),
                    });
                    Rc::new(merged.map_err(|m| anyhow::anyhow!("cannot synthesise inner ranks of dimension {e} from the first and last ranks' traces: {m}"))?)
                }
                Class::Only => {
                    // The grid shrinks to one rank along e: the first rank without its messages along e.
                    let mut a = s.to_vec();
                    a[e] = if self.periodic[e] { Class::Wrap } else { Class::First };
                    let ta = self.template(&a)?;
                    Rc::new(drop_dim(&ta, e))
                }
                _ => bail!(
                    "the trace has {old} rank{} along dimension {e}: it shows no {} rank of it, so its messages along it are not known; trace with more ranks",
                    if old == 1 { "" } else { "s" },
                    match s[e] {
                        Class::First => "first",
                        Class::Last => "last",
                        _ => "inner",
                    }
                ),
            }
        };
        self.templates.insert(s.to_vec(), t.clone());
        Ok(t)
    }

    pub fn emit_all(&mut self, emit: &mut dyn FnMut(u32, Vec<Item>) -> Result<()>) -> Result<()> {
        let nd: Vec<i64> = self.new_dims.iter().map(|x| *x as i64).collect();
        let n = self.ctx.n;
        let uniform = self.ctx.k as f64 / n as f64;
        let k = self.ctx.k;
        let origin_of = move |j: u32| -> u32 { j % k.max(1) };
        // The traced ranks' environments, built once for every rank that reads them.
        let mut envs: HashMap<u32, HashMap<String, f64>> = HashMap::new();
        for r in 0..n {
            let c = cart_coords(r as i64, &nd);
            let s: Vec<Class> = (0..nd.len()).map(|e| class_of(c[e], self.new_dims[e], self.periodic[e])).collect();
            let phase = self.group.map(|g| {
                let b = r / g * g;
                let members = (b..(b + g).min(n))
                    .map(|q| {
                        let cq = cart_coords(q as i64, &nd);
                        (0..nd.len()).map(|e| class_of(cq[e], self.new_dims[e], self.periodic[e])).collect()
                    })
                    .collect();
                (r % g, members)
            });
            // A traced rank of the class: the one at the same place where there is one, and for
            // the others one that is not rank 0 (which programs single out: in a ring every
            // place has the same class, and rank 0 alone starts the token).
            let same = |q: u32| self.old_class(q) == s;
            let traced = match self.group {
                Some(_) => None,
                None if r < k && same(r) => Some(r),
                None if r != 0 => (1..k).find(|&q| same(q)),
                None => None,
            };
            let t = match traced {
                Some(q) => self.norm[q as usize].clone(),
                None => self.template_for(&s, phase)?,
            };
            let new_env = self.ctx.env(r, n, Some(&self.new_dims));
            let mut dropped: HashSet<u64> = HashSet::new();
            let items = self.instantiate(&t, r, &c, &new_env, &mut envs, &mut dropped, uniform, &origin_of)?;
            emit(r, items)?;
        }
        Ok(())
    }

    fn target(&self, c: &[i64], d: &Dir) -> Option<u32> {
        let nd: Vec<i64> = self.new_dims.iter().map(|x| *x as i64).collect();
        let mut cc = c.to_vec();
        for e in 0..cc.len() {
            cc[e] += d[e];
            if cc[e] < 0 || cc[e] >= nd[e] {
                if !self.periodic[e] {
                    return None;
                }
                cc[e] = cc[e].rem_euclid(nd[e]);
            }
        }
        Some(cart_rank(&cc, &nd) as u32)
    }

    /// Halo messages follow the faces of the decomposition: the product of the old over the new
    /// number of ranks along every dimension the message does not cross.
    fn face_factor(&self, d: &Dir) -> f64 {
        match self.ctx.scaler.mode {
            Mode::Weak => 1.0,
            _ => (0..d.len()).filter(|e| d[*e] == 0).map(|e| self.dims[e] as f64 / self.new_dims[e] as f64).product(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn instantiate(
        &self,
        toks: &[Tok],
        r: u32,
        c: &[i64],
        new_env: &HashMap<String, f64>,
        envs: &mut HashMap<u32, HashMap<String, f64>>,
        dropped: &mut HashSet<u64>,
        uniform: f64,
        origin_of: &dyn Fn(u32) -> u32,
    ) -> Result<Vec<Item>> {
        let mut out = Vec::with_capacity(toks.len());
        for t in toks {
            match t {
                Tok::L(k, body) => {
                    let b = self.instantiate(body, r, c, new_env, envs, dropped, uniform, origin_of)?;
                    if !b.is_empty() {
                        out.push(Item::Loop(*k, b));
                    }
                }
                Tok::A { a, to, from, origin } => {
                    let old_env = &*envs.entry(*origin).or_insert_with(|| self.ctx.env(*origin, self.ctx.k, Some(&self.dims)));
                    let to_p = to.as_ref().map(|d| self.target(c, d));
                    let from_p = from.as_ref().map(|d| self.target(c, d));
                    let dir = to.as_ref().or(from.as_ref());
                    let ff = dir.map(|d| self.face_factor(d)).unwrap_or(1.0);
                    let old_peer = peer_of(a);
                    let new_peer = to_p.flatten().or(from_p.flatten());
                    let b = match a {
                        TraceAction::Send { .. } | TraceAction::Isend { .. } => match to_p.flatten() {
                            Some(p) => Some(with_peer(a, p)),
                            None => {
                                if let Some(q) = req_of(a) {
                                    dropped.insert(q);
                                }
                                None
                            }
                        },
                        TraceAction::Recv { from: Peer::Rank(_), .. } | TraceAction::Irecv { from: Peer::Rank(_), .. } | TraceAction::Arecv { .. } => match from_p.flatten() {
                            Some(p) => Some(with_peer(a, p)),
                            None => {
                                if let Some(q) = req_of(a) {
                                    dropped.insert(q);
                                }
                                None
                            }
                        },
                        TraceAction::Sendrecv { send_bytes, send_tag, recv_bytes, recv_tag, comm, from: f0, .. } => match (to_p.flatten(), from_p.flatten()) {
                            (Some(tp), Some(fp)) => Some(TraceAction::Sendrecv {
                                to: tp,
                                send_bytes: *send_bytes,
                                send_tag: *send_tag,
                                from: if matches!(f0, Peer::Any) { Peer::Any } else { Peer::Rank(fp) },
                                recv_bytes: *recv_bytes,
                                recv_tag: *recv_tag,
                                comm: *comm,
                            }),
                            (Some(tp), None) if matches!(f0, Peer::Any) => Some(TraceAction::Sendrecv {
                                to: tp,
                                send_bytes: *send_bytes,
                                send_tag: *send_tag,
                                from: Peer::Any,
                                recv_bytes: *recv_bytes,
                                recv_tag: *recv_tag,
                                comm: *comm,
                            }),
                            (Some(tp), None) => Some(TraceAction::Send { to: tp, bytes: *send_bytes, tag: *send_tag, comm: *comm, buffered: false }),
                            (None, Some(fp)) => Some(TraceAction::Recv {
                                from: Peer::Rank(fp),
                                bytes: *recv_bytes,
                                tag: match recv_tag {
                                    Tag::Value(t) => Tag::Value(*t),
                                    Tag::Any => Tag::Any,
                                },
                                comm: *comm,
                            }),
                            (None, None) => None,
                        },
                        TraceAction::Wait { req } => (!dropped.contains(req)).then(|| a.clone()),
                        TraceAction::Test { req } | TraceAction::Cancel { req } => (!dropped.contains(req)).then(|| a.clone()),
                        TraceAction::Waitall { reqs } => {
                            if reqs.is_empty() {
                                Some(a.clone())
                            } else {
                                let kept: Vec<u64> = reqs.iter().copied().filter(|q| !dropped.contains(q)).collect();
                                (!kept.is_empty()).then_some(TraceAction::Waitall { reqs: kept })
                            }
                        }
                        _ => {
                            if let Some(b) = common(self.ctx, a, *origin, old_env, new_env, uniform, origin_of)? {
                                out.push(Item::Action(b));
                            }
                            continue;
                        }
                    };
                    if let Some(b) = b {
                        let b = if is_message(&b) { resize(self.ctx, &b, old_env, new_env, (old_peer, new_peer), ff) } else { b };
                        out.push(Item::Action(b));
                    }
                }
            }
        }
        Ok(out)
    }
}

fn comm_of(a: &TraceAction) -> Option<u32> {
    match a {
        TraceAction::Send { comm, .. }
        | TraceAction::Recv { comm, .. }
        | TraceAction::Isend { comm, .. }
        | TraceAction::Irecv { comm, .. }
        | TraceAction::Sendrecv { comm, .. }
        | TraceAction::Barrier { comm }
        | TraceAction::Bcast { comm, .. }
        | TraceAction::Reduce { comm, .. }
        | TraceAction::Allreduce { comm, .. } => Some(*comm),
        _ => None,
    }
}

/// Most actions a template is unfolded to when two ranks' loops do not line up.
const UNFOLD_LIMIT: usize = 4_000_000;

/// The template with its loops unfolded, when it has at most `limit` actions.
fn unfold(toks: &[Tok], limit: usize) -> Option<Vec<Tok>> {
    let mut out = Vec::new();
    fn go(toks: &[Tok], limit: usize, out: &mut Vec<Tok>) -> bool {
        for t in toks {
            match t {
                Tok::L(k, b) => {
                    for _ in 0..*k {
                        if !go(b, limit, out) {
                            return false;
                        }
                    }
                }
                a => {
                    if out.len() >= limit {
                        return false;
                    }
                    out.push(a.clone());
                }
            }
        }
        true
    }
    go(toks, limit, &mut out).then_some(out)
}

/// A template without the messages along dimension e.
fn drop_dim(toks: &[Tok], e: usize) -> Vec<Tok> {
    let mut dropped: HashSet<u64> = HashSet::new();
    let mut out = Vec::new();
    fn go(toks: &[Tok], e: usize, dropped: &mut HashSet<u64>, out: &mut Vec<Tok>) {
        for t in toks {
            match t {
                Tok::L(k, b) => {
                    let mut inner = Vec::new();
                    go(b, e, dropped, &mut inner);
                    out.push(Tok::L(*k, inner));
                }
                Tok::A { a, to, from, origin } => {
                    let along = |d: &Option<Dir>| d.as_ref().map(|d| d[e] != 0).unwrap_or(false);
                    if along(to) || along(from) {
                        if let Some(q) = req_of(a) {
                            dropped.insert(q);
                        }
                        continue;
                    }
                    let mut a = a.clone();
                    if let TraceAction::Waitall { reqs } = &mut a {
                        reqs.retain(|q| !dropped.contains(q));
                    }
                    out.push(Tok::A { a, to: to.clone(), from: from.clone(), origin: *origin });
                }
            }
        }
    }
    go(toks, e, &mut dropped, &mut out);
    out
}

enum Unit<'t> {
    Run(Vec<&'t Tok>),
    Anchor(&'t Tok),
}

fn units(toks: &[Tok]) -> Vec<Unit<'_>> {
    let mut out = Vec::new();
    let mut run: Vec<&Tok> = Vec::new();
    for t in toks {
        let in_run = matches!(t, Tok::A { a, .. } if is_message(a) || is_waitish(a) || matches!(a, TraceAction::Compute { .. }));
        if in_run {
            run.push(t);
        } else {
            if !run.is_empty() {
                out.push(Unit::Run(std::mem::take(&mut run)));
            }
            out.push(Unit::Anchor(t));
        }
    }
    if !run.is_empty() {
        out.push(Unit::Run(run));
    }
    out
}

/// Merges the traces of two ranks of different classes (the first and the last along a
/// dimension) into the trace of a rank that has both their neighbours.
fn merge(a: &[Tok], b: &[Tok], off: u64) -> Result<Vec<Tok>, String> {
    let (ua, ub) = (units(a), units(b));
    let mut out = Vec::new();
    let mut reqmap: HashMap<u64, u64> = HashMap::new();
    let (mut i, mut j) = (0, 0);
    loop {
        match (ua.get(i), ub.get(j)) {
            (None, None) => break,
            (Some(Unit::Run(ra)), Some(Unit::Run(rb))) => {
                out.extend(merge_run(ra, rb, off, &mut reqmap));
                i += 1;
                j += 1;
            }
            (Some(Unit::Run(ra)), _) => {
                out.extend(ra.iter().map(|t| (*t).clone()));
                i += 1;
            }
            (_, Some(Unit::Run(rb))) => {
                out.extend(merge_run(&[], rb, off, &mut reqmap));
                j += 1;
            }
            (Some(Unit::Anchor(x)), Some(Unit::Anchor(y))) => {
                match (x, y) {
                    (Tok::L(k1, b1), Tok::L(k2, b2)) if k1 == k2 => out.push(Tok::L(*k1, merge(b1, b2, off)?)),
                    (x, y) if shape(x) == shape(y) => out.push((*x).clone()),
                    (x, y) => return Err(format!("`{}` against `{}`", shape(x), shape(y))),
                }
                i += 1;
                j += 1;
            }
            (Some(Unit::Anchor(x)), None) => return Err(format!("`{}` has no counterpart", shape(x))),
            (None, Some(Unit::Anchor(y))) => return Err(format!("`{}` has no counterpart", shape(y))),
        }
    }
    Ok(out)
}

fn merge_run(ra: &[&Tok], rb: &[&Tok], off: u64, reqmap: &mut HashMap<u64, u64>) -> Vec<Tok> {
    let mut out: Vec<Tok> = ra.iter().map(|t| (*t).clone()).collect();
    let mut fused: HashSet<usize> = HashSet::new();
    let msgs_a: Vec<usize> = out.iter().enumerate().filter(|(_, t)| matches!(t, Tok::A { a, .. } if is_message(a))).map(|(i, _)| i).collect();
    let mut nb = 0usize;
    for t in rb {
        let Tok::A { a, to, from, origin } = t else { continue };
        if matches!(a, TraceAction::Compute { .. }) {
            // The first rank's compute stands for both.
            continue;
        }
        if is_message(a) {
            let ordinal = nb;
            nb += 1;
            if let Some(&pos) = msgs_a.get(ordinal) {
                if shape(&out[pos]) == shape(t) {
                    if let (Some(qb), Tok::A { a: aa, .. }) = (req_of(a), &out[pos]) {
                        if let Some(qa) = req_of(aa) {
                            reqmap.insert(qb, qa);
                        }
                    }
                    continue;
                }
                if !fused.contains(&pos) {
                    if let Some(f) = fuse(&out[pos], t) {
                        out[pos] = f;
                        fused.insert(pos);
                        continue;
                    }
                }
            }
            let mut a2 = a.clone();
            set_req(&mut a2, &|q| q + off);
            let at = out.iter().position(|x| matches!(x, Tok::A { a, .. } if is_waitish(a))).unwrap_or(out.len());
            out.insert(at, Tok::A { a: a2, to: to.clone(), from: from.clone(), origin: *origin });
            continue;
        }
        // Waits: the requests of the second rank renamed, merged with the first rank's.
        let mut a2 = a.clone();
        let map = |q: u64| reqmap.get(&q).copied().unwrap_or(q + off);
        set_req(&mut a2, &map);
        match &a2 {
            TraceAction::Waitall { reqs } => {
                if let Some(Tok::A { a: TraceAction::Waitall { reqs: ra2 }, .. }) = out.iter_mut().rev().find(|x| matches!(x, Tok::A { a: TraceAction::Waitall { .. }, .. })) {
                    if !ra2.is_empty() {
                        if reqs.is_empty() {
                            ra2.clear();
                        } else {
                            for q in reqs {
                                if !ra2.contains(q) {
                                    ra2.push(*q);
                                }
                            }
                        }
                    }
                    continue;
                }
                out.push(Tok::A { a: a2, to: None, from: None, origin: *origin });
            }
            TraceAction::Wait { req } | TraceAction::Test { req } | TraceAction::Cancel { req } => {
                let dup = out.iter().any(|x| {
                    matches!(x, Tok::A { a: TraceAction::Wait { req: r2 } | TraceAction::Test { req: r2 } | TraceAction::Cancel { req: r2 }, .. } if r2 == req)
                });
                if !dup {
                    out.push(Tok::A { a: a2, to: None, from: None, origin: *origin });
                }
            }
            _ => out.push(Tok::A { a: a2, to: None, from: None, origin: *origin }),
        }
    }
    out
}

/// A blocking send in one rank's trace and the matching receive in the other's (opposite
/// directions, same tag): the two halves of one MPI_Sendrecv.
fn fuse(x: &Tok, y: &Tok) -> Option<Tok> {
    let (Tok::A { a: ax, to: tx, from: fx, origin }, Tok::A { a: ay, to: ty, from: fy, .. }) = (x, y) else { return None };
    let (send, sdir, recv, rdir) = match (ax, ay) {
        (TraceAction::Send { .. }, TraceAction::Recv { .. }) => (ax, tx.clone()?, ay, fy.clone()?),
        (TraceAction::Recv { .. }, TraceAction::Send { .. }) => (ay, ty.clone()?, ax, fx.clone()?),
        _ => return None,
    };
    let (TraceAction::Send { to, bytes, tag, comm, buffered: false }, TraceAction::Recv { from, bytes: rb, tag: rt, comm: rc }) = (send, recv) else { return None };
    if comm != rc || Tag::Value(*tag) != *rt || sdir.iter().zip(&rdir).any(|(s, r)| *s != -*r) {
        return None;
    }
    Some(Tok::A {
        a: TraceAction::Sendrecv { to: *to, send_bytes: *bytes, send_tag: *tag, from: *from, recv_bytes: *rb, recv_tag: *rt, comm: *comm },
        to: Some(sdir),
        from: Some(rdir),
        origin: *origin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::analysis::ProgramModel;

    /// A bucket sort's exchange from 2 ranks to 8: each rank still sends what it holds (weak
    /// and program scaling: 800 bytes in all, spread over 8 peers), a quarter of it in strong.
    #[test]
    fn alltoallv_lists_spread_what_a_rank_holds_over_the_new_peers() {
        let model = ProgramModel::default();
        let a = TraceAction::Alltoallv { send: vec![300, 500], recv: vec![400, 400], comm: 0 };
        let origin_of = |j: u32| j * 2 / 8;
        let env = HashMap::new();
        for (mode, total) in [(Mode::Program, 800), (Mode::Weak, 800), (Mode::Strong, 200)] {
            let scaler = Scaler::new(&model, mode, Vec::new());
            let ctx = Ctx { k: 2, n: 8, scaler: &scaler, base_env: HashMap::new() };
            let Some(TraceAction::Alltoallv { send, recv, .. }) = common(&ctx, &a, 0, &env, &env, 0.25, &origin_of).unwrap() else { panic!("an alltoallv") };
            assert_eq!((send.len(), recv.len()), (8, 8), "{mode:?}");
            assert_eq!((send.iter().sum::<u64>(), recv.iter().sum::<u64>()), (total, total), "{mode:?}: {send:?} {recv:?}");
            // Peers 0-3 take after the first traced peer, 4-7 after the second.
            assert!(send[0] < send[7], "{send:?}");
        }
    }

    /// A communicator of the world in reverse order stays the world reversed; any other order
    /// is refused.
    #[test]
    fn a_reversed_world_communicator_is_reversed_at_the_new_size() {
        let model = ProgramModel::default();
        let scaler = Scaler::new(&model, Mode::Program, Vec::new());
        let ctx = Ctx { k: 3, n: 5, scaler: &scaler, base_env: HashMap::new() };
        let env = HashMap::new();
        let id = |j: u32| j;
        let def = |ranks: Vec<u32>| common(&ctx, &TraceAction::CommDef { id: 2, ranks: ranks.into() }, 0, &env, &env, 1.0, &id);
        let Some(TraceAction::CommDef { ranks, .. }) = def(vec![2, 1, 0]).unwrap() else { panic!("a communicator") };
        assert_eq!(ranks.to_vec(), vec![4, 3, 2, 1, 0]);
        assert!(def(vec![1, 2, 0]).is_err());
    }

    /// Consecutive ranks that tile the world are groups at the new size too (rank 5 of 8 in
    /// groups of 2: 4-5); consecutive ranks that do not (0-2 of 4, the ranks up to size / 2) are
    /// refused, not taken for groups of 3.
    #[test]
    fn only_communicators_that_tile_the_world_are_scaled_as_groups() {
        let model = ProgramModel::default();
        let scaler = Scaler::new(&model, Mode::Program, Vec::new());
        let ctx = Ctx { k: 4, n: 8, scaler: &scaler, base_env: HashMap::new() };
        let new = HashMap::from([("rank".to_string(), 5.0)]);
        let id = |j: u32| j;
        let def = |ranks: Vec<u32>| common(&ctx, &TraceAction::CommDef { id: 2, ranks: ranks.into() }, 0, &new, &new, 1.0, &id);
        let Some(TraceAction::CommDef { ranks, .. }) = def(vec![2, 3]).unwrap() else { panic!("a communicator") };
        assert_eq!(ranks.to_vec(), vec![4, 5]);
        assert!(def(vec![0, 1, 2]).is_err());
    }

    /// With the static path's evaluation at both sizes, ranks 0-2 of 4 (the first half and one)
    /// become what the program makes at 8 ranks for the new rank (0-4), and the first half
    /// reversed (1, 0) becomes 3, 2, 1, 0; a new rank outside the evaluated communicator, or an
    /// origin whose evaluation did not define the traced members, is refused.
    #[test]
    fn other_communicators_take_their_members_from_the_evaluation() {
        let model = ProgramModel::default();
        let mut scaler = Scaler::new(&model, Mode::Program, Vec::new());
        let half_and_one = |n: u32| (0..=n / 2).collect::<Vec<u32>>();
        let reversed = |n: u32| (0..n / 2).rev().collect::<Vec<u32>>();
        let comms = |n: u32| -> Vec<Vec<RankList>> {
            (0..n).map(|r| [half_and_one(n), reversed(n)].into_iter().filter(|c| c.contains(&r)).map(RankList::from).collect()).collect()
        };
        scaler.evaluated.rank_comms = (comms(4), comms(8));
        let ctx = Ctx { k: 4, n: 8, scaler: &scaler, base_env: HashMap::new() };
        let id = |j: u32| j;
        let def = |origin: u32, rank: u32, ranks: Vec<u32>| {
            let new = HashMap::from([("rank".to_string(), rank as f64)]);
            common(&ctx, &TraceAction::CommDef { id: 3, ranks: ranks.into() }, origin, &new, &new, 1.0, &id)
        };
        let Some(TraceAction::CommDef { ranks, .. }) = def(1, 3, vec![0, 1, 2]).unwrap() else { panic!("a communicator") };
        assert_eq!(ranks.to_vec(), vec![0, 1, 2, 3, 4]);
        let Some(TraceAction::CommDef { ranks, .. }) = def(1, 3, vec![1, 0]).unwrap() else { panic!("a communicator") };
        assert_eq!(ranks.to_vec(), vec![3, 2, 1, 0]);
        assert_eq!(scaler.stats.borrow().comms_evaluated, 2);
        // Rank 4 is in the first half and one at 8 ranks but not in the reversed half: its own
        // list has one communicator where rank 1's had two.
        assert!(def(1, 4, vec![0, 1, 2]).is_err());
        assert!(def(2, 4, vec![0, 1, 2]).is_ok());
        // Rank 2 of 4 defined no reversed half.
        assert!(def(2, 4, vec![1, 0]).is_err());
    }
}
