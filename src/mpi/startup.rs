//! The launcher's start-up on this host: what a run's wall clock adds to the span a prediction
//! covers (starting the ranks, MPI_Init, MPI_Finalize, tearing down). Measured once per host,
//! launcher and rank count and cached in `tool_cache()/startup/<host>.json` (mpicast/startup):
//! by `validate` from the program's own runs, else, on first use, from an MPI program that only
//! calls MPI_Init and MPI_Finalize.

use std::path::PathBuf;

use anyhow::Result;

use super::launch::LaunchSpec;
use super::run::Echo;
use super::span::{shim, SpanDir};
use crate::model::startup::{StartupPoint, StartupTable};

const EMPTY_C: &str = "#include <mpi.h>\nint main(int argc, char **argv)\n{\n    MPI_Init(&argc, &argv);\n    MPI_Finalize();\n    return 0;\n}\n";

fn hostname() -> String {
    crate::model::hostname_or("localhost")
}

fn table_path() -> PathBuf {
    let clean = crate::model::file_name_part(&hostname());
    super::build::tool_cache().join("startup").join(format!("{clean}.json"))
}

/// The launcher as the table keys it.
fn launcher(launch: &LaunchSpec) -> String {
    launch.describe(1).trim_end_matches(" -np 1").to_string()
}

fn read(launch: &LaunchSpec) -> StartupTable {
    let fresh = StartupTable { hostname: hostname(), launcher: launcher(launch), points: Vec::new() };
    match crate::model::read_artifact::<StartupTable>(&table_path()) {
        Ok(t) if t.launcher == fresh.launcher => t,
        _ => fresh,
    }
}

/// Records the start-ups of runs at `ranks` (seconds each).
pub fn record(launch: &LaunchSpec, ranks: u32, startups: &[f64], source: &str) -> Result<()> {
    if startups.is_empty() {
        return Ok(());
    }
    let path = table_path();
    let dir = path.parent().map(PathBuf::from).unwrap_or_default();
    let _lock = crate::model::CacheLock::acquire(&dir, "startup")?;
    let mut t = read(launch);
    let mut v = startups.to_vec();
    v.sort_by(f64::total_cmp);
    t.insert(StartupPoint { ranks, median_s: v[v.len() / 2], min_s: v[0], runs: v.len() as u32, source: source.into() });
    crate::model::write_artifact(&path, &t)
}

/// The start-up at `ranks` on this host: the table's point at `ranks`, else at min(ranks, cores),
/// measured first (3 runs of an empty MPI program at min(ranks, cores) ranks) when the table has
/// neither. Returns it with the rank count it was measured at.
pub fn startup(launch: &LaunchSpec, ranks: u32, cores: u32) -> Result<(f64, u32)> {
    let n = ranks.min(cores.max(1));
    let t = read(launch);
    // A point at `ranks` itself (validate measures every count it runs), else the one at n: the
    // value and the rank count it was measured at go together.
    for at in [ranks, n] {
        if let Some(p) = t.points.iter().find(|p| p.ranks == at) {
            return Ok((p.median_s, at));
        }
    }
    let exe = super::build::build_cached("mpicc", "startup", "empty.c", EMPTY_C, &["-O2"], &[], "empty")?;
    let spans = SpanDir::new(&shim("mpicc")?)?;
    let mut startups = Vec::new();
    let meter = crate::model::load::LoadMeter::start();
    for _ in 0..3 {
        let (l, env) = launch.command_with_vars(n, &exe, &[], &spans.vars())?;
        let f = l.run(&env, Echo::Keep, Some(60.0))?;
        if !f.status.success() {
            anyhow::bail!("`{}` failed: {}", l.shown().join(" "), f.tail.lines().last().unwrap_or(""));
        }
        if let Some(s) = spans.take(n) {
            startups.push(f.wall_s - s.max_s());
        }
    }
    if startups.is_empty() {
        anyhow::bail!("the empty MPI program gave no span (is the MPI library linked dynamically?)");
    }
    startups.sort_by(f64::total_cmp);
    let median = startups[startups.len() / 2];
    // Measured under load: used for this prediction, not kept as this host's.
    match meter.finish().and_then(|l| l.warning("the launcher's start-up")) {
        Some(w) => eprintln!("mpicast: warning: {w}: not cached"),
        None => record(launch, n, &startups, "empty")?,
    }
    Ok((median, n))
}
