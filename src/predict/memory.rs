//! The memory bound of a block (a roofline per block): its array references (front end,
//! `MemRef`) priced by the machine table's memory kernels at the cache level their reuse
//! distance falls in. A block takes the larger of its op time (formula 1) and its memory time.
//!
//! Per access, with the figures the MTC measured at the working set of the reuse distance's
//! size (interpolated between the working sets it measured: half of L1, half of L2, just past
//! L2, a quarter of L3, past L3):
//! - stride 0: the same element, a register or L1 (no memory time);
//! - stride up to a line (64 B): the streaming cost per 8 bytes times stride / 8;
//! - stride over a line, under a page (4 KiB): a line per access, from 8 streaming costs at a
//!   line's stride to the strided-load kernel's at a page's, geometrically (`within_page`: the
//!   prefetchers follow constant strides within a page, less far the fewer lines it holds);
//!   for stores, 8 streaming costs;
//! - a page or more apart: the strided-load kernel (a page and a line apart), for stores the
//!   random-store cost;
//! - an index that depends on data: the random-access cost (independent accesses: the
//!   throughput of 8 pointer chases, or of random stores).
//!
//! A store to an element the block also loads costs half (its line is already there).
//! References served by L1 add nothing: formula (1)'s load and store costs were measured there.
//! Where the reuse distance or the stride cannot be evaluated, the reference is left out.

use std::collections::HashMap;

use crate::model::analysis::{MemAccess, MemRef};
use crate::model::machine::{MachineTable, Measure};

/// Bytes in a cache line.
const LINE: f64 = 64.0;
/// Bytes in a page: constant strides this far apart defeat the prefetchers.
const PAGE: f64 = 4096.0;

/// One working set the MTC measured, with its costs in ns per 8-byte access.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub name: String,
    /// Bytes of the working set the figures were measured at.
    pub ws: f64,
    pub stream_load: f64,
    pub stream_store: f64,
    pub random_load: f64,
    pub random_store: f64,
    /// Loads a page apart; tables measured before the kernel existed use random_load.
    pub stride_load: f64,
    /// Loads 2048 bytes apart (a power of two: the lines share few cache sets); 0 where not
    /// measured (past L2+, and in tables measured before the kernel existed): no floor.
    pub stride2k_load: f64,
    /// Bytes of the cache that served the working set (the smallest data or unified cache the
    /// host has of at least `ws`); None past the last cache or where the table does not say.
    pub capacity: Option<f64>,
    /// The stream figures with every core of the host streaming at once (levels the cores
    /// share; None: not measured, or a core's own cache).
    pub stream_load_all: Option<f64>,
    pub stream_store_all: Option<f64>,
    /// How a block's core time and its loads from here combine: the exponent of their smooth
    /// maximum (0: the larger alone, a perfect roofline; 1: their sum), from the MTC's overlap
    /// kernel: `overlap_exponent`. 0 in tables measured before it existed.
    pub overlap: f64,
}

/// The table's working sets, smallest first; empty when the table has no memory figures (then
/// no block is memory-bound).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryModel {
    pub levels: Vec<Level>,
    /// The host's cores (the `_all` figures were measured with this many streams).
    pub cores: f64,
    /// Ranks streaming at once on a rank's host (1: alone; `with_sharers`).
    pub sharers: f64,
}

/// What a block's references cost: the time and the slowest level that serves them.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryTime {
    pub ns: f64,
    /// The part of `ns` that stores take (write-allocate misses: see `Bounds::block_ns`).
    pub store_ns: f64,
    pub level: String,
    /// The slowest level's overlap exponent (`Level::overlap`).
    pub overlap: f64,
}

