//! A trace directory from `mpicast trace`, read once: its analysis, the run's description, the
//! number of ranks and every rank's trace as a tree (loops kept), checked as
//! [`super::validate_dir`] checks them in the same pass. A prediction scales and costs from the
//! trees; a sweep opens the set once and predicts every point from it.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::model::analysis::ProgramModel;
use crate::model::expr::{Expr, Rat};
use crate::model::trace::TraceMeta;

use super::fold::Item;
use super::TraceError;

/// A trace directory in memory. The rank files are read on the first call of
/// [`TraceSet::traces`] (after what the analysis and meta.json say has been checked: an
/// incomplete trace is refused for being incomplete before its files are parsed).
pub struct TraceSet {
    pub dir: PathBuf,
    /// analysis.json: the program's analysis when it was traced.
    pub model: ProgramModel,
    /// meta.json, when there is one.
    pub meta: Option<TraceMeta>,
    /// rank-0.trace .. rank-(ranks-1).trace.
    pub ranks: u32,
    traces: OnceCell<Result<Vec<Vec<Item>>, TraceError>>,
}

impl TraceSet {
    /// Reads analysis.json and meta.json and counts the rank files (none of them read yet).
    pub fn open(dir: &Path) -> Result<TraceSet> {
        let mut model: ProgramModel = crate::model::read_artifact(&dir.join("analysis.json"))
            .with_context(|| format!("{}: not a trace directory from mpicast trace", dir.display()))?;
        let meta: Option<TraceMeta> = match dir.join("meta.json") {
            p if p.is_file() => Some(crate::model::read_artifact(&p)?),
            _ => None,
        };
        if let Some(m) = &meta {
            measured_footprints(&mut model, m);
            measured_calls(&mut model, m);
            measured_exits(&mut model, m);
        }
        let ranks = super::discover(dir)?;
        Ok(TraceSet { dir: dir.to_path_buf(), model, meta, ranks, traces: OnceCell::new() })
    }

    /// Every rank's tree, in rank order: the files are read and checked on the first call,
    /// once; the first problem (file:line: message) is the answer of every call.
    pub fn traces(&self) -> Result<&[Vec<Item>], TraceError> {
        self.traces
            .get_or_init(|| {
                let dir = super::pack::TraceDir::open(&self.dir)?;
                (0..self.ranks).map(|r| super::read_rank_checked(&dir, r, self.ranks)).collect()
            })
            .as_deref()
            .map_err(Clone::clone)
    }
}

/// The irregular references as the traced run measured them: the range of addresses each
/// touched is its reuse distance, in place of the size the analysis found (an array's
/// declaration or allocation) or left unknown (a table indexed at random is served by the
/// cache that holds the part of it the run touched), and only the accesses that did not find
/// their line just touched count as accesses at random (a few streams through a large array,
/// `out[fill[b]++] = x`, fetch a line per 64 bytes, not per access).
///
/// An element updated where it is read (`h[k]++`, `h[k] += x`) at an index the data chooses
/// is a chain through memory when the range holds few elements: each update's load waits for
/// the store of the update before it to the same element (store-to-load forwarding), one
/// update in E for a range of E elements (`send_counts[owner(key)]++` at one rank: every one).
pub fn measured_footprints(model: &mut ProgramModel, meta: &TraceMeta) {
    use crate::model::analysis::{Chain, MemAccess};
    use crate::model::ops::OpClass;
    for f in &meta.footprints {
        let Some(b) = model.blocks.get_mut(f.block as usize) else { continue };
        let Some(r) = b.mem.get(f.mem as usize) else { continue };
        if r.stride.is_some() {
            continue;
        }
        let elements = (f.bytes / u64::from(r.elem_bytes.max(1))).max(1);
        let updated = r.access == MemAccess::Store && b.mem.iter().any(|o| o.access == MemAccess::Load && o.array == r.array && o.at == r.at);
        if updated && elements <= UPDATE_CHAIN_ELEMENTS {
            let var = format!("*{}[]", r.array);
            if !b.chains.iter().any(|c| c.var == var) {
                b.chains.push(Chain { var, ops: vec![OpClass::Load, OpClass::IntAdd], share: 1.0 / elements as f64 });
            }
        }
        let r = &mut b.mem[f.mem as usize];
        r.reuse_bytes = Some(Expr::int(i128::from(f.bytes)));
        let missed = ((1.0 - f.line_reuse.clamp(0.0, 1.0)) * 1e4).round() as i128;
        r.count = r.count.clone().mul(Expr::rat(Rat::new(missed, 10_000)));
    }
}

/// Tables of more elements than this hold no update behind another often enough to matter
/// (the chain's share, 1/E, is then below 2%).
const UPDATE_CHAIN_ELEMENTS: u64 = 64;

/// The counted loops' missed exits per entry, as the traced run measured them, where the
/// analysis has no figure of its own (a trip it could not count): a trip it counted keeps its
/// formula, at any number of ranks, as the static path gives it.
pub fn measured_exits(model: &mut ProgramModel, meta: &TraceMeta) {
    for l in meta.loop_exits.iter().filter(|l| l.entries > 0) {
        let Some(b) = model.blocks.get_mut(l.block as usize).filter(|b| b.exit_misses.is_none()) else { continue };
        let share = (l.misses.min(l.entries) as f64 / l.entries as f64 * 4096.0).round() as i128;
        b.exit_misses = Some(Expr::rat(Rat::new(share, 4096)));
    }
}

/// The calls into code the analysis does not see, as the traced run timed them: each costs
/// its measured mean per execution of its block, where the analysis has one `call` op. A call
/// measured below what timing costs keeps its `call` op alone: the timing's error (the clock
/// and the counters cold in the caller's loop, where they were warm when calibrated) is as
/// large as the call.
pub fn measured_calls(model: &mut ProgramModel, meta: &TraceMeta) {
    for c in meta.calls.iter().filter(|c| c.ns >= c.clock_ns) {
        let Some(o) = model.blocks.get_mut(c.block as usize).and_then(|b| b.opaque.get_mut(c.call as usize)) else { continue };
        if o.func == c.func {
            o.ns = Some(c.ns);
        }
    }
}
