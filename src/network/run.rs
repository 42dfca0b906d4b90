//! Builds microbench/pingpong.c with mpicc into a cache directory and runs it under mpirun (or
//! the user's launcher), reading its result lines as they come.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::model::network::{CollectivePoint, CtorPoint, ExchangePoint, Overhead, PingPongPoint};

/// The ping-pong source, built into the binary so that mpicast works from any directory.
pub const PINGPONG_C: &str = include_str!("../../microbench/pingpong.c");

/// How to launch and what to measure.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub mpicc: String,
    /// How the ping-pong is launched (the same settings as every other mpirun of mpicast).
    pub launch: crate::mpi::launch::LaunchSpec,
    pub ranks: u32,
    pub sizes: Vec<u64>,
    pub overhead_sizes: Vec<u64>,
    pub collective_sizes: Vec<u64>,
    /// Sizes of the bidirectional exchange (both ranks send at once).
    pub exchange_sizes: Vec<u64>,
    pub budget_per_size_s: f64,
    pub target_rel_stderr: f64,
    pub min_reps: u64,
}

/// The raw results.
#[derive(Debug, Clone, Default)]
pub struct RunResult {
    pub command: Vec<String>,
    pub host0: String,
    pub ranks: u32,
    pub pingpong: Vec<PingPongPoint>,
    pub overheads: Vec<Overhead>,
    pub collectives: Vec<CollectivePoint>,
    pub exchange: Vec<ExchangePoint>,
    pub constructors: Vec<CtorPoint>,
}

/// Sizes 0 B .. `max`: 0, powers of two and the midpoints 3 * 2^(k-1) between them.
pub fn default_sizes(max: u64) -> Vec<u64> {
    let mut v = vec![0u64];
    let mut p = 1u64;
    while p <= max {
        v.push(p);
        if p >= 2 && p + p / 2 <= max {
            v.push(p + p / 2);
        }
        p *= 2;
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Compiles the ping-pong with `mpicc` unless an executable built from the same source and
/// compiler is cached.
pub fn build(mpicc: &str) -> Result<PathBuf> {
    crate::mpi::build::build_cached(mpicc, "ctc", "pingpong.c", PINGPONG_C, &["-O2"], &["-lm"], "pingpong")
}

fn join(v: &[u64]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The ping-pong's arguments.
fn arguments(spec: &RunSpec) -> Vec<String> {
    let mut args = Vec::new();
    for (o, v) in [
        ("-S", join(&spec.sizes)),
        ("-O", join(&spec.overhead_sizes)),
        ("-C", join(&spec.collective_sizes)),
        ("-X", join(&spec.exchange_sizes)),
        ("-b", format!("{}", spec.budget_per_size_s)),
        ("-e", format!("{}", spec.target_rel_stderr)),
        ("-m", spec.min_reps.to_string()),
    ] {
        args.push(o.into());
        args.push(v);
    }
    args
}

/// The full command line (its session directory lives as long as the [`Launch`]).
pub fn command_line(spec: &RunSpec, exe: &Path) -> Result<crate::mpi::launch::Launch> {
    spec.launch.command(spec.ranks, exe, &arguments(spec), &[])
}

/// The ping-pong's `ctor` lines: three references and four constructors.
const CTOR_LINES: usize = 7;

/// Number of result lines the program prints (for progress).
pub fn expected_lines(spec: &RunSpec) -> u64 {
    (spec.sizes.len()
        + 2 * spec.overhead_sizes.len()
        + spec.exchange_sizes.len()
        + 1
        + 3 * spec.collective_sizes.len()
        + CTOR_LINES) as u64
}

/// Runs the ping-pong; `progress` is called after each result line with the line.
pub fn run(spec: &RunSpec, exe: &Path, mut progress: impl FnMut(&str)) -> Result<RunResult> {
    let launch = command_line(spec, exe)?;
    let cmd = launch.cmd.clone();
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", cmd[0]))?;
    let stderr = child.stderr.take().expect("piped");
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut s);
        s
    });
    let mut res = RunResult {
        command: launch.shown(),
        ranks: spec.ranks,
        ..Default::default()
    };
    let stdout = child.stdout.take().expect("piped");
    for line in BufReader::new(stdout).lines() {
        let line = line.context("reading the ping-pong's output")?;
        if parse_line(&line, &mut res) {
            progress(&line);
        }
    }
    let status = child.wait().context("waiting for mpirun")?;
    let err = err_thread.join().unwrap_or_default();
    if !status.success() {
        let msg: Vec<&str> = err
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with("---"))
            .take(6)
            .collect();
        bail!("`{}` failed ({status}): {}", cmd.join(" "), msg.join(" | "));
    }
    if res.pingpong.is_empty() {
        bail!(
            "`{}` printed no ping-pong results: {}",
            cmd.join(" "),
            err.trim()
        );
    }
    Ok(res)
}

/// Parses one output line into `res`; true when it was a result line.
pub fn parse_line(line: &str, res: &mut RunResult) -> bool {
    let f: Vec<&str> = line.split_whitespace().collect();
    let u = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok());
    let d = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok());
    match f.first().copied() {
        Some("pp") => {
            if let (
                Some(size),
                Some(reps),
                Some(min),
                Some(med),
                Some(p90),
                Some(mean),
                Some(rel),
            ) = (u(1), u(2), d(3), d(4), d(5), d(6), d(7))
            {
                res.pingpong.push(PingPongPoint {
                    size_bytes: size,
                    reps,
                    min_s: min,
                    median_s: med,
                    p90_s: p90,
                    mean_s: mean,
                    rel_stderr: rel,
                });
                return true;
            }
        }
        Some(k @ ("os" | "or")) => {
            if let (Some(size), Some(v)) = (u(1), d(2)) {
                let pos = res.overheads.iter().position(|o| o.size_bytes == size);
                let o = match pos {
                    Some(i) => &mut res.overheads[i],
                    None => {
                        res.overheads.push(Overhead {
                            size_bytes: size,
                            send_s: 0.0,
                            recv_s: 0.0,
                        });
                        res.overheads.last_mut().expect("just pushed")
                    }
                };
                if k == "os" {
                    o.send_s = v;
                } else {
                    o.recv_s = v;
                }
                return true;
            }
        }
        Some("bx") => {
            if let (Some(size), Some(reps), Some(min), Some(med)) = (u(1), u(2), d(3), d(4)) {
                res.exchange.push(ExchangePoint {
                    size_bytes: size,
                    reps,
                    min_s: min,
                    median_s: med,
                });
                return true;
            }
        }
        Some("coll") => {
            if let (Some(name), Some(size), Some(reps), Some(mean), Some(min)) =
                (f.get(1), u(2), u(3), d(4), d(5))
            {
                res.collectives.push(CollectivePoint {
                    name: name.to_string(),
                    size_bytes: size,
                    ranks: res.ranks,
                    reps,
                    mean_s: mean,
                    min_s: min,
                });
                return true;
            }
        }
        Some("ctor") => {
            if let (Some(name), Some(members), Some(reps), Some(mean)) = (f.get(1), u(2), u(3), d(4)) {
                res.constructors.push(CtorPoint {
                    name: name.to_string(),
                    members: members as u32,
                    reps,
                    mean_s: mean,
                });
                return true;
            }
        }
        Some("info") => match (f.get(1).copied(), f.get(2)) {
            (Some("host0"), Some(h)) => res.host0 = h.to_string(),
            (Some("nranks"), Some(n)) => res.ranks = n.parse().unwrap_or(res.ranks),
            _ => {}
        },
        _ => {}
    }
    false
}