/// What the MTC's overlap kernel (a multiply-add per element streamed from a level, its
/// accumulator in L1) says about that level: the exponent q in [0, 1] for which the smooth
/// maximum `combine(core, stream, q)` of the core's time (`core`, the kernel at the L1 working
/// set) and the stream's (`stream`, the level's stream load) gives what the kernel took there
/// (`both`). 0: the larger alone (a perfect roofline); 1: their sum. A smooth maximum rather
/// than a fixed share of the smaller part: on this project's Intel VM, at 4 and 16 MiB, loops
/// with one, two and eight multiply-adds per streamed element ran 0.09-0.10, 0.05-0.06 and
/// 0.02-0.07 ns over the larger part (q from the first predicts the others within 5%; a fixed
/// share, within 9%). From memory (512 MiB) the loops with a chain of four and eight took 3 to
/// 5 ns per element, 2.5 to 4 times their core time, which neither form captures.
pub fn overlap_exponent(core: f64, stream: f64, both: f64) -> f64 {
    let (long, short) = (core.max(stream), core.min(stream));
    if short <= 0.0 || !both.is_finite() {
        return 0.0;
    }
    let (x, r) = (short / long, both / long);
    if r <= 1.0 {
        return 0.0;
    }
    if r >= 1.0 + x {
        return 1.0;
    }
    // (1 + x^(1/q))^q rises from 1 (q -> 0) to 1 + x (q = 1).
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..60 {
        let q = 0.5 * (lo + hi);
        if (1.0 + x.powf(1.0 / q)).powf(q) < r {
            lo = q;
        } else {
            hi = q;
        }
    }
    0.5 * (lo + hi)
}

/// How far past the larger of core and stream the overlap kernel must run before its excess
/// counts in full, as a share of the larger: twice the repeatability of the ratio of two
/// kernels' medians. On the AMD VM the kernel at L2, L2+ and L3 (streams a third of the core's
/// time) ran -3% to +6% past the core's time in three tables measured back to back, and the
/// exponents that excess implied (0 to 0.3) moved matmul_mw's prediction by 10%.
pub const OVERLAP_NOISE: f64 = 0.08;

/// The overlap kernel's time `both` with an excess over the larger part of less than
/// [`OVERLAP_NOISE`] shrunk towards none (quadratically: e / OVERLAP_NOISE * e, continuous at
/// the threshold); a larger excess is kept as measured.
pub fn beyond_noise(core: f64, stream: f64, both: f64) -> f64 {
    let long = core.max(stream);
    let e = both / long - 1.0;
    if long <= 0.0 || !(0.0..OVERLAP_NOISE).contains(&e) {
        return both;
    }
    long * (1.0 + e * e / OVERLAP_NOISE)
}

/// The smooth maximum of two times with exponent q (`overlap_exponent`): (a^(1/q) + b^(1/q))^q;
/// the larger alone at q = 0, their sum at 1.
pub fn combine(a: f64, b: f64, q: f64) -> f64 {
    let (long, short) = (a.max(b), a.min(b));
    if q <= 0.0 || short <= 0.0 {
        return long;
    }
    long * (1.0 + (short / long).powf(1.0 / q.min(1.0))).powf(q.min(1.0))
}

/// A line per access at a stride between a line and a page: from what a streamed line costs
/// (`streamed`, 8 streaming accesses: the prefetchers fetch ahead) at a line's stride to what
/// an unprefetched one does (`unprefetched`, the strided kernel) at a page's, geometrically in
/// the stride: the prefetchers follow strides within a page, fewer lines ahead the fewer of them
/// a page holds. Measured on this project's Intel VM (independent loads, 2026-12-02): from 256
/// MiB, 9.5, 16, 18 and 19 ns per access at 128, 256, 512 and 2048 bytes, against 6.1 at a
/// line and 18.7 a page and a line apart; from a 1 MiB set in L2, 0.65, 1.0, 0.99 and 0.88.
fn within_page(streamed: f64, unprefetched: f64, stride: f64) -> f64 {
    let t = ((stride / LINE).ln() / (PAGE / LINE).ln()).clamp(0.0, 1.0);
    if streamed > 0.0 && unprefetched > 0.0 {
        streamed * (unprefetched / streamed).powf(t)
    } else {
        streamed
    }
}

