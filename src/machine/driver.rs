//! The running kernel driver (microbench/mtc_driver.c): a child process that runs one kernel
//! per request and answers with the elapsed nanoseconds. Cycles and instructions are counted
//! around each request through perf-event when the kernel allows it.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};
use perf_event::events::Hardware;
use perf_event::{Builder, Counter};

/// One timed call of a kernel.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// On the driver thread's CPU clock (time spent descheduled left out).
    pub ns: f64,
    /// On the monotonic wall clock.
    pub wall_ns: f64,
    pub cycles: Option<f64>,
    pub instructions: Option<f64>,
}

struct Counters {
    cycles: Counter,
    instructions: Counter,
}

pub struct Driver {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    counters: Option<Counters>,
    /// Why the counters are not used, when they are not.
    pub counter_error: Option<String>,
}

impl Driver {
    pub fn start(exe: &Path) -> Result<Driver> {
        let mut child = Command::new(exe)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("{}: cannot start the kernel driver", exe.display()))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| anyhow!("kernel driver: no stdin"))?;
        let stdout = BufReader::new(
            child
                .stdout
                .take()
                .ok_or_else(|| anyhow!("kernel driver: no stdout"))?,
        );
        let pid = child.id() as i32;
        let (counters, counter_error) = match open_counters(pid) {
            Ok(c) => (Some(c), None),
            Err(e) => (None, Some(e)),
        };
        Ok(Driver {
            child,
            stdin,
            stdout,
            counters,
            counter_error,
        })
    }

    pub fn counters_used(&self) -> bool {
        self.counters.is_some()
    }

    fn request(&mut self, line: &str) -> Result<String> {
        self.send(line)?;
        self.answer(line)
    }

    fn send(&mut self, line: &str) -> Result<()> {
        writeln!(self.stdin, "{line}").context("kernel driver: cannot send a request")?;
        self.stdin
            .flush()
            .context("kernel driver: cannot send a request")
    }

    fn answer(&mut self, line: &str) -> Result<String> {
        let mut answer = String::new();
        let n = self
            .stdout
            .read_line(&mut answer)
            .context("kernel driver: cannot read its answer")?;
        if n == 0 {
            let status = self.child.try_wait().ok().flatten();
            bail!(
                "kernel driver exited during `{line}` ({})",
                status.map(|s| s.to_string()).unwrap_or("running".into())
            );
        }
        let answer = answer.trim().to_string();
        if let Some(e) = answer.strip_prefix("error ") {
            bail!("kernel driver: {e}");
        }
        Ok(answer)
    }

    /// Kernel names the driver knows.
    pub fn list(&mut self) -> Result<Vec<String>> {
        Ok(self
            .request("list")?
            .split_whitespace()
            .map(String::from)
            .collect())
    }

    /// Starts `kernel` without waiting for it (a companion that keeps a core busy while
    /// another driver measures); `finish` waits for it.
    pub fn start_run(&mut self, kernel: &str, iters: u64, ws_bytes: u64) -> Result<()> {
        self.send(&format!("run {kernel} {iters} {ws_bytes}"))
    }

    /// Waits for the run `start_run` began.
    pub fn finish(&mut self) -> Result<()> {
        self.answer("run").map(|_| ())
    }

    /// Runs `kernel` for `iters` iterations on a working set of `ws_bytes` (0: any).
    pub fn run(&mut self, kernel: &str, iters: u64, ws_bytes: u64) -> Result<Sample> {
        let line = format!("run {kernel} {iters} {ws_bytes}");
        if let Some(c) = &mut self.counters {
            let _ = c.cycles.reset();
            let _ = c.instructions.reset();
            let _ = c.cycles.enable();
            let _ = c.instructions.enable();
        }
        let answer = self.request(&line)?;
        let (mut cycles, mut instructions) = (None, None);
        if let Some(c) = &mut self.counters {
            let _ = c.cycles.disable();
            let _ = c.instructions.disable();
            cycles = c.cycles.read().ok().map(|v| v as f64);
            instructions = c.instructions.read().ok().map(|v| v as f64);
        }
        let mut parts = answer.split_whitespace().map(str::parse::<f64>);
        let (Some(Ok(ns)), Some(Ok(wall_ns))) = (parts.next(), parts.next()) else {
            bail!("kernel driver: unexpected answer {answer:?} to `{line}`")
        };
        Ok(Sample {
            ns,
            wall_ns,
            cycles,
            instructions,
        })
    }
}

fn open_counters(pid: i32) -> std::result::Result<Counters, String> {
    let open = |kind: Hardware| Builder::new().kind(kind).observe_pid(pid).build();
    let explain = |what: &str, e: std::io::Error| -> String {
        // ENOENT / EOPNOTSUPP: no such hardware event here (no PMU exposed, as in many VMs);
        // EACCES / EPERM: perf_event_paranoid forbids it.
        let why = match e.raw_os_error() {
            Some(2) | Some(95) => "not supported on this host",
            Some(1) | Some(13) => "not permitted (see /proc/sys/kernel/perf_event_paranoid)",
            _ => "cannot open",
        };
        format!("perf_event {what}: {why} ({e})")
    };
    let mut cycles = open(Hardware::CPU_CYCLES).map_err(|e| explain("cycles", e))?;
    let mut instructions = open(Hardware::INSTRUCTIONS).map_err(|e| explain("instructions", e))?;
    // A counter that opens but never counts (some hypervisors) is as good as none.
    cycles
        .enable()
        .map_err(|e| format!("perf_event enable: {e}"))?;
    instructions
        .enable()
        .map_err(|e| format!("perf_event enable: {e}"))?;
    Ok(Counters {
        cycles,
        instructions,
    })
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
        let _ = self.child.wait();
    }
}
