//! Messages that arrived before their receive, for both replays: indexed by source (a receive
//! from one source does not scan the others': a master receiving from each of 65,535 workers in
//! turn stays linear) and by arrival order (for receives from any source: the earliest matching
//! one).

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::sim::replay::Ctx;

/// What matching reads of a message: its source (world rank), tag and context.
pub(crate) trait Envelope {
    fn src(&self) -> u32;
    fn tag(&self) -> i32;
    fn ctx(&self) -> Ctx;
}

pub(crate) struct Unexpected<E> {
    seq: u64,
    by_src: HashMap<u32, VecDeque<(u64, E)>>,
    order: BTreeMap<u64, u32>,
}

impl<E> Default for Unexpected<E> {
    fn default() -> Self {
        Unexpected { seq: 0, by_src: HashMap::new(), order: BTreeMap::new() }
    }
}

impl<E: Envelope> Unexpected<E> {
    pub fn push(&mut self, e: E) {
        let s = self.seq;
        self.seq += 1;
        self.order.insert(s, e.src());
        self.by_src.entry(e.src()).or_default().push_back((s, e));
    }

    /// The earliest message from `from` (any source: None) with this tag and context.
    pub fn take(&mut self, from: Option<u32>, tag: Option<i32>, ctx: Ctx) -> Option<E> {
        let ok = |e: &E| e.ctx() == ctx && tag.is_none_or(|t| t == e.tag());
        let (src, idx) = match from {
            Some(s) => {
                let q = self.by_src.get(&s)?;
                (s, q.iter().position(|(_, e)| ok(e))?)
            }
            None => self.order.iter().find_map(|(&seq, &src)| {
                let q = self.by_src.get(&src)?;
                let i = q.iter().position(|(s2, _)| *s2 == seq)?;
                ok(&q[i].1).then_some((src, i))
            })?,
        };
        let q = self.by_src.get_mut(&src)?;
        let (seq, e) = q.remove(idx)?;
        if q.is_empty() {
            self.by_src.remove(&src);
        }
        self.order.remove(&seq);
        Some(e)
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The earliest message.
    pub fn front(&self) -> Option<&E> {
        let (&seq, &src) = self.order.iter().next()?;
        self.by_src.get(&src)?.iter().find(|(s, _)| *s == seq).map(|(_, e)| e)
    }
}