impl MemoryModel {
    /// The table's levels with `pick` of each figure (the median, or the spread's ends).
    pub fn from_table(t: &MachineTable, pick: fn(&Measure) -> f64) -> MemoryModel {
        let mut names: Vec<&str> = Vec::new();
        for m in &t.memory {
            if !names.contains(&m.level.as_str()) {
                names.push(&m.level);
            }
        }
        let caches: Vec<f64> = t.host.caches.iter().filter(|c| c.kind != "Instruction").map(|c| c.size_bytes as f64).collect();
        // The overlap kernel at the smallest working set is the core's time for its body.
        let core = names.first().and_then(|n| t.memory_cost(n, "overlap", "load")).map(|m| pick(&m.throughput));
        // The overlap exponent of the level just below, where its pure stream was not disturbed.
        let mut below_q: Option<f64> = None;
        let mut levels = Vec::new();
        for name in names {
            let get = |pattern: &str, access: &str| t.memory_cost(name, pattern, access);
            let (Some(sl), Some(ss), Some(rl), Some(rs)) = (get("stream", "load"), get("stream", "store"), get("random", "load"), get("random", "store")) else {
                continue;
            };
            let random_load = pick(&rl.throughput);
            let ws = sl.working_set_bytes as f64;
            // The overlap kernel streams the same bytes with work beside them: the level
            // delivers a stream at least that fast. A pure-load kernel slower than it was
            // disturbed (on this project's Intel VM, DRAM stream loads of 4.5 ns per 8 bytes in
            // one table, 1.0 on their own minutes later, while the overlap kernel took 0.95 and
            // 0.87), and the stream costs what the overlap kernel took.
            let ov = get("overlap", "load").map(|m| pick(&m.throughput));
            let slowdown = |taken: f64, all: f64, alone: f64| if alone > 0.0 { taken * (all / alone).max(1.0) } else { all.max(taken) };
            let capped = |pure: f64, beside: Option<f64>| match beside {
                Some(o) if o > 0.0 => pure.min(o),
                _ => pure,
            };
            let pure = pick(&sl.throughput);
            let mut stream_load = capped(pure, ov);
            // Stores likewise, by the kernel that streams them beside work.
            let pure_store = pick(&ss.throughput);
            let stream_store = capped(pure_store, get("overlap", "store").map(|m| pick(&m.throughput)));
            let stride_load = get("stride", "load").map_or(random_load, |m| pick(&m.throughput));
            let overlap = match (core, ov) {
                // A disturbed stream says nothing of how the level overlaps work: where the
                // level just below was not disturbed, its exponent, and the stream that it and
                // the overlap kernel imply (just past L2 on this project's Intel VM: pure
                // streams of 0.29 to 0.53 ns per 8 bytes in six tables, the overlap kernel 0.41
                // to 0.45; from 0.45 with L2's exponent of 0.57, 0.30). Further apart, levels
                // overlap differently (L3's exponent there was 0.1 where its stream was not
                // disturbed, L2's 0.57), and a disturbed stream is capped at the overlap
                // kernel, with an exponent of 0.
                (Some(c), Some(o)) if pure > o && o > c && below_q.is_some_and(|q| q > 0.0) => {
                    let q = below_q.take().unwrap_or(0.0);
                    stream_load = (o.powf(1.0 / q) - c.powf(1.0 / q)).powf(q).min(o);
                    q
                }
                (Some(c), Some(o)) => {
                    let q = overlap_exponent(c, stream_load, beyond_noise(c, stream_load, o));
                    below_q = (pure <= o).then_some(q);
                    q
                }
                _ => {
                    below_q = None;
                    0.0
                }
            };
            levels.push(Level {
                name: name.to_string(),
                ws,
                capacity: caches.iter().copied().filter(|c| *c >= ws).min_by(f64::total_cmp),
                stream_load,
                stream_store,
                random_load,
                random_store: pick(&rs.throughput),
                stride_load,
                stride2k_load: get("stride2k", "load").map_or(0.0, |m| pick(&m.throughput)),
                // With every core streaming: the slowdown the pure kernels measured (all cores
                // over one, at least 1) on the figure as taken for one core. A pure kernel
                // disturbed alone says nothing of what the cores' sharing costs (L3 stores of
                // 6.4 ns per 8 bytes alone and 2.7 with both cores in one table on the Intel
                // VM, the overlap kernel 0.62: the shared figure taken as it was made
                // stencil3d_torus +81% at 2 ranks).
                stream_load_all: get("stream_all_cores", "load").map(|m| slowdown(stream_load, pick(&m.throughput), pure)),
                stream_store_all: get("stream_all_cores", "store").map(|m| slowdown(stream_store, pick(&m.throughput), pure_store)),
                overlap,
            });
        }
        levels.sort_by(|a, b| a.ws.total_cmp(&b.ws));
        MemoryModel { levels, cores: t.host.cores.max(1) as f64, sharers: 1.0 }
    }

    /// The model for a rank whose host runs `ranks` ranks at once (capped at its cores): a
    /// shared level's stream figures move from the single core's towards the all-cores ones
    /// in proportion to the other cores streaming (the bandwidth the cores share, split).
    pub fn with_sharers(mut self, ranks: f64) -> MemoryModel {
        self.sharers = ranks.clamp(1.0, self.cores.max(1.0));
        self
    }

