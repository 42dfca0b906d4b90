//! Folding of a rank's actions into loops as they are written, as the trace runtime folds what
//! it records (instrument/mpicast_rt.c): when the last `p` items repeat the `p` before them they
//! become `loop 2` ... `end`, and items equal to a loop's body just after it raise its count.
//! Loops are items themselves, so patterns nest (a halo exchange repeated 10 times, then a
//! reduction, 50 times over).
//!
//! Compute bursts compare equal when they agree to 9 significant digits (the same block costs
//! summed in a different order differ in the last bits); a loop keeps its first iteration's
//! values. The skeletons of static predictions are written through it, so that a 500-step loop
//! is one `loop 500` in every rank's file, which the simulation can then fold in time as well.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use crate::model::trace::{Compute, TraceAction};

use super::{format_action, TraceWriter};

/// Items further back than this are never folded with the newest.
const WINDOW: usize = 64;

/// An action or a loop of items.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Action(TraceAction),
    Loop(u64, Vec<Item>),
}

/// Folds actions as they come; [`Folder::finish`] gives the folded items.
#[derive(Default)]
pub struct Folder {
    items: Vec<Item>,
    /// A hash per item of `items`: equal items, equal hashes.
    hashes: Vec<u64>,
    /// Hash of each loop's body, per item (0 for actions).
    bodies: Vec<u64>,
}

/// Feeds what is formatted into a hasher, without a string in between.
struct HashWriter<'h>(&'h mut DefaultHasher);

impl std::fmt::Write for HashWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

/// Equal for actions whose trace lines are equal (a compute's seconds to 9 digits). Actions
/// other than computes hold integers only, and their lines show every field (they read back
/// as the same action): their fields are hashed (formatting each action's line was 6% of
/// jacobi2d's static evaluation at 1,024 ranks, hashing its Debug form 5%). A communicator's
/// members are hashed as their runs of consecutive ranks, as its line shows them: one of
/// 65,536 ranks is one run.
fn action_hash(a: &TraceAction) -> u64 {
    use std::fmt::Write;
    let mut h = DefaultHasher::new();
    match a {
        TraceAction::Compute { compute: Compute::Seconds(s) } => {
            "compute".hash(&mut h);
            let _ = write!(HashWriter(&mut h), "{s:.8e}");
        }
        TraceAction::Compute { .. } => format_action(a).hash(&mut h),
        TraceAction::CommDef { id, ranks } => {
            ("comm", *id, ranks).hash(&mut h);
        }
        _ => a.hash(&mut h),
    }
    h.finish()
}

/// An item's hash, and its body's for a loop (0 for an action).
fn item_hash(it: &Item) -> (u64, u64) {
    match it {
        Item::Action(a) => (action_hash(a), 0),
        Item::Loop(count, body) => {
            let hs: Vec<u64> = body.iter().map(|i| item_hash(i).0).collect();
            let b = body_hash(&hs);
            (loop_hash(*count, b), b)
        }
    }
}

fn body_hash(hashes: &[u64]) -> u64 {
    let mut h = DefaultHasher::new();
    hashes.hash(&mut h);
    h.finish()
}

fn loop_hash(count: u64, body: u64) -> u64 {
    let mut h = DefaultHasher::new();
    (count, body).hash(&mut h);
    h.finish()
}

impl Folder {
    pub fn new() -> Folder {
        Folder::default()
    }

    pub fn push(&mut self, a: TraceAction) {
        self.push_item(Item::Action(a));
    }

    /// Appends an action or a loop and folds what repeats.
    pub fn push_item(&mut self, it: Item) {
        let (h, b) = item_hash(&it);
        self.hashes.push(h);
        self.bodies.push(b);
        self.items.push(it);
        while self.fold_once() {}
    }

    /// Takes the items that no later fold can reach (all but the last 2 x WINDOW + 1).
    fn settled(&mut self) -> Vec<Item> {
        let keep = 2 * WINDOW + 1;
        if self.items.len() <= 2 * keep {
            return Vec::new();
        }
        let k = self.items.len() - keep;
        self.hashes.drain(..k);
        self.bodies.drain(..k);
        self.items.drain(..k).collect()
    }

