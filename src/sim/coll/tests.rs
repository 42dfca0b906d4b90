//! The collectives without SimGrid. Each rank's part of a collective is recorded on a
//! `PointToPoint` that only writes the operations down (the algorithms never look at what they
//! receive), then `play` runs every rank's operations together under MPI's matching rules, with
//! synchronous sends (a send completes once its receive is posted: the rendezvous protocol of
//! large messages, under which an exchange that could deadlock does). A message takes one round
//! from the moment both sides are posted, so the rounds a collective takes are its critical path
//! in messages. Each message also carries which ranks' data its sender has heard of, so a test
//! can say that a broadcast reaches every rank, or that a barrier lets no rank out before every
//! rank came in.

use std::collections::{HashMap, VecDeque};

use super::*;

#[derive(Clone, Debug, PartialEq)]
enum Op {
    Send {
        to: u32,
        bytes: u64,
        tag: i32,
    },
    Recv {
        from: u32,
        tag: i32,
    },
    Sendrecv {
        to: u32,
        bytes: u64,
        from: u32,
        tag: i32,
    },
    Reduce {
        bytes: u64,
    },
}

/// A transport that writes one rank's operations down.
struct Recorder {
    size: u32,
    rank: u32,
    ops: Vec<Op>,
}

impl PointToPoint for Recorder {
    fn size(&self) -> u32 {
        self.size
    }
    fn rank(&self) -> u32 {
        self.rank
    }
    fn send(&mut self, to: u32, bytes: u64, tag: i32) {
        self.ops.push(Op::Send { to, bytes, tag });
    }
    fn recv(&mut self, from: u32, tag: i32) {
        self.ops.push(Op::Recv { from, tag });
    }
    fn sendrecv(&mut self, to: u32, bytes: u64, from: u32, tag: i32) {
        self.ops.push(Op::Sendrecv {
            to,
            bytes,
            from,
            tag,
        });
    }
    fn reduce(&mut self, bytes: u64) {
        self.ops.push(Op::Reduce { bytes });
    }
}

/// Every rank's operations when each plays `f` on a communicator of `n` ranks.
fn record_with(n: u32, f: impl Fn(&mut Recorder)) -> Vec<Vec<Op>> {
    (0..n)
        .map(|rank| {
            let mut r = Recorder {
                size: n,
                rank,
                ops: Vec::new(),
            };
            f(&mut r);
            r.ops
        })
        .collect()
}

/// Every rank's operations for action `a` on a communicator of `n` ranks.
fn record(n: u32, a: &TraceAction) -> Vec<Vec<Op>> {
    record_with(n, |r| {
        run(r, a).unwrap_or_else(|e| panic!("{a:?} on {n} ranks: {e}"));
    })
}

/// A trace line's action (traces/FORMAT.md), such as `bcast 1000 root=2`.
fn act(line: &str) -> TraceAction {
    match crate::trace::parse_line(line) {
        Ok(Some(crate::trace::Line::Action(a))) => a,
        other => panic!("{line:?}: {other:?}"),
    }
}

/// A count list as a trace line writes it.
fn list(counts: &[u64]) -> String {
    let words: Vec<String> = counts.iter().map(u64::to_string).collect();
    words.join(",")
}

#[derive(Debug)]
struct Message {
    from: u32,
    to: u32,
    bytes: u64,
    tag: i32,
}

#[derive(Debug)]
struct Played {
    messages: Vec<Message>,
    /// Bytes of reduction arithmetic per rank.
    reduced: Vec<u64>,
    /// Rounds until the last rank is done.
    rounds: u32,
    /// Per rank, a bit for every rank whose data reached it (directly or through others).
    heard: Vec<u64>,
}

impl Played {
    fn sent_by(&self, r: u32) -> impl Iterator<Item = &Message> {
        self.messages.iter().filter(move |m| m.from == r)
    }
    fn received_by(&self, r: u32) -> impl Iterator<Item = &Message> {
        self.messages.iter().filter(move |m| m.to == r)
    }
    fn bytes(&self) -> u64 {
        self.messages.iter().map(|m| m.bytes).sum()
    }
}