    /// A stream figure with `sharers` ranks streaming: the single core's at 1, the all-cores
    /// figure at every core, linear in between; never below the single core's.
    fn shared(&self, single: f64, all: Option<f64>) -> f64 {
        match all {
            Some(a) if self.cores > 1.0 && self.sharers > 1.0 => single + (a - single).max(0.0) * (self.sharers - 1.0) / (self.cores - 1.0),
            _ => single,
        }
    }

    /// The figures for data reused after `bytes`: none within the smallest working set (L1,
    /// where formula (1)'s loads and stores were measured); between two measured working sets,
    /// each figure interpolated geometrically in the working set's size up to the capacity of
    /// the cache that served the smaller one, and the larger one's figures once the data no
    /// longer fit there (35 MB reused past a 32 MiB L3 come from memory: interpolating from
    /// the L3 figure at 8 MiB to the memory one at 128 MiB costed them at half the memory's);
    /// past the largest, its figures. The name is the first measured level at or above `bytes`.
    /// What a local copy costs per byte by its size (`ReplayOptions::copy_ns_per_byte`): a
    /// copy of B bytes streams B in and B out, from the level that holds 2B, at its stream
    /// figures (ns per 8 bytes each way), as the host's ranks share them. At 1 rank here, an
    /// MPI_Alltoallv of 4 and 8 MiB to itself took 0.42-0.47 and 0.84-0.98 ms (about 0.1 ns per
    /// byte), which its simulation had charged nothing.
    pub fn copy_steps(&self) -> Vec<[f64; 2]> {
        self.levels.iter().map(|l| [l.ws / 2.0, (l.stream_load + l.stream_store) / 8.0]).collect()
    }

    pub fn level_for(&self, bytes: f64) -> Option<Level> {
        let first = self.levels.first()?;
        if bytes <= first.ws {
            return None;
        }
        let Some(k) = self.levels.iter().position(|l| bytes <= l.ws) else {
            return self.levels.last().cloned();
        };
        let (a, b) = (&self.levels[k - 1], &self.levels[k]);
        let end = a.capacity.map_or(b.ws, |c| c.min(b.ws));
        if bytes >= end {
            return Some(Level { ws: bytes, ..b.clone() });
        }
        let t = (bytes / a.ws).ln() / (end / a.ws).ln();
        let mix = |x: f64, y: f64| if x > 0.0 && y > 0.0 { x * (y / x).powf(t) } else { y };
        // A level the cores do not share streams alone at any rank count.
        let all = |x: Option<f64>, single: f64, y: Option<f64>| y.map(|y| mix(x.unwrap_or(single), y));
        Some(Level {
            name: b.name.clone(),
            ws: bytes,
            stream_load: mix(a.stream_load, b.stream_load),
            stream_store: mix(a.stream_store, b.stream_store),
            random_load: mix(a.random_load, b.random_load),
            random_store: mix(a.random_store, b.random_store),
            stride_load: mix(a.stride_load, b.stride_load),
            stride2k_load: if a.stride2k_load > 0.0 && b.stride2k_load > 0.0 { mix(a.stride2k_load, b.stride2k_load) } else { 0.0 },
            capacity: a.capacity,
            stream_load_all: all(a.stream_load_all, a.stream_load, b.stream_load_all),
            stream_store_all: all(a.stream_store_all, a.stream_store, b.stream_store_all),
            overlap: a.overlap + (b.overlap - a.overlap) * t,
        })
    }