    /// One fold at the end of the list, if any applies.
    fn fold_once(&mut self) -> bool {
        let n = self.items.len();
        // The last p items equal the body of the loop just before them: one more iteration.
        for p in 1..=WINDOW.min(n.saturating_sub(1)) {
            let at = n - 1 - p;
            if let Item::Loop(_, body) = &self.items[at] {
                if body.len() == p && self.bodies[at] == body_hash(&self.hashes[n - p..]) {
                    self.truncate(n - p);
                    let body_h = self.bodies[at];
                    if let Item::Loop(count, _) = &mut self.items[at] {
                        *count += 1;
                        self.hashes[at] = loop_hash(*count, body_h);
                    }
                    return true;
                }
            }
        }
        // The last p items equal the loop's body but for the last, a longer compute burst (a
        // last iteration whose burst runs on into what follows the loop): one more iteration,
        // then the rest of the burst. The short runs of a folded simulation then repeat the
        // loop, not a copy of its body after it (jacobi2d's last period of 10 iterations).
        for p in 2..=WINDOW.min(n.saturating_sub(1)) {
            let at = n - 1 - p;
            let Item::Loop(_, body) = &self.items[at] else { continue };
            if body.len() != p || self.bodies[at] != body_hash(&[&self.hashes[n - p..n - 1], &[item_hash(&body[p - 1]).0][..]].concat()) {
                continue;
            }
            let (Item::Action(TraceAction::Compute { compute: Compute::Seconds(c) }), Item::Action(TraceAction::Compute { compute: Compute::Seconds(last) })) = (&body[p - 1], &self.items[n - 1]) else {
                continue;
            };
            let rest = last - c;
            if rest <= 0.0 || !rest.is_finite() {
                continue;
            }
            self.truncate(n - p);
            let body_h = self.bodies[at];
            if let Item::Loop(count, _) = &mut self.items[at] {
                *count += 1;
                self.hashes[at] = loop_hash(*count, body_h);
            }
            let it = Item::Action(TraceAction::Compute { compute: Compute::Seconds(rest) });
            let (h, b) = item_hash(&it);
            self.items.push(it);
            self.hashes.push(h);
            self.bodies.push(b);
            return true;
        }
        // The last p items repeat the p before them: a loop of two.
        for p in 1..=WINDOW.min(n / 2) {
            if self.hashes[n - 1] != self.hashes[n - 1 - p] || self.hashes[n - p..] != self.hashes[n - 2 * p..n - p] {
                continue;
            }
            let body_h = body_hash(&self.hashes[n - p..]);
            let body: Vec<Item> = self.items.drain(n - p..).collect();
            self.truncate(n - 2 * p);
            self.items.push(Item::Loop(2, body));
            self.hashes.push(loop_hash(2, body_h));
            self.bodies.push(body_h);
            return true;
        }
        false
    }

    fn truncate(&mut self, len: usize) {
        self.items.truncate(len);
        self.hashes.truncate(len);
        self.bodies.truncate(len);
    }

    pub fn finish(self) -> Vec<Item> {
        self.items
    }
}

/// A [`TraceWriter`] that folds what it is given: actions, and loops the caller opens and closes
/// (a loop's body is folded within it, then the loop joins the items around it). What no later
/// fold can reach is written as it settles: memory holds a window, plus the open loops' bodies.
pub struct FoldingWriter {
    out: TraceWriter,
    /// The file's top level, then one (count, body) per open loop.
    root: Folder,
    open: Vec<(u64, Folder)>,
}

impl FoldingWriter {
    pub fn new(out: TraceWriter) -> FoldingWriter {
        FoldingWriter { out, root: Folder::new(), open: Vec::new() }
    }

    fn push_item(&mut self, it: Item) -> std::io::Result<()> {
        match self.open.last_mut() {
            Some((_, f)) => f.push_item(it),
            None => {
                self.root.push_item(it);
                let done = self.root.settled();
                write_items(&mut self.out, &done)?;
            }
        }
        Ok(())
    }

    pub fn action(&mut self, a: &TraceAction) -> std::io::Result<()> {
        self.push_item(Item::Action(a.clone()))
    }

    pub fn begin_loop(&mut self, count: u64) -> std::io::Result<()> {
        self.open.push((count, Folder::new()));
        Ok(())
    }

    pub fn end_loop(&mut self) -> std::io::Result<()> {
        let (count, body) = self.open.pop().ok_or_else(|| std::io::Error::other("end_loop without begin_loop"))?;
        let body = body.finish();
        if count == 0 || body.is_empty() {
            return Ok(());
        }
        self.push_item(Item::Loop(count, body))
    }