/// A posted send: its bytes, the round it was posted in and what its sender had heard of.
struct PostedSend {
    bytes: u64,
    at: u32,
    heard: u64,
}

/// Plays every rank's operations together (see the module's comment); a deadlock is an error
/// naming each rank that cannot go on and the operation it waits in.
fn play(ops: &[Vec<Op>]) -> Result<Played, String> {
    let n = ops.len();
    assert!(n <= 64, "heard-of sets are 64-bit masks");
    // Per rank: its current operation, whether it is posted, how many of its messages are not
    // matched yet, the round it was posted in and the round its last message was done.
    let mut pc = vec![0usize; n];
    let mut posted = vec![false; n];
    let mut pending = vec![0u32; n];
    let mut clock = vec![0u32; n];
    let mut op_end = vec![0u32; n];
    let mut heard: Vec<u64> = (0..n).map(|r| 1 << r).collect();
    let mut reduced = vec![0u64; n];
    let mut messages = Vec::new();
    // Matching per (sender, receiver, tag), in posting order (MPI's non-overtaking rule).
    let mut sends: HashMap<(u32, u32, i32), VecDeque<PostedSend>> = HashMap::new();
    let mut recvs: HashMap<(u32, u32, i32), VecDeque<u32>> = HashMap::new();
    loop {
        let mut progress = false;
        for r in 0..n {
            if posted[r] || pc[r] == ops[r].len() {
                continue;
            }
            let me = r as u32;
            let mut keys = Vec::new();
            match ops[r][pc[r]] {
                Op::Reduce { bytes } => reduced[r] += bytes,
                Op::Send { to, bytes, tag } => {
                    keys.push((me, to, tag));
                    let s = PostedSend {
                        bytes,
                        at: clock[r],
                        heard: heard[r],
                    };
                    sends.entry((me, to, tag)).or_default().push_back(s);
                }
                Op::Recv { from, tag } => {
                    keys.push((from, me, tag));
                    recvs
                        .entry((from, me, tag))
                        .or_default()
                        .push_back(clock[r]);
                }
                Op::Sendrecv {
                    to,
                    bytes,
                    from,
                    tag,
                } => {
                    keys.push((from, me, tag));
                    recvs
                        .entry((from, me, tag))
                        .or_default()
                        .push_back(clock[r]);
                    keys.push((me, to, tag));
                    let s = PostedSend {
                        bytes,
                        at: clock[r],
                        heard: heard[r],
                    };
                    sends.entry((me, to, tag)).or_default().push_back(s);
                }
            }
            posted[r] = true;
            pending[r] = keys.len() as u32;
            op_end[r] = clock[r];
            progress = true;
            for key in keys {
                let (Some(sq), Some(rq)) = (sends.get_mut(&key), recvs.get_mut(&key)) else {
                    continue;
                };
                while !sq.is_empty() && !rq.is_empty() {
                    let s = sq.pop_front().expect("not empty");
                    let recv_at = rq.pop_front().expect("not empty");
                    let (from, to, tag) = key;
                    let done = s.at.max(recv_at) + 1;
                    for side in [from as usize, to as usize] {
                        pending[side] -= 1;
                        op_end[side] = op_end[side].max(done);
                    }
                    heard[to as usize] |= s.heard;
                    messages.push(Message {
                        from,
                        to,
                        bytes: s.bytes,
                        tag,
                    });
                }
            }
        }
        // An operation whose messages are all matched (or that has none) is over.
        for q in 0..n {
            if posted[q] && pending[q] == 0 {
                posted[q] = false;
                clock[q] = op_end[q];
                pc[q] += 1;
                progress = true;
            }
        }
        if !progress {
            break;
        }
    }
    let stuck: Vec<String> = (0..n)
        .filter(|&r| pc[r] < ops[r].len())
        .map(|r| format!("rank {r} in {:?}", ops[r][pc[r]]))
        .collect();
    if !stuck.is_empty() {
        return Err(format!("deadlock: {}", stuck.join("; ")));
    }
    Ok(Played {
        messages,
        reduced,
        rounds: clock.iter().copied().max().unwrap_or(0),
        heard,
    })
}

