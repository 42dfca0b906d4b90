//! Runs simulations in child processes: SimGrid's engine lives once per process, aborts the
//! process on some errors, and separate processes let sweeps run in parallel.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::model::simjob::{SimJob, SimOutcome};
use crate::model::trace::{ReplayJob, ReplayResult};
use crate::model::{read_artifact, write_artifact};

/// The mpicast binary to launch children from: `MPICAST_EXE` when set, this executable when it
/// is mpicast, else an `mpicast` next to (or one directory above) this executable, which is where
/// cargo puts it for tests.
pub fn mpicast_exe() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("MPICAST_EXE") {
        return Ok(PathBuf::from(p));
    }
    let me = std::env::current_exe().context("cannot locate the running executable")?;
    if me.file_stem().is_some_and(|s| s == "mpicast") {
        return Ok(me);
    }
    let dir = me.parent().unwrap_or(Path::new("."));
    for cand in [dir.join("mpicast"), dir.join("..").join("mpicast")] {
        if cand.is_file() {
            return Ok(cand);
        }
    }
    bail!(
        "cannot find the mpicast executable next to {} (set MPICAST_EXE)",
        me.display()
    )
}

/// A simulation child that did not succeed: its exit status and the last line it wrote.
#[derive(Debug, thiserror::Error)]
#[error("simulation failed ({status}): {message}")]
pub struct SimulationFailed {
    pub status: std::process::ExitStatus,
    pub message: String,
}

impl SimulationFailed {
    /// SimGrid aborts its process (SIGABRT) on what the platform checker does not catch.
    pub fn aborted(&self) -> bool {
        use std::os::unix::process::ExitStatusExt;
        self.status.signal() == Some(6)
    }
}

/// Runs `job` in a child `mpicast simulate` process and returns its outcome.
pub fn simulate(job: &SimJob) -> Result<SimOutcome> {
    crate::platform::check_platform(&job.platform)?;
    run_child(job, "--job", allocator(0))
}

/// Runs a replay job in a child `mpicast simulate --replay` process.
pub fn replay(job: &ReplayJob) -> Result<ReplayResult> {
    run_child(job, "--replay", allocator(job.ranks))
}

/// The allocator a simulation of `ranks` ranks runs with: mimalloc (found at build time,
/// build.rs) up to `LARGE_REPLAY` ranks when it is still there, else None (the C library's).
fn allocator(ranks: u32) -> Option<PathBuf> {
    let so = PathBuf::from(option_env!("MPICAST_MIMALLOC_SO")?);
    (ranks <= super::replay::LARGE_REPLAY && std::env::var_os("MPICAST_NO_MIMALLOC").is_none() && so.is_file()).then_some(so)
}

fn run_child<J: crate::model::Artifact, O: crate::model::Artifact>(
    job: &J,
    flag: &str,
    preload: Option<PathBuf>,
) -> Result<O> {
    let dir = tempfile::Builder::new()
        .prefix("mpicast-sim")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let job_path = dir.path().join("job.json");
    let out_path = dir.path().join("outcome.json");
    write_artifact(&job_path, job)?;
    let exe = mpicast_exe()?;
    let mut cmd = Command::new(&exe);
    if let Some(so) = preload {
        let mut list = so.into_os_string();
        if let Some(more) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
            list.push(":");
            list.push(more);
        }
        cmd.env("LD_PRELOAD", list);
    }
    let output = cmd
        // Large allocations (actor stacks of large replays) from the heap rather than one memory
        // map each, and the heap grown by exactly what is asked: calloc then leaves the fresh
        // pages of a stack untouched (see sim::replay::LARGE_REPLAY).
        .env("MALLOC_MMAP_THRESHOLD_", "4194304")
        .env("MALLOC_TOP_PAD_", "0")
        .arg("simulate")
        .arg(flag)
        .arg(&job_path)
        .arg("--out")
        .arg(&out_path)
        .output()
        .with_context(|| format!("cannot start {}", exe.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .last()
            .unwrap_or("(no message)");
        return Err(SimulationFailed {
            status: output.status,
            message: last.trim_start_matches("mpicast: ").to_string(),
        }
        .into());
    }
    Ok(read_artifact(&out_path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulations_up_to_the_large_replays_run_with_mimalloc_where_it_was_found() {
        let large = crate::sim::replay::LARGE_REPLAY;
        assert_eq!(allocator(large + 1), None);
        match option_env!("MPICAST_MIMALLOC_SO") {
            // Found at build time (scripts/setup.sh installs libmimalloc-dev).
            Some(so) if std::env::var_os("MPICAST_NO_MIMALLOC").is_none() => {
                assert_eq!(allocator(1024), Some(PathBuf::from(so)));
                assert_eq!(allocator(large), Some(PathBuf::from(so)));
            }
            _ => assert_eq!(allocator(1024), None),
        }
    }
}
