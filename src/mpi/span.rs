//! The span of a real run: what each rank spends between MPI_Init's return and MPI_Finalize's
//! call, as instrument/mpicast_span.c (preloaded into the run) writes it. A prediction covers
//! that span; the launcher's wall clock adds its start-up, which is measured as the difference.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// instrument/mpicast_span.c, built by [`shim`].
pub const SPAN_C: &str = include_str!("../../instrument/mpicast_span.c");

/// The span library built with `mpicc` (cached).
pub fn shim(mpicc: &str) -> Result<PathBuf> {
    super::build::build_cached(mpicc, "span", "mpicast_span.c", SPAN_C, &["-O2", "-shared", "-fPIC"], &[], "libmpicast_span.so")
}

/// The spans of one run, one per rank that reached MPI_Finalize.
#[derive(Debug, Clone, PartialEq)]
pub struct Spans {
    /// (world rank, seconds from MPI_Init's return to MPI_Finalize's call).
    pub ranks: Vec<(u32, f64)>,
    /// (world rank, the same span on the rank's thread CPU time), for the ranks whose library
    /// wrote it.
    pub cpu: Vec<(u32, f64)>,
}

impl Spans {
    /// The job's span: its slowest rank's.
    pub fn max_s(&self) -> f64 {
        self.ranks.iter().map(|r| r.1).fold(0.0, f64::max)
    }
}

/// A directory the preloaded library writes a run's spans into, and the variables that say so.
pub struct SpanDir {
    dir: tempfile::TempDir,
    shim: PathBuf,
}

impl SpanDir {
    pub fn new(shim: &Path) -> Result<SpanDir> {
        let dir = tempfile::Builder::new().prefix("mpicast-span").tempdir().context("cannot create a temporary directory")?;
        Ok(SpanDir { dir, shim: shim.to_path_buf() })
    }

    /// LD_PRELOAD and MPICAST_SPAN_DIR for the ranks (not for the launcher itself).
    pub fn vars(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), self.shim.display().to_string()),
            ("MPICAST_SPAN_DIR".into(), self.dir.path().display().to_string()),
        ]
    }

    /// Reads what the last run wrote and clears the directory for the next one. `None` when no
    /// rank wrote (a program that never calls MPI_Init, a statically linked MPI) or when fewer
    /// than `ranks` did.
    pub fn take(&self, ranks: u32) -> Option<Spans> {
        let (mut out, mut cpu) = (Vec::new(), Vec::new());
        for e in std::fs::read_dir(self.dir.path()).ok()?.flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            let _ = std::fs::remove_file(e.path());
            if let Some((r, wall, c)) = parse_line(&text) {
                out.push((r, wall));
                cpu.extend(c.map(|c| (r, c)));
            }
        }
        out.sort_by_key(|r| r.0);
        cpu.sort_by_key(|r| r.0);
        (out.len() as u32 >= ranks && ranks > 0).then_some(Spans { ranks: out, cpu })
    }
}

/// `rank R init_s T0 finalize_s T1 [cpu_s C]` -> (R, T1 - T0, C).
fn parse_line(text: &str) -> Option<(u32, f64, Option<f64>)> {
    let w: Vec<&str> = text.split_whitespace().collect();
    let (r, t0, t1, cpu) = match w.as_slice() {
        ["rank", r, "init_s", t0, "finalize_s", t1] => (r, t0, t1, None),
        ["rank", r, "init_s", t0, "finalize_s", t1, "cpu_s", c] => (r, t0, t1, Some(c.parse::<f64>().ok().filter(|c| *c >= 0.0)?)),
        _ => return None,
    };
    let (t0, t1) = (t0.parse::<f64>().ok()?, t1.parse::<f64>().ok()?);
    (t1 >= t0).then_some((r.parse().ok()?, t1 - t0, cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_line_parses_and_a_torn_one_does_not() {
        assert_eq!(parse_line("rank 3 init_s 10.5 finalize_s 12.75\n"), Some((3, 2.25, None)));
        assert_eq!(parse_line("rank 3 init_s 10.5 finalize_s 12.75 cpu_s 1.5\n"), Some((3, 2.25, Some(1.5))));
        assert_eq!(parse_line("rank 3 init_s 10.5 finalize_s 12.75 cpu_s -1\n"), None);
        assert_eq!(parse_line("rank 3 init_s 10.5 final"), None);
        assert_eq!(parse_line("rank 3 init_s 10.5 finalize_s 9.0\n"), None);
    }
}