    /// The memory time of one execution of a block with these references; None when none of
    /// them is served beyond L1.
    pub fn block_time(&self, refs: &[MemRef], env: &HashMap<String, f64>) -> Option<MemoryTime> {
        let mut ns = 0.0;
        let mut store_ns = 0.0;
        let mut slowest: Option<(f64, String, f64)> = None;
        for r in refs {
            let Some(reuse) = r.reuse_bytes.as_ref().and_then(|e| e.eval_map(env).ok()) else { continue };
            let count = r.count.eval_map(env).unwrap_or(0.0);
            let stride = match &r.stride {
                Some(s) => match s.eval_map(env) {
                    Ok(v) => Some(v.abs()),
                    Err(_) => continue,
                },
                None => None,
            };
            let Some(level) = self.level_for(reuse) else { continue };
            let (stream, random, strided) = match r.access {
                MemAccess::Load => (self.shared(level.stream_load, level.stream_load_all), level.random_load, level.stride_load),
                MemAccess::Store => (self.shared(level.stream_store, level.stream_store_all), level.random_store, level.random_store),
            };
            // A load stride of a power of two from 256 bytes up (4 lines or more): the lines
            // share a fraction of the cache's sets, and cost at least what the 2048-byte
            // column walk does.
            let conflicts = |per: f64| match stride {
                Some(s) if r.access == MemAccess::Load && s >= 256.0 && s.fract() == 0.0 && (s as u64).is_power_of_two() => per.max(level.stride2k_load),
                _ => per,
            };
            // A store to what the block also loads (`h[k]++`, `a[i] += x`) finds the line there:
            // only its write-back costs, half a streaming store; nothing at random.
            let rmw = r.access == MemAccess::Store
                && refs.iter().any(|o| o.access == MemAccess::Load && o.array == r.array && o.stride == r.stride && o.reuse_bytes == r.reuse_bytes);
            let per = match stride {
                Some(s) if s <= LINE => stream * s / 8.0,
                Some(s) if s < PAGE => within_page(stream * LINE / 8.0, if r.access == MemAccess::Load { strided } else { stream * LINE / 8.0 }, s),
                _ if rmw => 0.0,
                Some(_) => strided,
                None => random,
            };
            let per = if rmw { per / 2.0 } else { conflicts(per) };
            if per > 0.0 && count > 0.0 {
                ns += count * per;
                if r.access == MemAccess::Store {
                    store_ns += count * per;
                }
                if slowest.as_ref().is_none_or(|s| s.0 < level.ws) {
                    slowest = Some((level.ws, level.name.clone(), level.overlap));
                }
            }
        }
        slowest.map(|s| MemoryTime { ns, store_ns, level: s.1, overlap: s.2 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::expr::Expr;

    fn model() -> MemoryModel {
        let level = |name: &str, ws: f64, k: f64| Level {
            name: name.into(),
            ws,
            stream_load: k,
            stream_store: k,
            random_load: 10.0 * k,
            random_store: 5.0 * k,
            stride_load: 32.0 * k,
            stride2k_load: 20.0 * k,
            capacity: None,
            stream_load_all: None,
            stream_store_all: None,
            overlap: 0.0,
        };
        MemoryModel { levels: vec![level("L1", 1024.0, 0.1), level("L2", 4096.0, 0.4), level("DRAM", 65536.0, 1.6)], cores: 1.0, sharers: 1.0 }
    }

    #[test]
    fn an_overlap_excess_within_the_kernels_noise_counts_little_and_a_larger_one_in_full() {
        // Core 0.58, stream 0.2: the kernel 3% past the core is almost none, 6% a little.
        let (c, st) = (0.58, 0.2);
        assert!((beyond_noise(c, st, c * 1.03) / c - 1.0 - 0.03 * 0.03 / OVERLAP_NOISE).abs() < 1e-12);
        // The exponent moves fast near no excess (0.32 for 1.1%, 0.41 for 3%): the shrunk
        // excess is what keeps a table's noise out of it.
        assert!(overlap_exponent(c, st, beyond_noise(c, st, c * 1.03)) < overlap_exponent(c, st, c * 1.03) - 0.05);
        // Below the larger part and past the threshold: unchanged; continuous at it.
        assert_eq!(beyond_noise(c, st, 0.55), 0.55);
        assert_eq!(beyond_noise(0.58, 0.9, 1.1), 1.1);
        let at = c * (1.0 + OVERLAP_NOISE);
        assert!((beyond_noise(c, st, at * (1.0 - 1e-12)) - at).abs() < 1e-9);
    }

    fn r(access: MemAccess, stride: Option<f64>, reuse: f64) -> MemRef {
        MemRef {
            array: "a".into(),
            access,
            count: Expr::int(1),
            elem_bytes: 8,
            stride: stride.map(|s| Expr::int(s as i128)),
            reuse_bytes: Some(Expr::int(reuse as i128)),
            at: Vec::new(),
        }
    }

    /// Within the L1 working set nothing; between two working sets the geometric mean at the
    /// midpoint (in log size); past the largest, its figures.
    #[test]
    fn figures_are_interpolated_between_working_sets() {
        let m = model();
        assert!(m.level_for(512.0).is_none());
        let mid = m.level_for(2048.0).unwrap();
        assert_eq!(mid.name, "L2");
        assert!((mid.stream_load - (0.1f64 * 0.4).sqrt()).abs() < 1e-12);
        let far = m.level_for(1e9).unwrap();
        assert_eq!((far.name.as_str(), far.stream_load), ("DRAM", 1.6));
    }

    /// The L2 figures were measured at 4096 bytes in a cache of 8192: from 4096 to 8192 the
    /// figures go from L2's to DRAM's (halfway at 5793, the geometric midpoint), past 8192
    /// the data come from DRAM; a level without a capacity interpolates to the next one.
    #[test]
    fn data_past_a_caches_capacity_cost_the_next_level() {
        let mut m = model();
        m.levels[1].capacity = Some(8192.0);
        let mid = m.level_for((4096.0f64 * 8192.0).sqrt()).unwrap();
        assert!((mid.stream_load - (0.4f64 * 1.6).sqrt()).abs() < 1e-12, "{mid:?}");
        let past = m.level_for(8192.0).unwrap();
        assert_eq!((past.name.as_str(), past.stream_load), ("DRAM", 1.6));
        let further = m.level_for(16384.0).unwrap();
        assert_eq!(further.stream_load, 1.6);
        m.levels[1].capacity = None;
        assert!(m.level_for(16384.0).unwrap().stream_load < 1.6);
    }

    /// A shared level's stream figures with every core streaming (here 4 cores, DRAM's all-cores
    /// figure four times its single one): alone the single figure, at 4 ranks the all-cores one,
    /// at 2 a third of the way; capped at the cores; a level without the figure, or a random
    /// access, never changes.
    #[test]
    fn shared_streams_slow_down_with_the_ranks_on_a_host() {
        let mut m = model();
        m.cores = 4.0;
        m.levels[2].stream_load_all = Some(6.4);
        let env = HashMap::new();
        let per = |m: &MemoryModel, stride: Option<f64>| m.block_time(&[r(MemAccess::Load, stride, 1e6)], &env).unwrap().ns;
        assert!((per(&m, Some(8.0)) - 1.6).abs() < 1e-12);
        assert!((per(&m.clone().with_sharers(4.0), Some(8.0)) - 6.4).abs() < 1e-12);
        assert!((per(&m.clone().with_sharers(64.0), Some(8.0)) - 6.4).abs() < 1e-12);
        assert!((per(&m.clone().with_sharers(2.0), Some(8.0)) - (1.6 + 4.8 / 3.0)).abs() < 1e-12);
        assert!((per(&m.clone().with_sharers(4.0), None) - 16.0).abs() < 1e-12, "random: unchanged");
        let at = |m: &MemoryModel| m.block_time(&[r(MemAccess::Load, Some(8.0), 3000.0)], &env).unwrap().ns;
        assert_eq!(at(&m.clone().with_sharers(4.0)), at(&m), "a level without the figure");
    }

    /// Per access at DRAM: stride 4 is half a streaming figure, a line 8 figures, a page the
    /// strided figure (geometrically between them within a page), data-dependent the random one; a store to what is also loaded at
    /// random is free, streaming half.
    #[test]
    fn cost_per_access_follows_the_stride() {
        let m = model();
        let env = HashMap::new();
        let one = |x: MemRef| m.block_time(&[x], &env).map_or(0.0, |t| t.ns);
        let far = 1e6;
        assert!((one(r(MemAccess::Load, Some(4.0), far)) - 0.8).abs() < 1e-12);
        // Within a page, from a streamed line (8 figures, 12.8) at 64 bytes to the strided
        // kernel's 51.2 at 4 KiB, geometrically in the stride: 384 bytes is log(6)/log(64)
        // of the way, 128 a sixth.
        assert!((one(r(MemAccess::Load, Some(64.0), far)) - 12.8).abs() < 1e-12);
        assert!((one(r(MemAccess::Load, Some(384.0), far)) - 12.8 * 4f64.powf(6f64.ln() / 64f64.ln())).abs() < 1e-9);
        assert!((one(r(MemAccess::Load, Some(128.0), far)) - 12.8 * 4f64.powf(1.0 / 6.0)).abs() < 1e-9);
        // A power of two from 256 bytes: at least the 2048-byte column walk's 32.
        assert!((one(r(MemAccess::Load, Some(512.0), far)) - 32.0).abs() < 1e-9);
        assert!((one(r(MemAccess::Load, Some(8192.0), far)) - 51.2).abs() < 1e-12);
        assert!((one(r(MemAccess::Load, Some(4160.0), far)) - 51.2).abs() < 1e-12);
        assert!((one(r(MemAccess::Store, Some(512.0), far)) - 12.8).abs() < 1e-12, "stores: a streamed line");
        assert!((one(r(MemAccess::Load, None, far)) - 16.0).abs() < 1e-12);
        assert_eq!(one(r(MemAccess::Load, Some(0.0), far)), 0.0);
        let rmw = m.block_time(&[r(MemAccess::Load, None, far), r(MemAccess::Store, None, far)], &env).unwrap();
        assert!((rmw.ns - 16.0).abs() < 1e-12 && rmw.level == "DRAM");
        let stream = m.block_time(&[r(MemAccess::Load, Some(8.0), far), r(MemAccess::Store, Some(8.0), far)], &env).unwrap();
        assert!((stream.ns - (1.6 + 0.8)).abs() < 1e-12);
        assert!(m.block_time(&[r(MemAccess::Load, Some(8.0), 100.0)], &env).is_none(), "L1: nothing");
    }

    /// The overlap kernel's exponent: 0 when it ran at the longer of core and stream (a perfect
    /// roofline), 1 at their sum, log2(4/3) for equal parts a third over; the smooth maximum
    /// with it gives back what the kernel took; clamped (a kernel faster than either part, or
    /// slower than both together, says nothing more), 0 when a part is unknown.
    #[test]
    fn overlap_exponent_gives_back_what_the_kernel_took() {
        assert_eq!(overlap_exponent(0.3, 0.2, 0.3), 0.0);
        assert_eq!(overlap_exponent(0.3, 0.2, 0.5), 1.0);
        assert!((overlap_exponent(0.3, 0.3, 0.4) - (4.0f64 / 3.0).log2()).abs() < 1e-9);
        let q = overlap_exponent(0.2, 0.9, 1.0);
        assert!(q > 0.0 && q < 1.0 && (combine(0.2, 0.9, q) - 1.0).abs() < 1e-9, "memory the longer part: {q}");
        assert_eq!(overlap_exponent(0.3, 0.2, 0.25), 0.0);
        assert_eq!(overlap_exponent(0.3, 0.2, 0.9), 1.0);
        assert_eq!(overlap_exponent(0.3, 0.0, 0.4), 0.0);
        assert_eq!(overlap_exponent(0.3, 0.2, f64::NAN), 0.0);
        assert_eq!((combine(0.3, 0.2, 0.0), combine(0.3, 0.2, 1.0), combine(0.3, 0.0, 0.5)), (0.3, 0.5, 0.3));
        // Far from balance little shows: a part a tenth of the other adds 0.5% at q = 1/2.
        assert!((combine(1.0, 0.1, 0.5) - 1.01f64.sqrt()).abs() < 1e-12);
    }

    /// Between two working sets the exponent moves linearly in the same log-size position as
    /// the other figures, and the slowest level's comes with a block's memory time.
    #[test]
    fn overlap_follows_the_level_of_the_slowest_reference() {
        let mut m = model();
        m.levels[1].overlap = 0.2;
        m.levels[2].overlap = 0.6;
        let mid = m.level_for((4096.0f64 * 65536.0).sqrt()).unwrap();
        assert!((mid.overlap - 0.4).abs() < 1e-12, "{mid:?}");
        let env = HashMap::new();
        let t = m.block_time(&[r(MemAccess::Load, Some(8.0), 4096.0), r(MemAccess::Load, Some(8.0), 1e6)], &env).unwrap();
        assert_eq!((t.level.as_str(), t.overlap), ("DRAM", 0.6));
    }

    /// The fixture machine table (tests/fixtures/machine/fixed.json).
    fn fixture_table() -> MachineTable {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/machine/fixed.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// An overlap-kernel figure of `ns` at `level`, shaped as the level's stream load entry.
    fn add_overlap(t: &mut MachineTable, level: &str, ns: f64) {
        let mut m = t.memory_cost(level, "stream", "load").unwrap().clone();
        m.pattern = "overlap".into();
        m.throughput.ns_per_op = ns;
        t.memory.push(m);
    }

    /// From a table (the fixture's, overlap figures added): the exponent per level from the
    /// kernel at L1 (the core, 1 ns) and at the level; at DRAM the overlap kernel (0.2 ns) ran
    /// faster than the table's stream loads (0.2713 ns): the stream costs 0.2 and nothing
    /// shows beyond it, and its store kernel beside work (0.25 ns) caps the stream stores
    /// (0.2778); L1 keeps its own stream figure.
    #[test]
    fn the_overlap_kernel_sets_the_exponent_and_caps_a_disturbed_stream() {
        let mut t = fixture_table();
        let before = MemoryModel::from_table(&t, |m| m.ns_per_op);
        assert!(before.levels.iter().all(|l| l.overlap == 0.0), "no overlap figures: an exponent of 0");
        // L2's stream at half the core's time: the kernel's excess (12%) past OVERLAP_NOISE.
        let l2: f64 = 0.5;
        for m in t.memory.iter_mut().filter(|m| m.level == "L2" && m.pattern == "stream" && m.access == "load") {
            m.throughput.ns_per_op = l2;
        }
        add_overlap(&mut t, "L1", 1.0);
        add_overlap(&mut t, "L2", (1.0 + l2 * l2).sqrt());
        add_overlap(&mut t, "DRAM", 0.2);
        let mut store = t.memory_cost("DRAM", "stream", "store").unwrap().clone();
        store.pattern = "overlap".into();
        store.throughput.ns_per_op = 0.25;
        t.memory.push(store);
        let m = MemoryModel::from_table(&t, |m| m.ns_per_op);
        let level = |name: &str| m.levels.iter().find(|l| l.name == name).unwrap().clone();
        assert_eq!(level("L1").stream_load, 0.06123427844176107);
        assert!((level("L2").overlap - 0.5).abs() < 1e-9, "{:?}", level("L2"));
        assert_eq!(level("L3").overlap, 0.0, "no figure at L3");
        assert_eq!((level("DRAM").stream_load, level("DRAM").overlap), (0.2, 0.0));
        assert_eq!(level("DRAM").stream_store, 0.25, "its stores by the store kernel beside work (0.25 < 0.2778)");
        assert_eq!(level("L3").stream_store, 0.124065084342808, "no store kernel at L3: the pure figure");
    }

    /// A disturbed stream (pure figure above the overlap kernel's) just above a level that was
    /// not: that level's exponent, and the stream it implies. The fixture's L3 stream set to 2 ns
    /// with an overlap kernel of 1.5 ns over the core's 1 ns, L2's exponent 1/2: the stream is
    /// sqrt(1.5^2 - 1), the exponent 1/2. DRAM (its overlap kernel 1.2 ns, its stream 2) above
    /// the disturbed L3 is capped: (1.2, 0).
    #[test]
    fn a_disturbed_stream_takes_the_exponent_of_the_level_below() {
        let mut t = fixture_table();
        // L2's stream at half the core's time: the kernel's excess (12%) past OVERLAP_NOISE.
        let l2: f64 = 0.5;
        for m in t.memory.iter_mut().filter(|m| m.level == "L2" && m.pattern == "stream" && m.access == "load") {
            m.throughput.ns_per_op = l2;
        }
        add_overlap(&mut t, "L1", 1.0);
        add_overlap(&mut t, "L2", (1.0 + l2 * l2).sqrt());
        add_overlap(&mut t, "L3", 1.5);
        add_overlap(&mut t, "DRAM", 1.2);
        for m in t.memory.iter_mut().filter(|m| m.pattern == "stream" && m.access == "load" && (m.level == "L3" || m.level == "DRAM")) {
            m.throughput.ns_per_op = 2.0;
        }
        let m = MemoryModel::from_table(&t, |m| m.ns_per_op);
        let level = |name: &str| m.levels.iter().find(|l| l.name == name).unwrap().clone();
        assert!((level("L2").overlap - 0.5).abs() < 1e-9, "{:?}", level("L2"));
        let l3 = level("L3");
        assert!((l3.overlap - 0.5).abs() < 1e-9 && (l3.stream_load - 1.25f64.sqrt()).abs() < 1e-6, "{l3:?}");
        assert!((combine(1.0, l3.stream_load, l3.overlap) - 1.5).abs() < 1e-6, "the kernel's own time back");
        assert_eq!((level("DRAM").stream_load, level("DRAM").overlap), (1.2, 0.0));
    }
}
