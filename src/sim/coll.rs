//! Collectives as point-to-point algorithms, the ones MPI libraries use, selected by size the way
//! Open MPI's fixed decision rules do (simplified; docs in traces/FORMAT.md):
//!
//! | collective | algorithm |
//! |---|---|
//! | barrier | dissemination (ceil(log2 p) rounds of 0-byte sendrecv) |
//! | bcast | binomial tree |
//! | reduce | binomial tree, reduction charged at each receive |
//! | allreduce | recursive doubling below 10,000 B, Rabenseifner (recursive-halving reduce-scatter + recursive-doubling allgather) from 10,000 B; non-power-of-two sizes fold the extra ranks first |
//! | allgather | recursive doubling when p is a power of two and p x bytes < 50,000 B, ring otherwise |
//! | allgatherv | ring |
//! | alltoall | Bruck below 200 B per block when p > 12, pairwise exchange otherwise |
//! | alltoallv | pairwise exchange (the rank's own block a local copy first) |
//! | gather, scatter | binomial tree |
//! | gatherv, scatterv | linear (root talks to each rank) |
//! | reduce_scatter | binomial reduce of the whole vector to rank 0, then linear scatterv |
//! | scan | linear chain |
//!
//! The algorithms are written against [`PointToPoint`], one rank's blocking operations on a
//! communicator, and nothing else: the replay implements it over SimGrid (on the
//! communicator's collective context, so this traffic never matches user messages), the unit
//! tests below over an in-memory matcher.

use crate::model::trace::TraceAction;

pub const ALLREDUCE_RABENSEIFNER_FROM_BYTES: u64 = 10_000;
pub const ALLGATHER_RDB_BELOW_TOTAL_BYTES: u64 = 50_000;
pub const ALLTOALL_BRUCK_BELOW_BYTES: u64 = 200;
pub const ALLTOALL_BRUCK_ABOVE_RANKS: u32 = 12;

/// Tags of the collective context, one per collective (helps reading deadlock reports).
const T_BARRIER: i32 = 1;
const T_BCAST: i32 = 2;
const T_REDUCE: i32 = 3;
const T_ALLREDUCE: i32 = 4;
const T_GATHER: i32 = 5;
const T_SCATTER: i32 = 6;
const T_ALLGATHER: i32 = 7;
const T_ALLTOALL: i32 = 8;
const T_SCAN: i32 = 9;

/// One rank's point-to-point operations on a communicator: all that the algorithms here use.
/// Peers are ranks of the communicator (0..size); every operation blocks as its MPI call does.
pub(crate) trait PointToPoint {
    /// The communicator's size.
    fn size(&self) -> u32;
    /// This rank's index in the communicator.
    fn rank(&self) -> u32;
    /// MPI_Send of `bytes` to `to`.
    fn send(&mut self, to: u32, bytes: u64, tag: i32);
    /// MPI_Recv from `from` (the message's size is the sender's).
    fn recv(&mut self, from: u32, tag: i32);
    /// MPI_Sendrecv: the receive and the send posted together, both waited for.
    fn sendrecv(&mut self, to: u32, bytes: u64, from: u32, tag: i32);
    /// The reduction arithmetic that combines `bytes` of received data with the rank's own.
    fn reduce(&mut self, bytes: u64);
    /// The rank's own block copied from its send buffer to its receive buffer (a memcpy).
    fn copy(&mut self, _bytes: u64) {}
}

/// The transport with the tag of the collective being played.
struct C<'a, P: PointToPoint> {
    p: &'a mut P,
    tag: i32,
}

impl<P: PointToPoint> C<'_, P> {
    fn n(&self) -> u32 {
        self.p.size()
    }
    fn me(&self) -> u32 {
        self.p.rank()
    }
    fn send(&mut self, to: u32, bytes: u64) {
        self.p.send(to, bytes, self.tag);
    }
    fn recv(&mut self, from: u32) {
        self.p.recv(from, self.tag);
    }
    fn sendrecv(&mut self, to: u32, bytes: u64, from: u32) {
        self.p.sendrecv(to, bytes, from, self.tag);
    }
    fn reduce(&mut self, bytes: u64) {
        self.p.reduce(bytes);
    }
    fn copy(&mut self, bytes: u64) {
        if bytes > 0 {
            self.p.copy(bytes);
        }
    }
}

