//! llvm-mca (LLVM's machine code analyser, Debian's `llvm` package) as the in-core model of a
//! machine loop: it schedules the body on the host CPU's model (issue width, execution ports,
//! latencies, register dependencies carried from one iteration to the next) for a number of
//! iterations, and the total cycles over the iterations are the loop's cycles per iteration.
//! Summing each op class's throughput cost charges a load, a multiply and an add one after the
//! other where the core runs them on different ports at once; llvm-mca does not. What it leaves
//! out (cache misses, branch mispredictions, memory dependencies) stays with the memory and
//! chain bounds of src/predict.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Iterations llvm-mca simulates per loop: enough for a chain's start-up to be a small share.
const ITERATIONS: u32 = 200;

/// The llvm-mca on PATH: `MPICAST_LLVM_MCA` if set, else `llvm-mca`, else a versioned name.
fn tool() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MPICAST_LLVM_MCA") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    let names = std::iter::once("llvm-mca".to_string()).chain((14..=21).rev().map(|v| format!("llvm-mca-{v}")));
    for name in names {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(&name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A body's schedule: cycles per iteration, and the part its resources alone bound (llvm-mca's
/// block reciprocal throughput: the busiest port, the issue width; dependencies left out).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    pub cycles: f64,
    pub throughput_cycles: f64,
}

/// The schedule of each body (AT&T assembly, one instruction a line) on this host's CPU model;
/// None for a body llvm-mca could not read (the others are still scheduled).
pub fn cycles_per_iteration(bodies: &[&str]) -> Result<Vec<Option<Schedule>>> {
    let tool = tool().context("llvm-mca not found (Debian package llvm; MPICAST_LLVM_MCA names another)")?;
    match run(&tool, bodies) {
        Ok(c) => Ok(c),
        // One body it cannot assemble stops the whole run: each on its own then.
        Err(e) => {
            let each: Vec<Option<Schedule>> = if bodies.len() > 1 { bodies.iter().map(|b| run(&tool, &[b]).ok().and_then(|c| c[0])).collect() } else { vec![None] };
            if each.iter().all(Option::is_none) {
                return Err(e);
            }
            Ok(each)
        }
    }
}

fn run(tool: &std::path::Path, bodies: &[&str]) -> Result<Vec<Option<Schedule>>> {
    let mut text = String::new();
    for (k, b) in bodies.iter().enumerate() {
        text.push_str(&format!("# LLVM-MCA-BEGIN l{k}\n{b}# LLVM-MCA-END\n"));
    }
    let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
    let input = dir.path().join("loops.s");
    std::fs::write(&input, &text).with_context(|| format!("{}: cannot write", input.display()))?;
    let out = Command::new(tool)
        .arg("-mcpu=native")
        .arg(format!("-iterations={ITERATIONS}"))
        .arg("-summary-view")
        .arg("-instruction-info=false")
        .arg("-resource-pressure=false")
        .arg(&input)
        .output()
        .with_context(|| format!("{}: cannot run", tool.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        bail!("{}: {}", tool.display(), err.lines().find(|l| l.contains("error")).unwrap_or("failed").trim());
    }
    Ok(parse(&String::from_utf8_lossy(&out.stdout), bodies.len()))
}

/// The schedules of regions l0..l{n-1} in llvm-mca's summary view.
fn parse(report: &str, n: usize) -> Vec<Option<Schedule>> {
    let mut out = vec![None; n];
    let mut region: Option<usize> = if n == 1 { Some(0) } else { None };
    let (mut iterations, mut cycles): (Option<f64>, Option<f64>) = (None, None);
    let value = |line: &str| line.split(':').nth(1).and_then(|v| v.trim().parse::<f64>().ok());
    for line in report.lines() {
        if let Some(name) = line.split("Code Region - ").nth(1) {
            region = name.trim().strip_prefix('l').and_then(|k| k.parse::<usize>().ok()).filter(|&k| k < n);
            (iterations, cycles) = (None, None);
        } else if line.starts_with("Iterations:") {
            iterations = value(line);
        } else if line.starts_with("Total Cycles:") {
            cycles = iterations.filter(|&it| it > 0.0).and_then(|it| value(line).map(|c| c / it));
        } else if line.starts_with("Block RThroughput:") {
            if let (Some(r), Some(c), Some(t)) = (region, cycles, value(line)) {
                out[r] = Some(Schedule { cycles: c, throughput_cycles: t.min(c) });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_view_regions_are_read_per_iteration() {
        let report = "[0] Code Region - l0\n\nIterations:        200\nInstructions:      1800\nTotal Cycles:      1214\nBlock RThroughput: 1.5\n\n[1] Code Region - l1\n\nIterations:        200\nTotal Cycles:      205\nBlock RThroughput: 1.0\n";
        let s = |cycles, throughput_cycles| Some(Schedule { cycles, throughput_cycles });
        assert_eq!(parse(report, 2), vec![s(6.07, 1.5), s(1.025, 1.0)]);
        assert_eq!(parse("Iterations: 100\nTotal Cycles: 300\nBlock RThroughput: 2.0\n", 1), vec![s(3.0, 2.0)]);
        assert_eq!(parse("garbage", 2), vec![None, None]);
    }
}
