//! The memory bound of a block (a roofline per block): its array references (front end,
//! `MemRef`) priced by the machine table's memory kernels at the cache level their reuse
//! distance falls in. A block takes the larger of its op time (formula 1) and its memory time.
//!
//! Per access, at the first level whose half holds the reuse distance (the other half goes to
//! other data, code and conflicts; the MTC's own working sets are half a cache):
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

/// One level of the hierarchy with its measured costs in ns per 8-byte access.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub name: String,
    /// Bytes it holds (f64::INFINITY for DRAM).
    pub capacity: f64,
    pub stream_load: f64,
    pub stream_store: f64,
    pub random_load: f64,
    pub random_store: f64,
    /// Loads a page apart; tables measured before the kernel existed use random_load.
    pub stride_load: f64,
}

/// The levels of a machine table, smallest first; empty when the table has no memory figures
/// (then no block is memory-bound).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryModel {
    pub levels: Vec<Level>,
}

/// What a block's references cost: the time and the slowest level that serves them.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryTime {
    pub ns: f64,
    pub level: String,
}

impl MemoryModel {
    /// The table's levels with `pick` of each figure (the median, or the spread's ends).
    pub fn from_table(t: &MachineTable, pick: fn(&Measure) -> f64) -> MemoryModel {
        let mut levels = Vec::new();
        for name in ["L1", "L2", "L3", "DRAM"] {
            let get = |pattern: &str, access: &str| t.memory_cost(name, pattern, access).map(|m| pick(&m.throughput));
            let (Some(sl), Some(ss), Some(rl), Some(rs)) = (get("stream", "load"), get("stream", "store"), get("random", "load"), get("random", "store")) else {
                continue;
            };
            let capacity = match name {
                "DRAM" => f64::INFINITY,
                _ => {
                    let n: u32 = name[1..].parse().unwrap_or(0);
                    let size = t.host.caches.iter().filter(|c| c.level == n && c.kind != "Instruction").map(|c| c.size_bytes).max();
                    // Without /sys figures: the kernel's working set, half the cache.
                    let ws = t.memory.iter().find(|m| m.level == name).map(|m| m.working_set_bytes * 2);
                    match size.or(ws) {
                        Some(b) => b as f64,
                        None => continue,
                    }
                }
            };
            let stride_load = get("stride", "load").unwrap_or(rl);
            levels.push(Level { name: name.into(), capacity, stream_load: sl, stream_store: ss, random_load: rl, random_store: rs, stride_load });
        }
        MemoryModel { levels }
    }

    /// The level that serves data reused after `bytes`: the first whose half holds them.
    pub fn level_for(&self, bytes: f64) -> Option<usize> {
        self.levels.iter().position(|l| bytes <= l.capacity / 2.0)
    }

    /// The memory time of one execution of a block with these references; None when none of
    /// them is served beyond L1.
    pub fn block_time(&self, refs: &[MemRef], env: &HashMap<String, f64>) -> Option<MemoryTime> {
        let l1 = self.levels.first()?;
        let mut ns = 0.0;
        let mut slowest: Option<usize> = None;
        for r in refs {
            let Some(reuse) = r.reuse_bytes.as_ref().and_then(|e| e.eval_map(env).ok()) else { continue };
            let Some(li) = self.level_for(reuse) else { continue };
            let level = &self.levels[li];
            if level.name == l1.name {
                continue;
            }
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
                slowest = Some(slowest.map_or(li, |s| s.max(li)));
            }
        }
        slowest.map(|s| MemoryTime { ns, level: self.levels[s].name.clone() })
    }
}
