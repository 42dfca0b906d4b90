//! Running the builds (quietly) and mpirun (its output passed through), keeping the tail of the
//! output for error messages.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::TraceOptions;

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
    pub wall_s: f64,
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

fn pump(mut from: impl Read, echo: Option<Box<dyn Write + Send>>, tail: Arc<Mutex<Vec<u8>>>) {
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
        let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
        t.extend_from_slice(&buf[..n]);
        if t.len() > 2 * TAIL_BYTES {
            let cut = t.len() - TAIL_BYTES;
            t.drain(..cut);
        }
    }
}

/// Runs a command, passing its output through when `echo`, and stops it after `timeout_s`.
pub fn run_captured(cmd: &mut Command, echo: bool, timeout_s: Option<f64>) -> Result<Captured> {
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
    let echo_out: Option<Box<dyn Write + Send>> = if echo {
        Some(Box::new(std::io::stdout()))
    } else {
        None
    };
    let echo_err: Option<Box<dyn Write + Send>> = if echo {
        Some(Box::new(std::io::stderr()))
    } else {
        None
    };
    let h1 = std::thread::spawn(move || pump(out, echo_out, t1));
    let h2 = std::thread::spawn(move || pump(err, echo_err, t2));
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
    let _ = h1.join();
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
        wall_s,
    })
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

fn is_open_mpi() -> bool {
    static OPEN_MPI: OnceLock<bool> = OnceLock::new();
    *OPEN_MPI.get_or_init(|| {
        Command::new("mpirun")
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map(|o| {
                let t = String::from_utf8_lossy(&o.stdout) + String::from_utf8_lossy(&o.stderr);
                t.contains("Open MPI") || t.contains("OpenRTE")
            })
            .unwrap_or(false)
    })
}

/// An mpirun command line, with the session directory it names (removed when dropped).
pub struct Launch {
    pub cmd: Vec<String>,
    _session: Option<tempfile::TempDir>,
}

/// mpirun for `opts`: as root when needed, no binding, oversubscribed (ranks yield the core
/// while waiting) beyond the machine's cores, a session directory of its own (mpiruns that run
/// at once race on the shared one), `exports` forwarded, then the user's options, -np N, the
/// program and its arguments. Options the user gives are not repeated.
pub fn mpirun_command(opts: &TraceOptions, exe: &Path, exports: Option<&[&str]>) -> Result<Launch> {
    let user = &opts.mpirun_args;
    let has = |flag: &str| {
        user.iter()
            .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
    };
    let mut cmd: Vec<String> = vec!["mpirun".into()];
    if is_root() && !has("--allow-run-as-root") {
        cmd.push("--allow-run-as-root".into());
    }
    if !has("--bind-to") {
        cmd.extend(["--bind-to", "none"].map(String::from));
    }
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1) as u32;
    if opts.ranks > cores {
        if !has("--oversubscribe") {
            cmd.push("--oversubscribe".into());
        }
        if !user.iter().any(|a| a == "mpi_yield_when_idle") {
            cmd.extend(["--mca", "mpi_yield_when_idle", "1"].map(String::from));
        }
    }
    let mut session = None;
    if !user.iter().any(|a| a == "orte_tmpdir_base") {
        let d = tempfile::Builder::new()
            .prefix("mpicast-ompi")
            .tempdir()
            .context("cannot create a temporary directory")?;
        cmd.extend([
            "--mca".to_string(),
            "orte_tmpdir_base".to_string(),
            d.path().display().to_string(),
        ]);
        session = Some(d);
    }
    if let Some(vars) = exports {
        if is_open_mpi() {
            for v in vars {
                cmd.push("-x".into());
                cmd.push(v.to_string());
            }
        }
    }
    cmd.extend(user.iter().cloned());
    cmd.push("-np".into());
    cmd.push(opts.ranks.to_string());
    cmd.push(exe.display().to_string());
    cmd.extend(opts.args.iter().cloned());
    Ok(Launch {
        cmd,
        _session: session,
    })
}

/// Runs mpirun with `env` set, its output passed through.
pub fn launch(l: &Launch, env: &[(String, String)], timeout_s: Option<f64>) -> Result<Captured> {
    let mut c = Command::new(&l.cmd[0]);
    c.args(&l.cmd[1..]);
    for (k, v) in env {
        c.env(k, v);
    }
    run_captured(&mut c, true, timeout_s).with_context(|| {
        format!(
            "cannot start {} (install openmpi-bin and libopenmpi-dev)",
            l.cmd[0]
        )
    })
}
