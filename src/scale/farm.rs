//! Self-scheduling task farms: a master that deals tasks to whichever worker answers first
//! (a receive from any source, answered with the next task or a stop message to its sender),
//! workers that loop on "receive a task, compute, send the result" until told to stop.
//!
//! The number of tasks is the program's (the master's receives), not a worker's: at N' ranks
//! the same tasks are dealt to N' - 1 workers. Workers of equal speed answer in the order they
//! were served, so task t goes to worker t mod W' (W' workers; the first W' tasks with the
//! initial sends) and the master's i-th receive is answered to worker i mod W'. Each task keeps
//! the compute it had in the trace (global task order: the traced workers' tasks in turn).
//! Cloning a traced worker instead gave every new worker all of its tasks (a farm of 60 tasks
//! from 2 to 8 ranks: +600%).

use std::collections::HashMap;

use anyhow::Result;

use crate::model::trace::{Peer, TraceAction};

use super::items::{walk, Item};
use super::rewrite::{common, proportional, Ctx};

/// Actions of a trace unrolled at most: a longer trace is scaled as a master-worker without
/// dealing its tasks.
const UNFOLD_MAX: u64 = 4_000_000;

/// One traced rank's actions split around its task messages.
struct Split {
    /// Before the first task message, and after the last one.
    pre: Vec<TraceAction>,
    post: Vec<TraceAction>,
    /// The master: its initial sends, each with the compute after it; a worker: none.
    initial: Vec<Vec<TraceAction>>,
    /// One per task (the master: per receive, with its answer; a worker: a receive, the
    /// compute, the result's send).
    units: Vec<Vec<TraceAction>>,
    /// A worker's last receive (the stop message) with the compute after it.
    stop: Vec<TraceAction>,
}

/// A farm found in the traces of K ranks.
pub struct Farm {
    root: u32,
    master: Split,
    /// Per traced worker (rank order, the master left out).
    workers: Vec<(u32, Split)>,
}

fn unrolled(items: &[Item]) -> Option<Vec<TraceAction>> {
    let mut n = 0u64;
    walk(items, 1, &mut |_, m| n = n.saturating_add(m));
    (n <= UNFOLD_MAX).then(|| crate::trace::fold::unfold(items))
}

fn is_p2p(a: &TraceAction) -> bool {
    matches!(a, TraceAction::Send { .. } | TraceAction::Recv { .. } | TraceAction::Arecv { .. } | TraceAction::Isend { .. } | TraceAction::Irecv { .. } | TraceAction::Sendrecv { .. })
}

fn send_to(a: &TraceAction) -> Option<u32> {
    match a {
        TraceAction::Send { to, buffered: false, .. } => Some(*to),
        _ => None,
    }
}

/// Only compute between the task messages: anything else (a collective, a wait) would need the
/// workers in step.
fn quiet(a: &TraceAction) -> bool {
    matches!(a, TraceAction::Compute { .. })
}

impl Farm {
    /// The farm in the traces of a master-worker run whose master is `root`, if it is one.
    pub fn detect(traces: &[Vec<Item>], root: u32) -> Option<Farm> {
        let k = traces.len() as u32;
        if k < 2 || root >= k {
            return None;
        }
        let master = Self::split_master(&unrolled(&traces[root as usize])?, root, k)?;
        let mut workers = Vec::new();
        for w in (0..k).filter(|w| *w != root) {
            workers.push((w, Self::split_worker(&unrolled(&traces[w as usize])?, root)?));
        }
        // Every receive of the master is a worker's result: as many as the workers' tasks.
        let tasks: usize = workers.iter().map(|(_, s)| s.units.len()).sum();
        (tasks == master.units.len() && tasks > 0).then_some(Farm { root, master, workers })
    }

    fn split_master(a: &[TraceAction], root: u32, k: u32) -> Option<Split> {
        let first = a.iter().position(is_p2p)?;
        let last = a.iter().rposition(is_p2p)?;
        let any = |x: &TraceAction| matches!(x, TraceAction::Recv { from: Peer::Any, .. });
        let mut initial: Vec<Vec<TraceAction>> = Vec::new();
        let mut units: Vec<Vec<TraceAction>> = Vec::new();
        for x in &a[first..=last] {
            if any(x) {
                units.push(vec![x.clone()]);
            } else if let Some(to) = send_to(x) {
                if to == root || to >= k {
                    return None;
                }
                match units.last_mut() {
                    // One answer per receive.
                    Some(u) if u.iter().any(|y| send_to(y).is_some()) => return None,
                    Some(u) => u.push(x.clone()),
                    None => initial.push(vec![x.clone()]),
                }
            } else if quiet(x) {
                match (units.last_mut(), initial.last_mut()) {
                    (Some(u), _) => u.push(x.clone()),
                    (None, Some(i)) => i.push(x.clone()),
                    (None, None) => return None,
                }
            } else {
                return None;
            }
        }
        // The initial sends serve every worker once; every receive is answered.
        if initial.len() as u32 != k - 1 || units.iter().any(|u| !u.iter().any(|y| send_to(y).is_some())) {
            return None;
        }
        Some(Split { pre: a[..first].to_vec(), post: a[last + 1..].to_vec(), initial, units, stop: Vec::new() })
    }

