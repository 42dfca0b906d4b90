//! A trace directory from `mpicast trace`, read once: its analysis, the run's description, the
//! number of ranks and every rank's trace as a tree (loops kept), checked as
//! [`super::validate_dir`] checks them in the same pass. A prediction scales and costs from the
//! trees; a sweep opens the set once and predicts every point from it.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::model::analysis::ProgramModel;
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
        let model: ProgramModel = crate::model::read_artifact(&dir.join("analysis.json"))
            .with_context(|| format!("{}: not a trace directory from mpicast trace", dir.display()))?;
        let meta: Option<TraceMeta> = match dir.join("meta.json") {
            p if p.is_file() => Some(crate::model::read_artifact(&p)?),
            _ => None,
        };
        let ranks = super::discover(dir)?;
        Ok(TraceSet { dir: dir.to_path_buf(), model, meta, ranks, traces: OnceCell::new() })
    }

    /// Every rank's tree, in rank order: the files are read and checked on the first call,
    /// once; the first problem (file:line: message) is the answer of every call.
    pub fn traces(&self) -> Result<&[Vec<Item>], TraceError> {
        self.traces
            .get_or_init(|| (0..self.ranks).map(|r| super::read_rank_checked(&self.dir, r, self.ranks)).collect())
            .as_deref()
            .map_err(Clone::clone)
    }
}
