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
    run_child(job, "--job")
}

/// Runs a replay job in a child `mpicast simulate --replay` process.
pub fn replay(job: &ReplayJob) -> Result<ReplayResult> {
    run_child(job, "--replay")
}

fn run_child<J: crate::model::Artifact, O: crate::model::Artifact>(
    job: &J,
    flag: &str,
) -> Result<O> {
    let dir = tempfile::Builder::new()
        .prefix("mpicast-sim")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let job_path = dir.path().join("job.json");
    let out_path = dir.path().join("outcome.json");
    write_artifact(&job_path, job)?;
    let exe = mpicast_exe()?;
    let output = Command::new(&exe)
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