/// Records and plays `a` on `n` ranks; checks what holds for every collective: no deadlock,
/// peers inside the communicator, no message to oneself, every message on the tag given.
fn traffic(n: u32, a: &TraceAction, tag: i32) -> Played {
    let ops = record(n, a);
    let p = play(&ops).unwrap_or_else(|e| panic!("{a:?} on {n} ranks: {e}"));
    for m in &p.messages {
        assert!(
            m.from < n && m.to < n,
            "{a:?} on {n} ranks: {m:?} leaves the communicator"
        );
        assert_ne!(m.from, m.to, "{a:?} on {n} ranks: {m:?} goes to its sender");
        assert_eq!(m.tag, tag, "{a:?} on {n} ranks: {m:?}");
    }
    if n == 1 {
        assert!(
            p.messages.is_empty(),
            "{a:?} on 1 rank sends {:?}",
            p.messages
        );
    }
    p
}

const RANKS: [u32; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16];

fn ceil_log2(n: u32) -> u32 {
    n.next_power_of_two().trailing_zeros()
}

fn all(n: u32) -> u64 {
    if n == 64 {
        u64::MAX
    } else {
        (1 << n) - 1
    }
}

/// Uneven per-rank byte counts, some zero.
fn uneven(n: u32) -> Vec<u64> {
    (0..u64::from(n)).map(|j| (j * 37 + 11) % 7 * 100).collect()
}

// ---- the matcher itself -----------------------------------------------------------------------

fn send(to: u32, bytes: u64, tag: i32) -> Op {
    Op::Send { to, bytes, tag }
}
fn recv(from: u32, tag: i32) -> Op {
    Op::Recv { from, tag }
}

#[test]
fn the_matcher_reports_two_ranks_that_both_send_first_as_a_deadlock() {
    let ops = vec![
        vec![send(1, 8, 0), recv(1, 0)],
        vec![send(0, 8, 0), recv(0, 0)],
    ];
    let e = play(&ops).unwrap_err();
    assert!(
        e.contains("rank 0 in Send") && e.contains("rank 1 in Send"),
        "{e}"
    );
    // The same exchange as sendrecvs completes, in one round.
    let ops: Vec<Vec<Op>> = (0..2)
        .map(|r| {
            vec![Op::Sendrecv {
                to: 1 - r,
                bytes: 8,
                from: 1 - r,
                tag: 0,
            }]
        })
        .collect();
    let p = play(&ops).unwrap();
    assert_eq!(
        (p.messages.len(), p.rounds, p.heard.clone()),
        (2, 1, vec![3, 3])
    );
}

#[test]
fn the_matcher_matches_by_tag_in_posting_order_and_counts_rounds() {
    // Rank 0 sends tag 1 then tag 2; rank 1 receives tag 2 first: a deadlock with synchronous
    // sends (MPI allows one).
    let ops = vec![
        vec![send(1, 1, 1), send(1, 2, 2)],
        vec![recv(0, 2), recv(0, 1)],
    ];
    assert!(play(&ops).is_err());
    // A chain 0 -> 1 -> 2 takes two rounds and carries rank 0's data to rank 2.
    let ops = vec![
        vec![send(1, 5, 0)],
        vec![recv(0, 0), send(2, 5, 0)],
        vec![recv(1, 0)],
    ];
    let p = play(&ops).unwrap();
    assert_eq!((p.rounds, p.heard[2]), (2, 0b111));
}

// ---- each collective ----------------------------------------------------------------------------

#[test]
fn barrier_is_a_dissemination_of_ceil_log2_p_rounds_after_which_every_rank_heard_of_every_other() {
    for n in RANKS {
        let p = traffic(n, &act("barrier"), T_BARRIER);
        let k = ceil_log2(n);
        assert_eq!(p.messages.len() as u32, n * k, "{n} ranks");
        assert_eq!(p.bytes(), 0);
        assert_eq!(p.rounds, k, "{n} ranks");
        for r in 0..n {
            assert_eq!(p.sent_by(r).count() as u32, k);
            assert_eq!(p.received_by(r).count() as u32, k);
            assert_eq!(
                p.heard[r as usize],
                all(n),
                "{n} ranks: rank {r} left early"
            );
        }
    }
}

