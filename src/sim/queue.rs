//! The analytic replay's event queue: a radix heap over simulated times.
//!
//! Simulated time never goes back, so the queue is monotone: every time pushed is at least the
//! last one popped. A radix heap keeps its events in buckets by the highest bit in which their
//! time differs from the last time popped; a push appends to a bucket, and a pop empties the
//! lowest non-empty bucket into lower ones. Every access is sequential, where a binary heap of
//! 65,536 ranks' events misses the cache at each of its 17 levels (15% of a 65,536-rank replay).
//!
//! Events of the same time come out in the order they were pushed, as from a binary heap ordered
//! by (time, sequence number): the replay's result does not depend on the queue.

/// One event: a time (as the bits of a non-negative f64, which order like the numbers), its
/// sequence number and what it wakes.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Event {
    key: u64,
    seq: u64,
    id: u32,
}

pub(crate) struct EventQueue {
    /// The last time popped: every event in the queue is at or after it.
    last: u64,
    /// Bucket 0 holds the events at `last`; bucket b > 0 those whose highest bit differing from
    /// `last` is bit b - 1.
    buckets: Vec<Vec<Event>>,
    /// Bucket 0 is read from here on (its events are in sequence order).
    head: usize,
    seq: u64,
    len: usize,
}

impl EventQueue {
    pub(crate) fn new() -> EventQueue {
        EventQueue { last: 0, buckets: (0..65).map(|_| Vec::new()).collect(), head: 0, seq: 0, len: 0 }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    fn bucket(&self, key: u64) -> usize {
        if key == self.last {
            0
        } else {
            64 - (key ^ self.last).leading_zeros() as usize
        }
    }

    /// Queues `id` at time `t` (seconds, not negative). A time before the last one popped (a
    /// rounding error) is taken as that time.
    pub(crate) fn push(&mut self, t: f64, id: u32) {
        let key = t.max(0.0).to_bits().max(self.last);
        self.seq += 1;
        let b = self.bucket(key);
        self.buckets[b].push(Event { key, seq: self.seq, id });
        self.len += 1;
    }

    /// The earliest event (the first pushed among equal times): its time and id.
    pub(crate) fn pop(&mut self) -> Option<(f64, u32)> {
        if self.head == self.buckets[0].len() {
            self.buckets[0].clear();
            self.head = 0;
            let i = (1..self.buckets.len()).find(|&i| !self.buckets[i].is_empty())?;
            let mut moving = std::mem::take(&mut self.buckets[i]);
            self.last = moving.iter().map(|e| e.key).min().unwrap_or(self.last);
            for e in moving.drain(..) {
                let b = self.bucket(e.key);
                self.buckets[b].push(e);
            }
            // Every event moved to a lower bucket; the emptied one keeps its allocation.
            self.buckets[i] = moving;
            if self.buckets[0].len() > 1 {
                self.buckets[0].sort_unstable_by_key(|e| e.seq);
            }
        }
        let e = self.buckets[0][self.head];
        self.head += 1;
        self.len -= 1;
        Some((f64::from_bits(e.key), e.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    #[test]
    fn events_come_out_as_from_a_heap_ordered_by_time_then_arrival() {
        // A simulation's pattern: pops interleaved with pushes at or after the time popped,
        // many of them at the same time.
        let mut q = EventQueue::new();
        let mut h = BinaryHeap::new();
        let mut seq = 0u64;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut now = 0.0f64;
        let mut push = |q: &mut EventQueue, h: &mut BinaryHeap<Reverse<(u64, u64, u32)>>, t: f64, id: u32| {
            seq += 1;
            q.push(t, id);
            h.push(Reverse((t.to_bits(), seq, id)));
        };
        for id in 0..100 {
            push(&mut q, &mut h, (id % 7) as f64 * 1e-6, id);
        }
        let mut popped = 0;
        while let Some((t, id)) = q.pop() {
            let Reverse((ht, _, hid)) = h.pop().expect("the heap has as many");
            assert_eq!((t.to_bits(), id), (ht, hid), "pop {popped}");
            assert!(t >= now);
            now = t;
            popped += 1;
            if popped < 20_000 {
                for _ in 0..rnd() % 3 + if q.len() < 50 { 2 } else { 0 } {
                    let dt = match rnd() % 4 {
                        0 => 0.0,
                        1 => 1e-9 * (rnd() % 10) as f64,
                        2 => 1e-6 * (rnd() % 1000) as f64,
                        _ => (rnd() % 5) as f64,
                    };
                    push(&mut q, &mut h, now + dt, (rnd() % 1000) as u32);
                }
            }
            assert_eq!(q.len(), h.len());
        }
        assert!(h.is_empty());
        assert!(popped > 20_000);
    }

    #[test]
    fn a_time_before_the_last_one_popped_is_taken_as_that_time() {
        let mut q = EventQueue::new();
        q.push(2.0, 1);
        assert_eq!(q.pop(), Some((2.0, 1)));
        q.push(1.5, 2);
        q.push(3.0, 3);
        assert_eq!(q.pop(), Some((2.0, 2)));
        assert_eq!(q.pop(), Some((3.0, 3)));
        assert_eq!(q.pop(), None);
    }
}