/// The communicator of a collective action (None for the others).
pub(crate) fn comm_of(a: &TraceAction) -> Option<u32> {
    use TraceAction as A;
    match a {
        A::Barrier { comm }
        | A::Bcast { comm, .. }
        | A::Reduce { comm, .. }
        | A::Allreduce { comm, .. }
        | A::Gather { comm, .. }
        | A::Gatherv { comm, .. }
        | A::Scatter { comm, .. }
        | A::Scatterv { comm, .. }
        | A::Allgather { comm, .. }
        | A::Allgatherv { comm, .. }
        | A::Alltoall { comm, .. }
        | A::Alltoallv { comm, .. }
        | A::ReduceScatter { comm, .. }
        | A::Scan { comm, .. } => Some(*comm),
        _ => None,
    }
}

/// Plays collective action `a` as this rank's part of it. An error says what is wrong with the
/// action (a root or a count list that does not fit the communicator, not a collective).
pub(crate) fn run(p: &mut impl PointToPoint, a: &TraceAction) -> Result<(), String> {
    use TraceAction as A;
    let n = p.size();
    let root_ok = |root: u32| {
        if root < n {
            Ok(root)
        } else {
            Err(format!("root {root} is not below {n}"))
        }
    };
    let counts_ok = |k: &Vec<u64>, comm: &u32| {
        if k.len() == n as usize {
            Ok(())
        } else {
            Err(format!(
                "{} counts for communicator {comm} of size {n}",
                k.len()
            ))
        }
    };
    let mut x = C { p, tag: 0 };
    match a {
        A::Barrier { .. } => {
            x.tag = T_BARRIER;
            barrier(&mut x)
        }
        A::Bcast { bytes, root, .. } => {
            x.tag = T_BCAST;
            bcast(&mut x, *bytes, root_ok(*root)?)
        }
        A::Reduce { bytes, root, .. } => {
            x.tag = T_REDUCE;
            reduce(&mut x, *bytes, root_ok(*root)?)
        }
        A::Allreduce { bytes, .. } => {
            x.tag = T_ALLREDUCE;
            allreduce(&mut x, *bytes)
        }
        A::Gather { bytes, root, .. } => {
            x.tag = T_GATHER;
            gather(&mut x, &vec![*bytes; n as usize], root_ok(*root)?)
        }
        A::Gatherv { counts, root, comm } => {
            counts_ok(counts, comm)?;
            x.tag = T_GATHER;
            gatherv(&mut x, counts, root_ok(*root)?)
        }
        A::Scatter { bytes, root, .. } => {
            x.tag = T_SCATTER;
            scatter(&mut x, &vec![*bytes; n as usize], root_ok(*root)?)
        }
        A::Scatterv { counts, root, comm } => {
            counts_ok(counts, comm)?;
            x.tag = T_SCATTER;
            scatterv(&mut x, counts, root_ok(*root)?)
        }
        A::Allgather { bytes, .. } => {
            x.tag = T_ALLGATHER;
            if n.is_power_of_two() && bytes * u64::from(n) < ALLGATHER_RDB_BELOW_TOTAL_BYTES {
                allgather_rdb(&mut x, *bytes)
            } else {
                allgatherv_ring(&mut x, &vec![*bytes; n as usize])
            }
        }
        A::Allgatherv { counts, comm } => {
            counts_ok(counts, comm)?;
            x.tag = T_ALLGATHER;
            allgatherv_ring(&mut x, counts)
        }
        A::Alltoall { bytes, .. } => {
            x.tag = T_ALLTOALL;
            if *bytes < ALLTOALL_BRUCK_BELOW_BYTES && n > ALLTOALL_BRUCK_ABOVE_RANKS {
                alltoall_bruck(&mut x, *bytes)
            } else {
                let v = vec![*bytes; n as usize];
                alltoallv_pairwise(&mut x, &v, &v)
            }
        }
        A::Alltoallv { send, recv, comm } => {
            counts_ok(send, comm)?;
            counts_ok(recv, comm)?;
            x.tag = T_ALLTOALL;
            alltoallv_pairwise(&mut x, send, recv)
        }
        A::ReduceScatter { counts, comm } => {
            counts_ok(counts, comm)?;
            let total: u64 = counts.iter().sum();
            x.tag = T_REDUCE;
            reduce(&mut x, total, 0);
            x.tag = T_SCATTER;
            scatterv(&mut x, counts, 0)
        }
        A::Scan { bytes, .. } => {
            x.tag = T_SCAN;
            let me = x.me();
            if me > 0 {
                x.recv(me - 1);
                x.reduce(*bytes);
            }
            if me + 1 < n {
                x.send(me + 1, *bytes);
            }
        }
        _ => return Err("not a collective".into()),
    }
    Ok(())
}