#[test]
fn bcast_is_a_binomial_tree_of_p_minus_1_messages_from_any_root() {
    for n in RANKS {
        for root in 0..n {
            let p = traffic(n, &act(&format!("bcast 1000 root={root}")), T_BCAST);
            assert_eq!(p.messages.len() as u32, n - 1, "{n} ranks, root {root}");
            assert!(p.messages.iter().all(|m| m.bytes == 1000));
            assert_eq!(p.rounds, ceil_log2(n), "{n} ranks, root {root}");
            for r in 0..n {
                let got = p.received_by(r).count();
                assert_eq!(
                    got,
                    usize::from(r != root),
                    "{n} ranks, root {root}, rank {r}"
                );
                assert_ne!(
                    p.heard[r as usize] & 1 << root,
                    0,
                    "{n} ranks, root {root}: rank {r}"
                );
            }
            assert_eq!(p.reduced.iter().sum::<u64>(), 0);
        }
    }
}

#[test]
fn reduce_is_a_binomial_tree_that_combines_at_each_receive() {
    for n in RANKS {
        for root in 0..n {
            let p = traffic(n, &act(&format!("reduce 800 root={root}")), T_REDUCE);
            assert_eq!(p.messages.len() as u32, n - 1, "{n} ranks, root {root}");
            assert!(p.messages.iter().all(|m| m.bytes == 800));
            assert_eq!(p.rounds, ceil_log2(n), "{n} ranks, root {root}");
            for r in 0..n {
                assert_eq!(p.sent_by(r).count(), usize::from(r != root), "rank {r}");
                let got = p.received_by(r).count() as u64;
                assert_eq!(p.reduced[r as usize], 800 * got, "rank {r}");
            }
            assert_eq!(p.heard[root as usize], all(n), "{n} ranks, root {root}");
        }
    }
}

/// The largest power of two not above `n`, and how many ranks are left over.
fn pof2_rem(n: u32) -> (u32, u32) {
    let pof2 = 1 << (31 - n.leading_zeros());
    (pof2, n - pof2)
}

#[test]
fn allreduce_below_10000_bytes_is_recursive_doubling_with_the_extra_ranks_folded() {
    for n in RANKS {
        let p = traffic(n, &act("allreduce 8"), T_ALLREDUCE);
        let (pof2, rem) = pof2_rem(n);
        let k = pof2.trailing_zeros();
        let folds = if rem > 0 { 2 } else { 0 };
        assert_eq!(p.messages.len() as u32, pof2 * k + 2 * rem, "{n} ranks");
        assert!(p.messages.iter().all(|m| m.bytes == 8));
        assert_eq!(p.rounds, k + folds, "{n} ranks");
        // Each exchange is combined once, and each folded-in contribution.
        assert_eq!(
            p.reduced.iter().sum::<u64>(),
            u64::from(pof2 * k + rem) * 8,
            "{n} ranks"
        );
        for r in 0..n {
            assert_eq!(p.heard[r as usize], all(n), "{n} ranks: rank {r}");
        }
    }
}

#[test]
fn allreduce_from_10000_bytes_is_rabenseifner_halving_then_doubling() {
    let bytes = 100_000;
    for n in RANKS.into_iter().filter(|&n| n > 1) {
        let p = traffic(n, &act(&format!("allreduce {bytes}")), T_ALLREDUCE);
        let (pof2, rem) = pof2_rem(n);
        let k = pof2.trailing_zeros();
        let folds = if rem > 0 { 2 } else { 0 };
        assert_eq!(p.messages.len() as u32, 2 * pof2 * k + 2 * rem, "{n} ranks");
        assert_eq!(p.rounds, 2 * k + folds, "{n} ranks");
        // Recursive halving sends bytes less what is left after k halvings, the allgather the
        // same again; the folded ranks' whole vectors go in and out.
        let halved = bytes - (bytes >> k);
        let expect = u64::from(pof2) * 2 * halved + u64::from(2 * rem) * bytes;
        assert_eq!(p.bytes(), expect, "{n} ranks");
        for r in 0..n {
            let sent: u64 = p.sent_by(r).map(|m| m.bytes).sum();
            let sits_out = r < 2 * rem && r % 2 == 0;
            if !sits_out {
                let fold = if r < 2 * rem { bytes } else { 0 };
                assert_eq!(sent, 2 * halved + fold, "{n} ranks: rank {r}");
            }
            assert_eq!(p.heard[r as usize], all(n), "{n} ranks: rank {r}");
        }
    }
}