    /// Writes what is left and flushes the file; loops left open are an error.
    pub fn finish(mut self) -> std::io::Result<()> {
        if !self.open.is_empty() {
            return Err(std::io::Error::other(format!("{}: {} loop(s) left open", self.out.path().display(), self.open.len())));
        }
        let rest = std::mem::take(&mut self.root).finish();
        write_items(&mut self.out, &rest)?;
        self.out.finish()
    }
}

/// Writes items (loops as `loop N` ... `end`; a loop run no times, or with nothing in it, is
/// left out).
pub fn write_items(w: &mut TraceWriter, items: &[Item]) -> std::io::Result<()> {
    for it in items {
        match it {
            Item::Action(a) => w.action(a)?,
            Item::Loop(count, body) => {
                if body.is_empty() || *count == 0 {
                    continue;
                }
                w.begin_loop(*count)?;
                write_items(w, body)?;
                w.end_loop()?;
            }
        }
    }
    Ok(())
}

/// The actions the items stand for, loops unrolled.
pub fn unfold(items: &[Item]) -> Vec<TraceAction> {
    let mut out = Vec::new();
    for it in items {
        match it {
            Item::Action(a) => out.push(a.clone()),
            Item::Loop(count, body) => {
                let b = unfold(body);
                for _ in 0..*count {
                    out.extend(b.iter().cloned());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;


    fn compute(s: f64) -> TraceAction {
        TraceAction::Compute { compute: Compute::Seconds(s) }
    }

    fn barrier() -> TraceAction {
        TraceAction::Barrier { comm: crate::model::trace::COMM_WORLD }
    }

    fn fold(actions: &[TraceAction]) -> Vec<Item> {
        let mut f = Folder::new();
        for a in actions {
            f.push(a.clone());
        }
        f.finish()
    }

    #[test]
    fn repeats_nest_and_unfold_to_the_same_actions() {
        // 50 x (10 x (compute, barrier), compute): two levels.
        let mut actions = vec![compute(1.0)];
        for _ in 0..50 {
            for _ in 0..10 {
                actions.push(compute(2e-5));
                actions.push(barrier());
            }
            actions.push(compute(3e-4));
        }
        actions.push(barrier());
        let items = fold(&actions);
        let inner = Item::Loop(10, vec![Item::Action(compute(2e-5)), Item::Action(barrier())]);
        assert_eq!(
            items,
            vec![Item::Action(compute(1.0)), Item::Loop(50, vec![inner, Item::Action(compute(3e-4))]), Item::Action(barrier())]
        );
        assert_eq!(unfold(&items), actions);
    }

    /// A last iteration whose final burst runs on into what follows the loop (jacobi2d's last
    /// period: its residual reduction, then the checksum's compute) is one more iteration and
    /// the rest of the burst; the compute in all is the same.
    #[test]
    fn a_last_iteration_with_a_longer_final_burst_joins_the_loop() {
        let mut actions = Vec::new();
        for _ in 0..5 {
            actions.extend([barrier(), compute(1e-6)]);
        }
        actions.extend([barrier(), compute(4e-6), barrier()]);
        let items = fold(&actions);
        assert_eq!(items.len(), 3, "{items:?}");
        assert!(matches!(&items[0], Item::Loop(6, b) if b.len() == 2), "{items:?}");
        let Item::Action(TraceAction::Compute { compute: Compute::Seconds(rest) }) = &items[1] else { panic!("{items:?}") };
        assert!((rest - 3e-6).abs() < 1e-15, "{rest}");
        let total = |a: &[TraceAction]| a.iter().map(|x| match x { TraceAction::Compute { compute: Compute::Seconds(s) } => *s, _ => 0.0 }).sum::<f64>();
        assert!((total(&unfold(&items)) - total(&actions)).abs() < 1e-15);
        // A shorter final burst is not an iteration.
        let mut short = actions.clone();
        short[11] = compute(5e-7);
        assert!(matches!(&fold(&short)[0], Item::Loop(5, _)), "{:?}", fold(&short));
    }

    #[test]
    fn bursts_equal_to_nine_digits_fold_and_others_do_not() {
        let items = fold(&[compute(4.0122982000000006e-5), barrier(), compute(4.0122982e-5), barrier(), compute(4.1e-5), barrier()]);
        assert_eq!(items.len(), 3, "{items:?}");
        assert!(matches!(&items[0], Item::Loop(2, b) if b.len() == 2));
    }
}