fn barrier<P: PointToPoint>(x: &mut C<P>) {
    let (n, me) = (x.n(), x.me());
    let mut d = 1;
    while d < n {
        x.sendrecv((me + d) % n, 0, (me + n - d) % n);
        d *= 2;
    }
}

fn bcast<P: PointToPoint>(x: &mut C<P>, bytes: u64, root: u32) {
    let (n, me) = (x.n(), x.me());
    let vr = (me + n - root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            x.recv((vr - mask + root) % n);
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if vr + mask < n {
            x.send((vr + mask + root) % n, bytes);
        }
        mask >>= 1;
    }
}

fn reduce<P: PointToPoint>(x: &mut C<P>, bytes: u64, root: u32) {
    let (n, me) = (x.n(), x.me());
    let vr = (me + n - root) % n;
    let mut mask = 1;
    while mask < n {
        if vr & mask == 0 {
            let src = vr | mask;
            if src < n {
                x.recv((src + root) % n);
                x.reduce(bytes);
            }
        } else {
            x.send(((vr & !mask) + root) % n, bytes);
            break;
        }
        mask <<= 1;
    }
}

/// Folds a non-power-of-two communicator onto its largest power of two: among the first 2 x rem
/// ranks, even ones hand their data to the next odd one and sit out. Returns the rank's index in
/// the power-of-two group (None: sits out) and the group size.
fn fold_in<P: PointToPoint>(x: &mut C<P>, bytes: u64) -> (Option<u32>, u32) {
    let (n, me) = (x.n(), x.me());
    let pof2 = 1 << (31 - n.leading_zeros());
    let rem = n - pof2;
    if me < 2 * rem {
        if me % 2 == 0 {
            x.send(me + 1, bytes);
            (None, pof2)
        } else {
            x.recv(me - 1);
            x.reduce(bytes);
            (Some(me / 2), pof2)
        }
    } else {
        (Some(me - rem), pof2)
    }
}

fn fold_out<P: PointToPoint>(x: &mut C<P>, bytes: u64) {
    let (n, me) = (x.n(), x.me());
    let pof2 = 1 << (31 - n.leading_zeros());
    let rem = n - pof2;
    if me < 2 * rem {
        if me % 2 == 1 {
            x.send(me - 1, bytes);
        } else {
            x.recv(me + 1);
        }
    }
}

fn real_rank(newrank: u32, rem: u32) -> u32 {
    if newrank < rem {
        newrank * 2 + 1
    } else {
        newrank + rem
    }
}

fn allreduce<P: PointToPoint>(x: &mut C<P>, bytes: u64) {
    let n = x.n();
    if n == 1 {
        return;
    }
    let (nr, pof2) = fold_in(x, bytes);
    let rem = n - pof2;
    if let Some(nr) = nr {
        if bytes < ALLREDUCE_RABENSEIFNER_FROM_BYTES || bytes < u64::from(pof2) {
            let mut mask = 1;
            while mask < pof2 {
                let peer = real_rank(nr ^ mask, rem);
                x.sendrecv(peer, bytes, peer);
                x.reduce(bytes);
                mask <<= 1;
            }
        } else {
            // Reduce-scatter by recursive halving, then allgather by recursive doubling.
            let mut size = bytes;
            let mut sizes = Vec::new();
            let mut mask = 1;
            while mask < pof2 {
                let peer = real_rank(nr ^ mask, rem);
                let half = size / 2;
                x.sendrecv(peer, size - half, peer);
                x.reduce(half);
                sizes.push(size - half);
                size = half;
                mask <<= 1;
            }
            let mut mask = pof2 >> 1;
            while mask > 0 {
                let peer = real_rank(nr ^ mask, rem);
                let s = sizes.pop().unwrap_or(size);
                x.sendrecv(peer, s, peer);
                mask >>= 1;
            }
        }
    }
    fold_out(x, bytes);
}

