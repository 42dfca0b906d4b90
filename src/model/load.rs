//! How busy the host was with other processes while a benchmark ran: `bench machine` and
//! `bench network` mark their tables with it, and a table measured under load is not cached as
//! the host's default (a platform with a 10,000,000 MB/s segment was, once).
//!
//! The meter reads the kernel's CPU accounting: /proc/stat (busy and stolen time over all CPUs)
//! and /proc/self/stat (this process and the children it has waited for). What the CPUs did
//! beyond this process tree, over the wall time, is the load from others, in CPUs.
//!
//! Processes the benchmark starts whose time never reaches this process's (mpirun does not wait
//! for the daemons it launches through an rsh agent, so their ranks' time is lost to it) are
//! still the benchmark's: the meter puts a token in this process's environment, which they
//! inherit, and samples the CPU time of every process carrying it. Both ways undercount (waits
//! that never happen; the last fraction of a sampling period), so the benchmark's own time is
//! the larger of the two.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Other processes' CPU use above which a measurement counts as taken under load, in CPUs
/// (averaged over the measurement). `MPICAST_LOAD_LIMIT` overrides it.
pub const DEFAULT_LOAD_LIMIT: f64 = 0.25;

/// The load from other processes during a measurement.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostLoad {
    /// CPUs busy with other processes (or stolen by the hypervisor), averaged over the wall time.
    pub other_cpus: f64,
    /// Online CPUs.
    pub cpus: u32,
    pub wall_s: f64,
    /// The limit it was held against, in CPUs.
    pub limit_cpus: f64,
    /// `other_cpus` above the limit: the figures are suspect, and the table is not cached as
    /// this host's default.
    pub under_load: bool,
}

impl HostLoad {
    /// One line for the user when the table was measured under load.
    pub fn warning(&self, what: &str) -> Option<String> {
        self.under_load.then(|| {
            format!(
                "{what} measured under load: other processes used {:.2} of {} CPUs on average \
                 (limit {:.2}, MPICAST_LOAD_LIMIT); re-run it on a quiet machine",
                self.other_cpus, self.cpus, self.limit_cpus
            )
        })
    }
}

/// The limit in CPUs: MPICAST_LOAD_LIMIT when it is a number, else [`DEFAULT_LOAD_LIMIT`].
pub fn load_limit() -> f64 {
    std::env::var("MPICAST_LOAD_LIMIT")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|v| !v.is_nan())
        .unwrap_or(DEFAULT_LOAD_LIMIT)
}

/// A snapshot of the CPU accounting; [`LoadMeter::finish`] gives the load since.
pub struct LoadMeter {
    start: Instant,
    host_ticks: Option<u64>,
    own_ticks: Option<u64>,
    self_ticks: Option<u64>,
    stop: Arc<AtomicBool>,
    sampler: Option<std::thread::JoinHandle<u64>>,
}

/// The environment variable that marks a meter's processes.
pub const TOKEN_VAR: &str = "MPICAST_LOAD_TOKEN";

impl LoadMeter {
    pub fn start() -> LoadMeter {
        let token = format!(
            "{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        );
        // Children started from now on inherit it.
        std::env::set_var(TOKEN_VAR, &token);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let sampler = std::thread::Builder::new()
            .name("load-meter".into())
            .spawn(move || marked_ticks(&token, &flag))
            .ok();
        LoadMeter {
            start: Instant::now(),
            host_ticks: host_busy_ticks(),
            own_ticks: own_ticks(),
            self_ticks: self_ticks(),
            stop,
            sampler,
        }
    }

    /// The load since `start`. Call it after the benchmark's children have been waited for
    /// (their time then counts as this process's). `None` where /proc cannot be read.
    pub fn finish(self) -> Option<HostLoad> {
        let wall_s = self.start.elapsed().as_secs_f64();
        let host = host_busy_ticks()?.checked_sub(self.host_ticks?)?;
        self.stop.store(true, Ordering::Relaxed);
        let marked = self.sampler.and_then(|h| h.join().ok()).unwrap_or(0);
        let waited = own_ticks()?.checked_sub(self.own_ticks?)?;
        let sampled = self_ticks()?.checked_sub(self.self_ticks?)? + marked;
        let own = waited.max(sampled);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let other_cpus = if wall_s > 0.0 {
            (host.saturating_sub(own) as f64 / CLOCK_TICKS_PER_S / wall_s).max(0.0)
        } else {
            0.0
        };
        let limit_cpus = load_limit();
        Some(HostLoad {
            other_cpus,
            cpus,
            wall_s,
            limit_cpus,
            under_load: other_cpus > limit_cpus,
        })
    }
}

/// Samples, until `stop`, the CPU ticks of the processes carrying `token` (all started after
/// the meter); returns the sum of the last ticks seen of each.
fn marked_ticks(token: &str, stop: &AtomicBool) -> u64 {
    let needle = format!("{TOKEN_VAR}={token}\0");
    // (pid, start time) -> carries the token
    let mut marked: HashMap<(u32, u64), bool> = HashMap::new();
    let mut seen: HashMap<(u32, u64), u64> = HashMap::new();
    loop {
        let done = stop.load(Ordering::Relaxed);
        for p in processes() {
            let key = (p.pid, p.start);
            let ours = *marked.entry(key).or_insert_with(|| {
                std::fs::read(format!("/proc/{}/environ", p.pid))
                    .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle.as_bytes()))
            });
            if ours {
                let t = seen.entry(key).or_insert(0);
                *t = (*t).max(p.ticks);
            }
        }
        if done {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    seen.values().sum()
}

struct Proc {
    pid: u32,
    start: u64,
    ticks: u64,
}

/// Every process's start time and own user + system ticks.
fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (start, ticks) = parse_proc(&stat)?;
        Some(Proc { pid, start, ticks })
    })
    .collect()
}