#[test]
fn allreduce_chooses_by_size() {
    // On 8 ranks, 9,999 B is recursive doubling (24 messages), 10,000 B Rabenseifner (48); a
    // vector smaller than the group stays with recursive doubling.
    let at = |n: u32, bytes: u64| traffic(n, &act(&format!("allreduce {bytes}")), T_ALLREDUCE);
    assert_eq!(at(8, 9_999).messages.len(), 24);
    assert_eq!(at(8, 10_000).messages.len(), 48);
    assert_eq!(at(8, 10_000).rounds, 6);
}

#[test]
fn gather_is_a_binomial_tree_each_rank_forwarding_its_subtree() {
    for n in RANKS {
        for root in 0..n {
            let p = traffic(n, &act(&format!("gather 300 root={root}")), T_GATHER);
            check_gather(n, root, &vec![300; n as usize], &p);
            assert_eq!(p.rounds, ceil_log2(n), "{n} ranks, root {root}");
            // The tree itself with uneven parts (a subtree's bytes are its ranks' parts), which
            // no trace action gives it.
            let counts = uneven(n);
            let ops = record_with(n, |r| {
                gather(
                    &mut C {
                        p: r,
                        tag: T_GATHER,
                    },
                    &counts,
                    root,
                )
            });
            check_gather(n, root, &counts, &play(&ops).unwrap());
        }
    }
}

/// Each rank other than the root sends once, what it received and its own part; the root gets
/// every other rank's part.
fn check_gather(n: u32, root: u32, counts: &[u64], p: &Played) {
    for r in 0..n {
        let sent: u64 = p.sent_by(r).map(|m| m.bytes).sum();
        let got: u64 = p.received_by(r).map(|m| m.bytes).sum();
        if r == root {
            assert_eq!(p.sent_by(r).count(), 0);
            let others: u64 = (0..n)
                .filter(|&j| j != root)
                .map(|j| counts[j as usize])
                .sum();
            assert_eq!(got, others, "{n} ranks, root {root}");
        } else {
            assert_eq!(p.sent_by(r).count(), 1, "{n} ranks, root {root}, rank {r}");
            assert_eq!(
                sent,
                got + counts[r as usize],
                "{n} ranks, root {root}, rank {r}"
            );
        }
    }
    assert_eq!(p.messages.len() as u32, n - 1);
    assert_eq!(p.heard[root as usize], all(n), "{n} ranks, root {root}");
}

#[test]
fn scatter_is_a_binomial_tree_each_rank_keeping_its_share() {
    for n in RANKS {
        for root in 0..n {
            let p = traffic(n, &act(&format!("scatter 300 root={root}")), T_SCATTER);
            check_scatter(n, root, &vec![300; n as usize], &p);
            assert_eq!(p.rounds, ceil_log2(n), "{n} ranks, root {root}");
            let counts = uneven(n);
            let ops = record_with(n, |r| {
                scatter(
                    &mut C {
                        p: r,
                        tag: T_SCATTER,
                    },
                    &counts,
                    root,
                )
            });
            check_scatter(n, root, &counts, &play(&ops).unwrap());
        }
    }
}

/// Each rank other than the root receives once and passes on all but its share; the root sends
/// every other rank's share.
fn check_scatter(n: u32, root: u32, counts: &[u64], p: &Played) {
    for r in 0..n {
        let sent: u64 = p.sent_by(r).map(|m| m.bytes).sum();
        let got: u64 = p.received_by(r).map(|m| m.bytes).sum();
        if r == root {
            assert_eq!(p.received_by(r).count(), 0);
            let others: u64 = (0..n)
                .filter(|&j| j != root)
                .map(|j| counts[j as usize])
                .sum();
            assert_eq!(sent, others, "{n} ranks, root {root}");
        } else {
            assert_eq!(
                p.received_by(r).count(),
                1,
                "{n} ranks, root {root}, rank {r}"
            );
            assert_eq!(
                got,
                sent + counts[r as usize],
                "{n} ranks, root {root}, rank {r}"
            );
            assert_ne!(p.heard[r as usize] & 1 << root, 0);
        }
    }
    assert_eq!(p.messages.len() as u32, n - 1);
}

