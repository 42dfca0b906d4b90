//! Simulation through SimGrid: the bindings (ffi), their safe wrappers (engine), the in-process
//! job runner (job), the trace replay with MPI semantics (replay, coll) and the child-process
//! driver (child). Unsafe code is allowed in two files only: the bindings (ffi) and their safe
//! wrappers (engine); everything else here, as in the rest of the crate, is safe Rust.

#[allow(unsafe_code)]
mod ffi;

pub mod analytic;
pub mod bench;
pub mod child;
mod coll;
pub mod fold;
#[allow(unsafe_code)]
pub mod engine;
pub mod job;
pub mod replay;
pub mod replay_dir;
mod queue;
mod unexpected;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::model::trace::{Mapping, ReplayJob, ReplayOptions, ReplayResult, TraceAction};

/// Where a replay's per-rank actions come from.
pub enum TraceSource {
    /// A directory of `rank-<R>.trace` files (traces/FORMAT.md).
    Dir(PathBuf),
    /// A directory of traces this process wrote with `TraceWriter` (the static path's
    /// skeletons, costed or scaled traces): not read through once more to be validated
    /// (65,536 scaled ranks of pi_dartboard: a second).
    Written(PathBuf),
    /// Actions in memory, one list per rank (written to a temporary directory for the child).
    Actions(Vec<Vec<TraceAction>>),
}

/// Replays traces on a platform in a child `mpicast simulate --replay` process: the predictor's
/// entry point. The traces are validated first (an error names file:line); a trace that
/// deadlocks fails with the ranks and the operations they wait for.
pub fn replay(
    source: &TraceSource,
    platform: &Path,
    mapping: Mapping,
    cfg: Vec<String>,
    options: ReplayOptions,
) -> Result<ReplayResult> {
    let tmp;
    let dir = match source {
        TraceSource::Dir(d) | TraceSource::Written(d) => d.clone(),
        TraceSource::Actions(ranks) => {
            tmp = tempfile::Builder::new()
                .prefix("mpicast-trace")
                .tempdir()
                .context("cannot create a temporary directory")?;
            let n = ranks.len() as u32;
            for (r, actions) in ranks.iter().enumerate() {
                let mut w = crate::trace::TraceWriter::create(tmp.path(), r as u32, n)
                    .with_context(|| format!("{}: cannot write", tmp.path().display()))?;
                for a in actions {
                    w.action(a)?;
                }
                w.finish()?;
            }
            tmp.path().to_path_buf()
        }
    };
    crate::platform::check_platform(platform)?;
    let ranks = crate::trace::discover(&dir)?;
    if !matches!(source, TraceSource::Written(_)) {
        crate::trace::validate_dir(&dir, ranks)?;
    }
    let job = ReplayJob {
        trace_dir: std::path::absolute(&dir)?,
        ranks,
        platform: std::path::absolute(platform)?,
        mapping,
        cfg,
        options,
    };
    if !job.options.no_fold {
        if let Some(r) = fold::replay_folded(&job, &child::replay)? {
            return Ok(r);
        }
    }
    child::replay(&job)
}