/// Start time and utime + stime of a /proc/PID/stat line.
fn parse_proc(stat: &str) -> Option<(u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some((field(22)?, field(14)? + field(15)?))
}

/// This process's own user and system ticks (its threads; not its children).
fn self_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_proc(&stat).map(|(_, t)| t)
}

/// USER_HZ: /proc reports CPU time in these ticks (100 on Linux's user ABI everywhere).
const CLOCK_TICKS_PER_S: f64 = 100.0;

/// Busy and stolen ticks over all CPUs: the "cpu" line of /proc/stat without idle and iowait
/// (guest time is already inside user time).
fn host_busy_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_host_busy(&stat)
}

fn parse_host_busy(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice]
    if fields.len() < 8 {
        return None;
    }
    Some(fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7])
}

/// This process's user and system ticks and those of the children it waited for.
fn own_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_own(&stat)
}

fn parse_own(stat: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); utime stime cutime cstime are fields 14-17.
    let tick = |n: usize| fields.get(n - 3)?.parse::<i64>().ok();
    let total = tick(14)? + tick(15)? + tick(16)? + tick(17)?;
    u64::try_from(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The meters of these tests see each other's processes: one at a time.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn parses_proc_stat_and_self_stat() {
        let stat = "cpu  100 5 50 1000 20 3 2 10 0 0\ncpu0 50 2 25 500 10 1 1 5 0 0\n";
        assert_eq!(parse_host_busy(stat), Some(100 + 5 + 50 + 3 + 2 + 10));
        let own = "4242 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17";
        // utime stime cutime cstime are fields 14..17: 11 12 13 14
        assert_eq!(parse_own(own), Some(11 + 12 + 13 + 14));
        assert_eq!(parse_host_busy("cpu 1 2\n"), None);
    }

    #[test]
    fn a_process_outside_this_tree_is_load() {
        // A child not yet waited for is not this process's time: it counts as another
        // process's, as a hog started by someone else would.
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let mut hog = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh");
        let meter = LoadMeter::start();
        std::thread::sleep(std::time::Duration::from_millis(600));
        let load = meter.finish().expect("/proc readable");
        let _ = hog.kill();
        let _ = hog.wait();
        assert!(load.wall_s >= 0.6);
        assert!(load.other_cpus >= 0.6, "a spinning process: {load:?}");
        assert_eq!(load.under_load, load.other_cpus > load.limit_cpus);
    }

    #[test]
    fn a_detached_process_the_benchmark_started_is_not_load() {
        // Started after the meter, it carries its token; its parent exits at once, so its time
        // never reaches this process's (as that of mpirun's daemons launched through an rsh
        // agent does not). Other processes of the host may be busy meanwhile: the same span
        // metered without the spinner first is the baseline. Under a test suite's load the
        // others' use moves by more than the spinner's own between two spans, so the check
        // gets three tries: a spinner the meter does not recognise fails all three.
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let span = std::time::Duration::from_millis(800);
        let mut seen = Vec::new();
        for _ in 0..3 {
            let quiet = LoadMeter::start();
            std::thread::sleep(span);
            let baseline = quiet.finish().expect("/proc readable");
            let meter = LoadMeter::start();
            let out = std::process::Command::new("sh")
                .args(["-c", "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!"])
                .output()
                .expect("sh");
            let pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
            std::thread::sleep(span);
            let _ = std::process::Command::new("kill").arg(&pid).status();
            let load = meter.finish().expect("/proc readable");
            if load.other_cpus < baseline.other_cpus + 0.4 {
                return;
            }
            seen.push((baseline.other_cpus, load.other_cpus));
        }
        panic!("the spinner was counted as another's load, (without, with) in CPUs: {seen:?}");
    }
}
