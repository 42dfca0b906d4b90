//! Replaying a trace directory as `mpicast replay` asks: the platform and a mapping file checked
//! first (errors name the file and line), SimGrid's own eager threshold taken from `--cfg`, the
//! traces optionally exported for `smpirun -replay`, then `sim::replay` (in a child process),
//! its errors naming the trace directory and, when SimGrid aborted, the platform.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::model::one_line;
use crate::model::trace::{Mapping, ReplayOptions, ReplayResult};

use super::TraceSource;

/// A replay of the traces in a directory.
#[derive(Debug, Clone)]
pub struct ReplayRequest {
    pub dir: PathBuf,
    pub platform: PathBuf,
    /// One host name per rank, one per line; overrides `placement`.
    pub mapping: Option<PathBuf>,
    /// Where ranks go without a mapping file (round-robin or blocks).
    pub placement: Mapping,
    /// SimGrid configuration items `name:value`.
    pub cfg: Vec<String>,
    /// Messages from this size on use rendezvous [default: the `smpi/send-is-detached-thresh`
    /// of `cfg`, else 65536, SMPI's default].
    pub eager_threshold: Option<u64>,
    pub reduce_flops_per_byte: f64,
    pub timeline: bool,
    pub no_fold: bool,
    /// Timed by formula (`sim::analytic`) instead of by SimGrid.
    pub analytic: bool,
    /// Also write the traces in SimGrid's time-independent format into this directory.
    pub export_smpi: Option<PathBuf>,
}

/// Replays `req.dir` on `req.platform`.
pub fn replay_dir(req: &ReplayRequest) -> Result<ReplayResult> {
    let (dir, platform) = (&req.dir, &req.platform);
    if !platform.is_file() {
        bail!("{}: no such platform file", platform.display());
    }
    let platform_hosts = crate::platform::platform_hosts(platform)?;
    let mapping = match &req.mapping {
        Some(p) => {
            let hosts = super::replay::read_mapping_file(p)?;
            let ranks = crate::trace::discover(dir)?;
            check_mapping(p, &hosts, ranks, platform, &platform_hosts)?;
            Mapping::Hosts { hosts }
        }
        None => req.placement.clone(),
    };
    if let Some(out) = &req.export_smpi {
        let n = crate::trace::discover(dir)?;
        crate::trace::validate_dir(dir, n)?;
        crate::trace::smpi::export_dir(dir, n, out)?;
    }
    let options = ReplayOptions {
        eager_threshold_bytes: match req.eager_threshold {
            Some(t) => t,
            None => eager_threshold_from_cfg(&req.cfg)?.unwrap_or(65536),
        },
        reduce_flops_per_byte: req.reduce_flops_per_byte,
        timeline: req.timeline,
        no_fold: req.no_fold,
        analytic: req.analytic,
        ..ReplayOptions::default()
    };
    super::replay(
        &TraceSource::Dir(dir.clone()),
        platform,
        mapping,
        req.cfg.clone(),
        options,
    )
    .map_err(|e| {
        // Name the trace directory unless the message already names it (or a file in it).
        if one_line(&e).contains(&dir.display().to_string()) {
            e
        } else {
            e.context(dir.display().to_string())
        }
    })
    .map_err(|e| {
        // SimGrid aborts its process on what check_platform does not catch (and says little).
        let aborted = e
            .chain()
            .any(|c| c.downcast_ref::<super::child::SimulationFailed>().is_some_and(|f| f.aborted()));
        if aborted {
            e.context(format!(
                "SimGrid aborted while loading or simulating {}: check the platform file",
                platform.display()
            ))
        } else {
            e
        }
    })
}

/// A mapping file names one host of the platform per rank: the count and every name are checked
/// here, so that the error names the mapping file and its line.
fn check_mapping(
    path: &Path,
    hosts: &[String],
    ranks: u32,
    platform: &Path,
    declared: &crate::platform::PlatformHosts,
) -> Result<()> {
    if hosts.len() != ranks as usize {
        bail!(
            "{}: names {} host{} for {ranks} ranks (one host name per line, one line per rank in rank order)",
            path.display(),
            hosts.len(),
            if hosts.len() == 1 { "" } else { "s" }
        );
    }
    for (r, h) in hosts.iter().enumerate() {
        if !declared.contains(h) {
            // The line of the r-th name (blank and comment lines do not count).
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let line = text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.split('#').next().unwrap_or("").trim().is_empty())
                .nth(r)
                .map_or(0, |(i, _)| i + 1);
            let some = declared.examples(6);
            let more = if declared.count() > some.len() as u64 {
                ", ..."
            } else {
                ""
            };
            bail!(
                "{}:{line}: rank {r}: no host named {h:?} in {} (its hosts: {}{more})",
                path.display(),
                platform.display(),
                some.join(", ")
            );
        }
    }
    Ok(())
}

/// SimGrid's own eager/rendezvous switch, when the user sets it with --cfg.
fn eager_threshold_from_cfg(cfg: &[String]) -> Result<Option<u64>> {
    for c in cfg.iter().rev() {
        if let Some(v) = c.strip_prefix("smpi/send-is-detached-thresh:") {
            return v
                .trim()
                .parse()
                .map(Some)
                .with_context(|| format!("--cfg {c}: the threshold is not a byte count"));
        }
    }
    Ok(None)
}
