//! The memory bound of a block (a roofline per block): its array references (front end,
//! `MemRef`) priced by the machine table's memory kernels at the cache level their reuse
//! distance falls in. A block takes the larger of its op time (formula 1) and its memory time.
//!
//! Per access, with the figures the MTC measured at the working set of the reuse distance's
//! size (interpolated between the working sets it measured: half of L1, half of L2, just past
//! L2, a quarter of L3, past L3):
//! - stride 0: the same element, a register or L1 (no memory time);
//! - stride up to a line (64 B): the streaming cost per 8 bytes times stride / 8;
//! - stride over a line, under a page (4 KiB): a line per access, 8 streaming costs (the
//!   prefetchers follow constant strides within a page);
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
    /// Bytes of the cache that served the working set (the smallest data or unified cache the
    /// host has of at least `ws`); None past the last cache or where the table does not say.
    pub capacity: Option<f64>,
}

/// The table's working sets, smallest first; empty when the table has no memory figures (then
/// no block is memory-bound).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryModel {
    pub levels: Vec<Level>,
}

/// What a block's references cost: the time and the slowest level that serves them.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryTime {
    pub ns: f64,
    /// The part of `ns` that stores take (write-allocate misses: see `Bounds::block_ns`).
    pub store_ns: f64,
    pub level: String,
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
        let mut levels = Vec::new();
        for name in names {
            let get = |pattern: &str, access: &str| t.memory_cost(name, pattern, access);
            let (Some(sl), Some(ss), Some(rl), Some(rs)) = (get("stream", "load"), get("stream", "store"), get("random", "load"), get("random", "store")) else {
                continue;
            };
            let random_load = pick(&rl.throughput);
            let ws = sl.working_set_bytes as f64;
            levels.push(Level {
                name: name.to_string(),
                ws,
                capacity: caches.iter().copied().filter(|c| *c >= ws).min_by(f64::total_cmp),
                stream_load: pick(&sl.throughput),
                stream_store: pick(&ss.throughput),
                random_load,
                random_store: pick(&rs.throughput),
                stride_load: get("stride", "load").map_or(random_load, |m| pick(&m.throughput)),
            });
        }
        levels.sort_by(|a, b| a.ws.total_cmp(&b.ws));
        MemoryModel { levels }
    }

    /// The figures for data reused after `bytes`: none within the smallest working set (L1,
    /// where formula (1)'s loads and stores were measured); between two measured working sets,
    /// each figure interpolated geometrically in the working set's size up to the capacity of
    /// the cache that served the smaller one, and the larger one's figures once the data no
    /// longer fit there (35 MB reused past a 32 MiB L3 come from memory: interpolating from
    /// the L3 figure at 8 MiB to the memory one at 128 MiB costed them at half the memory's);
    /// past the largest, its figures. The name is the first measured level at or above `bytes`.
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
        Some(Level {
            name: b.name.clone(),
            ws: bytes,
            stream_load: mix(a.stream_load, b.stream_load),
            stream_store: mix(a.stream_store, b.stream_store),
            random_load: mix(a.random_load, b.random_load),
            random_store: mix(a.random_store, b.random_store),
            stride_load: mix(a.stride_load, b.stride_load),
            capacity: a.capacity,
        })
    }

    /// The memory time of one execution of a block with these references; None when none of
    /// them is served beyond L1.
    pub fn block_time(&self, refs: &[MemRef], env: &HashMap<String, f64>) -> Option<MemoryTime> {
        let mut ns = 0.0;
        let mut store_ns = 0.0;
        let mut slowest: Option<(f64, String)> = None;
        for r in refs {
            let Some(reuse) = r.reuse_bytes.as_ref().and_then(|e| e.eval_map(env).ok()) else { continue };
            let Some(level) = self.level_for(reuse) else { continue };
            let count = r.count.eval_map(env).unwrap_or(0.0);
            let stride = match &r.stride {
                Some(s) => match s.eval_map(env) {
                    Ok(v) => Some(v.abs()),
                    Err(_) => continue,
                },
                None => None,
            };
            let (stream, random, strided) = match r.access {
                MemAccess::Load => (level.stream_load, level.random_load, level.stride_load),
                MemAccess::Store => (level.stream_store, level.random_store, level.random_store),
            };
            // A store to what the block also loads (`h[k]++`, `a[i] += x`) finds the line there:
            // only its write-back costs, half a streaming store; nothing at random.
            let rmw = r.access == MemAccess::Store
                && refs.iter().any(|o| o.access == MemAccess::Load && o.array == r.array && o.stride == r.stride && o.reuse_bytes == r.reuse_bytes);
            let per = match stride {
                Some(s) if s <= LINE => stream * s / 8.0,
                Some(s) if s < PAGE => stream * LINE / 8.0,
                _ if rmw => 0.0,
                Some(_) => strided,
                None => random,
            };
            let per = if rmw { per / 2.0 } else { per };
            if per > 0.0 && count > 0.0 {
                ns += count * per;
                if r.access == MemAccess::Store {
                    store_ns += count * per;
                }
                if slowest.as_ref().is_none_or(|s| s.0 < level.ws) {
                    slowest = Some((level.ws, level.name.clone()));
                }
            }
        }
        slowest.map(|s| MemoryTime { ns, store_ns, level: s.1 })
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
            stride_load: 8.0 * k,
            capacity: None,
        };
        MemoryModel { levels: vec![level("L1", 1024.0, 0.1), level("L2", 4096.0, 0.4), level("DRAM", 65536.0, 1.6)] }
    }

    fn r(access: MemAccess, stride: Option<f64>, reuse: f64) -> MemRef {
        MemRef {
            array: "a".into(),
            access,
            count: Expr::int(1),
            elem_bytes: 8,
            stride: stride.map(|s| Expr::int(s as i128)),
            reuse_bytes: Some(Expr::int(reuse as i128)),
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

    /// Per access at DRAM: stride 4 is half a streaming figure, 256 a line (8 figures), a page
    /// the strided figure, data-dependent the random one; a store to what is also loaded at
    /// random is free, streaming half.
    #[test]
    fn cost_per_access_follows_the_stride() {
        let m = model();
        let env = HashMap::new();
        let one = |x: MemRef| m.block_time(&[x], &env).map_or(0.0, |t| t.ns);
        let far = 1e6;
        assert!((one(r(MemAccess::Load, Some(4.0), far)) - 0.8).abs() < 1e-12);
        assert!((one(r(MemAccess::Load, Some(256.0), far)) - 12.8).abs() < 1e-12);
        assert!((one(r(MemAccess::Load, Some(8192.0), far)) - 12.8).abs() < 1e-12);
        assert!((one(r(MemAccess::Load, None, far)) - 16.0).abs() < 1e-12);
        assert_eq!(one(r(MemAccess::Load, Some(0.0), far)), 0.0);
        let rmw = m.block_time(&[r(MemAccess::Load, None, far), r(MemAccess::Store, None, far)], &env).unwrap();
        assert!((rmw.ns - 16.0).abs() < 1e-12 && rmw.level == "DRAM");
        let stream = m.block_time(&[r(MemAccess::Load, Some(8.0), far), r(MemAccess::Store, Some(8.0), far)], &env).unwrap();
        assert!((stream.ns - (1.6 + 0.8)).abs() < 1e-12);
        assert!(m.block_time(&[r(MemAccess::Load, Some(8.0), 100.0)], &env).is_none(), "L1: nothing");
    }
}