    fn split_worker(a: &[TraceAction], root: u32) -> Option<Split> {
        let from_root = |x: &TraceAction| matches!(x, TraceAction::Recv { from: Peer::Rank(p), .. } if *p == root);
        let first = a.iter().position(is_p2p)?;
        let last = a.iter().rposition(|x| from_root(x))?;
        if !from_root(&a[first]) || a[last + 1..].iter().any(is_p2p) {
            return None;
        }
        let mut units: Vec<Vec<TraceAction>> = Vec::new();
        for x in &a[first..last] {
            if from_root(x) {
                units.push(vec![x.clone()]);
            } else if send_to(x) == Some(root) || quiet(x) {
                units.last_mut()?.push(x.clone());
            } else {
                return None;
            }
        }
        // A task is answered with one result.
        if units.iter().any(|u| u.iter().filter(|y| send_to(y).is_some()).count() != 1) {
            return None;
        }
        let stop: Vec<TraceAction> = a[last..].to_vec();
        Some(Split { pre: a[..first].to_vec(), post: Vec::new(), initial: Vec::new(), units, stop })
    }

    /// Tasks in the order they were dealt at K ranks: the traced workers' tasks in turn.
    fn order(&self) -> Vec<(usize, usize)> {
        let most = self.workers.iter().map(|(_, s)| s.units.len()).max().unwrap_or(0);
        let mut out = Vec::new();
        for t in 0..most {
            for (w, (_, s)) in self.workers.iter().enumerate() {
                if t < s.units.len() {
                    out.push((w, t));
                }
            }
        }
        out
    }

    /// Writes the N'-rank traces through `emit` (the master first), with a note for the report.
    pub fn emit(&self, ctx: &Ctx, emit: &mut dyn FnMut(u32, Vec<Item>) -> Result<()>, notes: &mut Vec<String>) -> Result<()> {
        let root = self.root;
        let old_workers: Vec<u32> = self.workers.iter().map(|(w, _)| *w).collect();
        let new_workers: Vec<u32> = (0..ctx.n).filter(|r| *r != root).collect();
        let nw = new_workers.len();
        if nw == 0 {
            anyhow::bail!("{} ranks leave the master no worker", ctx.n);
        }
        let origin_idx = |j: usize| proportional(j as u32, nw as u32, old_workers.len() as u32) as usize;
        let origin_of = |r: u32| -> u32 {
            match new_workers.iter().position(|w| *w == r) {
                Some(j) => old_workers[origin_idx(j)],
                None => root,
            }
        };
        let tasks = self.order();
        let t_all = tasks.len();
        // The task message and the stop message as traced (the first answer of the master's
        // that was a task, its last one that was a stop).
        let answer = |i: usize| self.master.units[i].iter().find(|y| send_to(y).is_some()).cloned().expect("an answer");
        let task_msg = if t_all > old_workers.len() { answer(0) } else { self.master.initial[0].iter().find(|y| send_to(y).is_some()).cloned().expect("a send") };
        let stop_msg = answer(t_all - 1);
        let to = |m: &TraceAction, p: u32| -> TraceAction {
            let mut m = m.clone();
            if let TraceAction::Send { to, .. } = &mut m {
                *to = p;
            }
            m
        };
        let uniform = 1.0;
        let around = |acts: &[TraceAction], origin: u32, r: u32, out: &mut crate::trace::fold::Folder| -> Result<()> {
            let old = ctx.env(origin, ctx.k, None);
            let new = ctx.env(r, ctx.n, None);
            for a in acts {
                if is_p2p(a) {
                    out.push(a.clone());
                } else if let Some(b) = common(ctx, a, origin, &old, &new, uniform, &origin_of)? {
                    out.push(b);
                }
            }
            Ok(())
        };
        // The master: its initial sends, then per receive the traced unit answered to the
        // worker whose turn it is.
        let mut m = crate::trace::fold::Folder::new();
        around(&self.master.pre, root, root, &mut m)?;
        for (j, p) in new_workers.iter().enumerate() {
            let init = &self.master.initial[j % self.master.initial.len()];
            for a in init {
                match send_to(a) {
                    Some(_) => m.push(to(if j < t_all { &task_msg } else { &stop_msg }, *p)),
                    None => m.push(a.clone()),
                }
            }
        }
        for i in 0..t_all {
            let stop = i + nw >= t_all;
            for a in &self.master.units[i] {
                match send_to(a) {
                    Some(_) => m.push(to(if stop { &stop_msg } else { &task_msg }, new_workers[i % nw])),
                    None => m.push(a.clone()),
                }
            }
        }
        around(&self.master.post, root, root, &mut m)?;
        emit(root, m.finish())?;
        // Worker j: tasks j, j + W', j + 2 W', ... with their traced compute.
        let mut by_worker: HashMap<usize, Vec<(usize, usize)>> = HashMap::new();
        for (t, x) in tasks.iter().enumerate() {
            by_worker.entry(t % nw).or_default().push(*x);
        }
        for (j, r) in new_workers.iter().enumerate() {
            let (origin, split) = &self.workers[origin_idx(j)];
            let mut w = crate::trace::fold::Folder::new();
            around(&split.pre, *origin, *r, &mut w)?;
            for (ow, t) in by_worker.get(&j).map(|v| v.as_slice()).unwrap_or(&[]) {
                for a in &self.workers[*ow].1.units[*t] {
                    w.push(a.clone());
                }
            }
            around(&split.stop, *origin, *r, &mut w)?;
            emit(*r, w.finish())?;
        }
        notes.push(format!(
            "a self-scheduling farm (the master answers each result, received from any worker, with the next task): its {t_all} tasks dealt to {nw} workers in turn, as workers of equal speed finish them (each task with its traced compute)"
        ));
        Ok(())
    }
}
