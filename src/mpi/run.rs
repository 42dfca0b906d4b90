//! Running a child (a build, mpirun, a benchmark) with a time limit, its output passed through
//! or not, keeping the tail of the output for error messages (or all of it).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;

/// A build or a run that failed: a one-line message (what failed, where the work directory
/// is) and the last lines of the compiler's or mpirun's output.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct RunFailure {
    pub message: String,
    pub output_tail: String,
}

/// A finished command.
pub struct Captured {
    pub status: ExitStatus,
    /// The last lines of its output (stdout and stderr).
    pub tail: String,
    /// All of its standard output, when asked for ([`Echo::Keep`]).
    pub stdout: String,
    pub wall_s: f64,
    /// Stopped at the time limit.
    pub timed_out: bool,
}

/// Where a child's output goes besides the tail kept for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Echo {
    /// Nowhere.
    Quiet,
    /// Passed through: stdout to ours, stderr to ours.
    #[default]
    Through,
    /// Both to our stderr (our stdout holds a result, such as `--json -`).
    Stderr,
    /// Standard output kept whole in [`Captured::stdout`], nothing echoed.
    Keep,
}

const TAIL_BYTES: usize = 16 << 10;
const TAIL_LINES: usize = 25;

/// `name` on the PATH, skipping the directory `skip`.
pub fn which(name: &str, skip: Option<&Path>) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|d| skip.is_none_or(|s| d != s))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// "exit status 1", "killed by signal 6 (SIGABRT)".
pub fn describe(status: &ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(c) = status.code() {
        return format!("exit status {c}");
    }
    match status.signal() {
        Some(s) => {
            let name = match s {
                1 => " (SIGHUP)",
                2 => " (SIGINT)",
                6 => " (SIGABRT)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                15 => " (SIGTERM)",
                _ => "",
            };
            format!("killed by signal {s}{name}")
        }
        None => status.to_string(),
    }
}

fn pump(
    mut from: impl Read,
    echo: Option<Box<dyn Write + Send>>,
    tail: Arc<Mutex<Vec<u8>>>,
    mut keep: Option<&mut Vec<u8>>,
) {
    let mut echo = echo;
    let mut buf = [0u8; 8192];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(w) = echo.as_mut() {
            let _ = w.write_all(&buf[..n]);
            let _ = w.flush();
        }
        if let Some(k) = keep.as_mut() {
            k.extend_from_slice(&buf[..n]);
        }
        let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
        t.extend_from_slice(&buf[..n]);
        if t.len() > 2 * TAIL_BYTES {
            let cut = t.len() - TAIL_BYTES;
            t.drain(..cut);
        }
    }
}

/// Runs a command with its output sent as `echo` says, and stops it after `timeout_s` (SIGTERM,
/// then SIGKILL 10 s later).
pub fn run_captured(cmd: &mut Command, echo: Echo, timeout_s: Option<f64>) -> Result<Captured> {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let tail = Arc::new(Mutex::new(Vec::new()));
    let out = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    let (t1, t2) = (Arc::clone(&tail), Arc::clone(&tail));
    let to = |stdout: bool| -> Option<Box<dyn Write + Send>> {
        match echo {
            Echo::Through if stdout => Some(Box::new(std::io::stdout())),
            Echo::Through | Echo::Stderr => Some(Box::new(std::io::stderr())),
            Echo::Quiet | Echo::Keep => None,
        }
    };
    let (echo_out, echo_err) = (to(true), to(false));
    let keep = echo == Echo::Keep;
    let h1 = std::thread::spawn(move || {
        let mut all = Vec::new();
        pump(out, echo_out, t1, keep.then_some(&mut all));
        all
    });
    let h2 = std::thread::spawn(move || pump(err, echo_err, t2, None));
    let mut stopped_at: Option<Instant> = None;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if let Some(limit) = timeout_s {
            let over = start.elapsed().as_secs_f64() > limit;
            match stopped_at {
                None if over => {
                    // SIGTERM first: mpirun then stops its ranks.
                    let _ = Command::new("kill")
                        .arg("-TERM")
                        .arg(child.id().to_string())
                        .status();
                    stopped_at = Some(Instant::now());
                }
                Some(t) if t.elapsed() > Duration::from_secs(10) => {
                    let _ = child.kill();
                }
                _ => {}
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let wall_s = start.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&h1.join().unwrap_or_default()).into_owned();
    let _ = h2.join();
    let bytes = tail.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut tail = lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n");
    if let (Some(limit), Some(_)) = (timeout_s, stopped_at) {
        tail.push_str(&format!(
            "\n(mpicast: stopped after the {limit} s time limit)"
        ));
    }
    Ok(Captured {
        status,
        tail,
        stdout,
        wall_s,
        timed_out: stopped_at.is_some(),
    })
}

/// Whether this process runs as root (mpirun then needs --allow-run-as-root).
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}