fn gather<P: PointToPoint>(x: &mut C<P>, counts: &[u64], root: u32) {
    let (n, me) = (x.n(), x.me());
    let vr = (me + n - root) % n;
    // Bytes of the subtree rooted at virtual rank v with extent `mask`.
    let subtree = |v: u32, mask: u32| -> u64 {
        (v..(v + mask).min(n))
            .map(|i| counts[((i + root) % n) as usize])
            .sum()
    };
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            x.send(((vr - mask) + root) % n, subtree(vr, mask));
            return;
        }
        let child = vr + mask;
        if child < n {
            x.recv((child + root) % n);
        }
        mask <<= 1;
    }
}

fn scatter<P: PointToPoint>(x: &mut C<P>, counts: &[u64], root: u32) {
    let (n, me) = (x.n(), x.me());
    let vr = (me + n - root) % n;
    let subtree = |v: u32, mask: u32| -> u64 {
        (v..(v + mask).min(n))
            .map(|i| counts[((i + root) % n) as usize])
            .sum()
    };
    let mut mask = 1;
    while mask < n {
        if vr & mask != 0 {
            x.recv(((vr - mask) + root) % n);
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        let child = vr + mask;
        if child < n {
            x.send((child + root) % n, subtree(child, mask));
        }
        mask >>= 1;
    }
}

fn gatherv<P: PointToPoint>(x: &mut C<P>, counts: &[u64], root: u32) {
    let (n, me) = (x.n(), x.me());
    if me == root {
        for r in (0..n).filter(|&r| r != root) {
            x.recv(r);
        }
    } else {
        x.send(root, counts[me as usize]);
    }
}

fn scatterv<P: PointToPoint>(x: &mut C<P>, counts: &[u64], root: u32) {
    let (n, me) = (x.n(), x.me());
    if me == root {
        for r in (0..n).filter(|&r| r != root) {
            x.send(r, counts[r as usize]);
        }
    } else {
        x.recv(root);
    }
}

fn allgather_rdb<P: PointToPoint>(x: &mut C<P>, bytes: u64) {
    let (n, me) = (x.n(), x.me());
    let mut mask = 1;
    while mask < n {
        let peer = me ^ mask;
        x.sendrecv(peer, bytes * u64::from(mask), peer);
        mask <<= 1;
    }
}

fn allgatherv_ring<P: PointToPoint>(x: &mut C<P>, counts: &[u64]) {
    let (n, me) = (x.n(), x.me());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    for i in 0..n.saturating_sub(1) {
        let block = (me + n - i) % n;
        x.sendrecv(right, counts[block as usize], left);
    }
}

fn alltoall_bruck<P: PointToPoint>(x: &mut C<P>, bytes: u64) {
    let (n, me) = (x.n(), x.me());
    let mut pof = 1;
    while pof < n {
        let blocks = (0..n).filter(|j| j & pof != 0).count() as u64;
        x.sendrecv((me + pof) % n, blocks * bytes, (me + n - pof) % n);
        pof <<= 1;
    }
}

fn alltoallv_pairwise<P: PointToPoint>(x: &mut C<P>, send: &[u64], _recv: &[u64]) {
    let (n, me) = (x.n(), x.me());
    // Step 0: the block to itself, a local copy.
    x.copy(send.get(me as usize).copied().unwrap_or(0));
    for step in 1..n {
        let to = (me + step) % n;
        let from = (me + n - step) % n;
        x.sendrecv(to, send[to as usize], from);
    }
}

#[cfg(test)]
mod tests;