#[test]
fn gatherv_and_scatterv_are_linear_with_each_rank_s_own_count() {
    for n in RANKS {
        let counts = uneven(n);
        for root in 0..n {
            let g = act(&format!("gatherv counts={} root={root}", list(&counts)));
            let p = traffic(n, &g, T_GATHER);
            check_gather(n, root, &counts, &p);
            assert!(p
                .messages
                .iter()
                .all(|m| m.to == root && m.bytes == counts[m.from as usize]));
            assert_eq!(p.rounds, n - 1, "{n} ranks, root {root}");

            let s = act(&format!("scatterv counts={} root={root}", list(&counts)));
            let p = traffic(n, &s, T_SCATTER);
            check_scatter(n, root, &counts, &p);
            assert!(p
                .messages
                .iter()
                .all(|m| m.from == root && m.bytes == counts[m.to as usize]));
            assert_eq!(p.rounds, n - 1, "{n} ranks, root {root}");
        }
    }
}

/// Every rank receives every other rank's part and hears of every rank.
fn check_allgather(n: u32, counts: &[u64], p: &Played) {
    let total: u64 = counts.iter().sum();
    for r in 0..n {
        let got: u64 = p.received_by(r).map(|m| m.bytes).sum();
        assert_eq!(got, total - counts[r as usize], "{n} ranks, rank {r}");
        assert_eq!(p.heard[r as usize], all(n), "{n} ranks, rank {r}");
    }
}

#[test]
fn allgather_is_recursive_doubling_on_small_powers_of_two_and_a_ring_otherwise() {
    for n in RANKS {
        for bytes in [100, 10_000] {
            let p = traffic(n, &act(&format!("allgather {bytes}")), T_ALLGATHER);
            check_allgather(n, &vec![bytes; n as usize], &p);
            let rdb = n.is_power_of_two() && bytes * u64::from(n) < ALLGATHER_RDB_BELOW_TOTAL_BYTES;
            let k = ceil_log2(n);
            if rdb {
                assert_eq!(p.messages.len() as u32, n * k, "{n} ranks, {bytes} B");
                assert_eq!(p.rounds, k, "{n} ranks, {bytes} B");
            } else {
                assert_eq!(p.messages.len() as u32, n * (n - 1), "{n} ranks, {bytes} B");
                assert_eq!(p.rounds, n - 1, "{n} ranks, {bytes} B");
            }
        }
    }
    // The choice itself: 8 x 1,000 B is recursive doubling, 8 x 10,000 B and 6 x 1,000 B a ring.
    let msgs = |n, bytes| {
        traffic(n, &act(&format!("allgather {bytes}")), T_ALLGATHER)
            .messages
            .len()
    };
    assert_eq!(
        (msgs(8, 1_000), msgs(8, 10_000), msgs(6, 1_000)),
        (24, 56, 30)
    );
}

#[test]
fn allgatherv_is_a_ring_passing_each_rank_s_block_on() {
    for n in RANKS {
        let counts = uneven(n);
        let p = traffic(
            n,
            &act(&format!("allgatherv counts={}", list(&counts))),
            T_ALLGATHER,
        );
        check_allgather(n, &counts, &p);
        assert_eq!(p.messages.len() as u32, n * (n - 1));
        assert!(p.messages.iter().all(|m| m.to == (m.from + 1) % n));
        assert_eq!(p.rounds, n - 1);
    }
}

#[test]
fn alltoall_is_pairwise_exchange_and_bruck_for_small_blocks_past_12_ranks() {
    for n in RANKS {
        for bytes in [100, 1_000] {
            let p = traffic(n, &act(&format!("alltoall {bytes}")), T_ALLTOALL);
            let bruck = bytes < ALLTOALL_BRUCK_BELOW_BYTES && n > ALLTOALL_BRUCK_ABOVE_RANKS;
            if bruck {
                // Round k sends the blocks whose index has bit k set: over the rounds, each
                // rank sends bytes x (the bits set in 0..p).
                let k = ceil_log2(n);
                let blocks: u64 = (0..n).map(|j| u64::from(j.count_ones())).sum();
                assert_eq!(p.messages.len() as u32, n * k, "{n} ranks, {bytes} B");
                assert_eq!(p.rounds, k, "{n} ranks, {bytes} B");
                for r in 0..n {
                    let sent: u64 = p.sent_by(r).map(|m| m.bytes).sum();
                    assert_eq!(sent, blocks * bytes, "{n} ranks, rank {r}");
                }
            } else {
                assert_eq!(p.messages.len() as u32, n * (n - 1), "{n} ranks, {bytes} B");
                assert!(p.messages.iter().all(|m| m.bytes == bytes));
                assert_eq!(p.rounds, n - 1, "{n} ranks, {bytes} B");
            }
            for r in 0..n {
                assert_eq!(
                    p.heard[r as usize],
                    all(n),
                    "{n} ranks, {bytes} B, rank {r}"
                );
            }
        }
    }
    let msgs = |n, bytes| {
        traffic(n, &act(&format!("alltoall {bytes}")), T_ALLTOALL)
            .messages
            .len()
    };
    assert_eq!(
        (msgs(12, 100), msgs(13, 100), msgs(16, 200)),
        (132, 52, 240)
    );
}

#[test]
fn alltoallv_sends_each_peer_its_count_once_in_p_minus_1_steps() {
    for n in RANKS {
        // What rank i sends rank j; each rank's receive list is the matching column.
        let sends = |i: u32| -> Vec<u64> {
            (0..n)
                .map(|j| u64::from((i * 7 + j * 3) % 5) * 1000)
                .collect()
        };
        let ops = record_with(n, |r| {
            let me = r.rank;
            let recv: Vec<u64> = (0..n).map(|i| sends(i)[me as usize]).collect();
            let a = act(&format!(
                "alltoallv send={} recv={}",
                list(&sends(me)),
                list(&recv)
            ));
            run(r, &a).unwrap();
        });
        let p = play(&ops).unwrap_or_else(|e| panic!("{n} ranks: {e}"));
        assert_eq!(p.messages.len() as u32, n * (n - 1), "{n} ranks");
        assert_eq!(p.rounds, n - 1, "{n} ranks");
        for i in 0..n {
            for j in (0..n).filter(|&j| j != i) {
                let m: Vec<&Message> = p.sent_by(i).filter(|m| m.to == j).collect();
                assert_eq!(m.len(), 1, "{n} ranks: {i} -> {j}");
                assert_eq!(m[0].bytes, sends(i)[j as usize], "{n} ranks: {i} -> {j}");
                assert_eq!(m[0].tag, T_ALLTOALL);
            }
            assert_eq!(p.heard[i as usize], all(n));
        }
    }
}

#[test]
fn reduce_scatter_is_a_binomial_reduce_to_rank_0_then_a_linear_scatterv() {
    for n in RANKS {
        let counts = uneven(n);
        let total: u64 = counts.iter().sum();
        let a = act(&format!("reduce_scatter counts={}", list(&counts)));
        let p = play(&record(n, &a)).unwrap_or_else(|e| panic!("{n} ranks: {e}"));
        let (reduce, scatter): (Vec<&Message>, Vec<&Message>) =
            p.messages.iter().partition(|m| m.tag == T_REDUCE);
        assert_eq!(reduce.len() as u32, n - 1, "{n} ranks");
        assert!(reduce.iter().all(|m| m.bytes == total && m.from != m.to));
        assert_eq!(scatter.len() as u32, n - 1, "{n} ranks");
        assert!(scatter
            .iter()
            .all(|m| m.tag == T_SCATTER && m.from == 0 && m.to != 0));
        assert!(scatter.iter().all(|m| m.bytes == counts[m.to as usize]));
        assert_eq!(p.rounds, ceil_log2(n) + n - 1, "{n} ranks");
        assert_eq!(p.reduced.iter().sum::<u64>(), u64::from(n - 1) * total);
        for r in 0..n {
            assert_eq!(p.heard[r as usize], all(n), "{n} ranks, rank {r}");
        }
    }
}

#[test]
fn scan_is_a_chain_each_rank_hearing_of_those_before_it() {
    for n in RANKS {
        let p = traffic(n, &act("scan 64"), T_SCAN);
        assert_eq!(p.messages.len() as u32, n - 1);
        assert!(p
            .messages
            .iter()
            .all(|m| m.to == m.from + 1 && m.bytes == 64));
        assert_eq!(p.rounds, n - 1);
        for r in 0..n {
            assert_eq!(p.heard[r as usize], all(r + 1), "{n} ranks, rank {r}");
            assert_eq!(p.reduced[r as usize], if r > 0 { 64 } else { 0 });
        }
    }
}

// ---- totals, and what run refuses -------------------------------------------------------------

#[test]
fn messages_and_bytes_per_collective_on_1_to_8_ranks() {
    // (action, ranks) -> (messages, bytes), worked out by hand from each algorithm.
    let cases = [
        ("barrier", 1, 0, 0),
        ("barrier", 5, 15, 0),
        ("bcast 10 root=2", 3, 2, 20),
        ("bcast 10 root=4", 5, 4, 40),
        ("reduce 10 root=1", 8, 7, 70),
        // 5 ranks: rank 0 folds into rank 1, 4 ranks exchange twice each, rank 1 hands back.
        ("allreduce 10", 5, 10, 100),
        ("allreduce 10", 2, 2, 20),
        // Root 3 of 4: virtual ranks 1 and 3 send 10 B, virtual rank 2 its pair's 20 B.
        ("gather 10 root=3", 4, 3, 40),
        ("scatter 10 root=1", 4, 3, 40),
        ("gatherv counts=1,2,3 root=1", 3, 2, 4),
        ("scatterv counts=1,2,3 root=2", 3, 2, 3),
        // Recursive doubling: each rank sends 10 then 20 B.
        ("allgather 10", 4, 8, 120),
        ("allgather 10", 3, 6, 60),
        ("allgatherv counts=1,2,3", 3, 6, 12),
        ("alltoall 10", 4, 12, 120),
        // Both ranks play these lists: rank 0 sends 5 B, rank 1 an empty message.
        ("alltoallv send=0,5 recv=0,5", 2, 2, 5),
        // A 6-byte reduce to rank 0 from 2 ranks, then 2 and 3 B scattered.
        ("reduce_scatter counts=1,2,3", 3, 4, 17),
        ("scan 10", 8, 7, 70),
    ];
    for (line, n, messages, bytes) in cases {
        let p = play(&record(n, &act(line))).unwrap();
        assert_eq!(
            (p.messages.len(), p.bytes()),
            (messages, bytes),
            "{line} on {n} ranks"
        );
    }
}

#[test]
fn a_root_or_a_count_list_that_does_not_fit_the_communicator_is_an_error() {
    let mut r = Recorder {
        size: 4,
        rank: 0,
        ops: Vec::new(),
    };
    let e = run(&mut r, &act("bcast 1 root=4")).unwrap_err();
    assert_eq!(e, "root 4 is not below 4");
    let e = run(&mut r, &act("gatherv counts=1,1,1 comm=7")).unwrap_err();
    assert_eq!(e, "3 counts for communicator 7 of size 4");
    let e = run(&mut r, &act("alltoallv send=1,1,1,1 recv=1,1,1")).unwrap_err();
    assert_eq!(e, "3 counts for communicator 0 of size 4");
    let e = run(&mut r, &act("compute 1.0")).unwrap_err();
    assert_eq!(e, "not a collective");
    assert!(r.ops.is_empty());
}

#[test]
fn coll_uses_neither_simgrid_nor_the_replay() {
    // The algorithms see the simulator only through PointToPoint (docs/ARCHITECTURE.md).
    let code: String = include_str!("../coll.rs")
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    for banned in ["replay", "engine", "ffi", "crate::sim", "super::"] {
        assert!(
            !code.contains(banned),
            "src/sim/coll.rs names `{banned}` outside comments"
        );
    }
}
