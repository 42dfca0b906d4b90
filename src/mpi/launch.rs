//! The one launcher: every mpirun (or srun, or a user's launcher) command line that mpicast runs
//! comes from here, so traced, validated and benchmarked runs share their MPI settings.
//!
//! The settings, the same for every stage:
//! - `--allow-run-as-root` when running as root;
//! - `--bind-to none`: ranks float over the cores, as the simulated hosts share theirs;
//! - `--oversubscribe`, and `--mca mpi_yield_when_idle 1` once there are more ranks than this
//!   host's cores (waiting ranks give their core to working ones instead of spinning);
//! - a session directory of the launch's own (`orte_tmpdir_base`): mpiruns that run at once race
//!   on the shared one;
//! - with a hostfile, `--map-by node` (ranks round-robin over the hosts, as predictions place
//!   them);
//! - the user's own options last; an option the user gives is not repeated.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use anyhow::{Context, Result};

use super::run::{is_root, run_captured, Captured, Echo};

/// How programs are launched.
#[derive(Debug, Clone, Default)]
pub struct LaunchSpec {
    /// Extra mpirun options, after mpicast's own.
    pub mpirun_args: Vec<String>,
    /// Replaces `mpirun ... -np N` (split on whitespace); `{n}` stands for the rank count.
    pub launcher: Option<String>,
    /// An OpenMPI hostfile.
    pub hostfile: Option<PathBuf>,
    /// Hosts for `--host a,b`.
    pub hosts: Vec<String>,
}

/// A launch command line, with the session directory it names (removed when dropped).
pub struct Launch {
    pub cmd: Vec<String>,
    _session: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch").field("cmd", &self.cmd).finish()
    }
}

fn cores() -> u32 {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) as u32
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

impl LaunchSpec {
    /// mpicast's own mpirun options for `ranks` ranks (without the session directory), as the
    /// reports show them.
    pub fn settings(&self, ranks: u32) -> Vec<String> {
        if let Some(l) = &self.launcher {
            return vec![format!("launcher: {}", with_ranks(l, ranks))];
        }
        let user = &self.mpirun_args;
        let has = |flag: &str| user.iter().any(|a| a == flag || a.starts_with(&format!("{flag}=")));
        let mut s: Vec<String> = Vec::new();
        if is_root() && !has("--allow-run-as-root") {
            s.push("--allow-run-as-root".into());
        }
        if !has("--bind-to") {
            s.extend(["--bind-to", "none"].map(String::from));
        }
        if !has("--oversubscribe") {
            s.push("--oversubscribe".into());
        }
        // Nothing is read from a rank's standard input, and OpenMPI 4.1's mpirun forwards its own
        // to rank 0 with a handler that can fault when that rank has already exited (seen 1 in
        // 200 short runs under load): mpirun itself dies with SIGSEGV.
        if !has("--stdin") && !has("-stdin") {
            s.extend(["--stdin", "none"].map(String::from));
        }
        if ranks > cores() && !user.iter().any(|a| a == "mpi_yield_when_idle") {
            s.extend(["--mca", "mpi_yield_when_idle", "1"].map(String::from));
        }
        if let Some(h) = &self.hostfile {
            s.extend(["--hostfile".to_string(), h.display().to_string()]);
            if !has("--map-by") {
                s.extend(["--map-by", "node"].map(String::from));
            }
        }
        if !self.hosts.is_empty() {
            s.extend(["--host".to_string(), self.hosts.join(",")]);
        }
        s.extend(user.iter().cloned());
        s
    }

    /// The settings as one line for reports: `mpirun --bind-to none ... -np N`.
    pub fn describe(&self, ranks: u32) -> String {
        match &self.launcher {
            Some(_) => self.settings(ranks).join(" "),
            None => format!("mpirun {} -np {ranks}", self.settings(ranks).join(" ")),
        }
    }

    /// The command that runs `exe args` on `ranks` ranks, forwarding the environment variables
    /// `exports` (OpenMPI's `-x`).
    pub fn command(&self, ranks: u32, exe: &Path, args: &[String], exports: &[&str]) -> Result<Launch> {
        let mut cmd: Vec<String> = Vec::new();
        let mut session = None;
        match &self.launcher {
            Some(l) => cmd.extend(l.split_whitespace().map(|w| with_ranks(w, ranks))),
            None => {
                cmd.push("mpirun".into());
                let user_settings = self.settings(ranks);
                let (own, user) = user_settings.split_at(user_settings.len() - self.mpirun_args.len());
                cmd.extend(own.iter().cloned());
                if !self.mpirun_args.iter().any(|a| a == "orte_tmpdir_base") {
                    let d = tempfile::Builder::new()
                        .prefix("mpicast-ompi")
                        .tempdir()
                        .context("cannot create a temporary directory")?;
                    cmd.extend(["--mca".to_string(), "orte_tmpdir_base".to_string(), d.path().display().to_string()]);
                    session = Some(d);
                }
                if !exports.is_empty() && is_open_mpi() {
                    for v in exports {
                        cmd.push("-x".into());
                        cmd.push(v.to_string());
                    }
                }
                cmd.extend(user.iter().cloned());
                cmd.push("-np".into());
                cmd.push(ranks.to_string());
            }
        }
        cmd.push(exe.display().to_string());
        cmd.extend(args.iter().cloned());
        Ok(Launch { cmd, _session: session })
    }
}

impl LaunchSpec {
    /// [`LaunchSpec::command`] with variables meant for the ranks alone (LD_PRELOAD, say): given
    /// to OpenMPI's mpirun as `-x NAME=VALUE`, so the launcher itself runs without them; other
    /// launchers get them in their environment (returned, for [`Launch::run`]).
    pub fn command_with_vars(&self, ranks: u32, exe: &Path, args: &[String], vars: &[(String, String)]) -> Result<(Launch, Vec<(String, String)>)> {
        if self.launcher.is_none() && is_open_mpi() {
            let exports: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let refs: Vec<&str> = exports.iter().map(String::as_str).collect();
            Ok((self.command(ranks, exe, args, &refs)?, Vec::new()))
        } else {
            Ok((self.command(ranks, exe, args, &[])?, vars.to_vec()))
        }
    }
}

impl Launch {
    /// Runs the command with `env` set, its output sent as `echo` says.
    pub fn run(&self, env: &[(String, String)], echo: Echo, timeout_s: Option<f64>) -> Result<Captured> {
        let mut c = Command::new(&self.cmd[0]);
        c.args(&self.cmd[1..]);
        for (k, v) in env {
            c.env(k, v);
        }
        run_captured(&mut c, echo, timeout_s)
            .with_context(|| format!("cannot start {} (install openmpi-bin and libopenmpi-dev)", self.cmd[0]))
    }

    /// The command without its temporary session directory, for reports and meta files.
    pub fn shown(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.cmd.len());
        let mut i = 0;
        while i < self.cmd.len() {
            if self.cmd[i] == "--mca" && self.cmd.get(i + 1).is_some_and(|k| k == "orte_tmpdir_base") && self._session.is_some() {
                i += 3;
                continue;
            }
            out.push(self.cmd[i].clone());
            i += 1;
        }
        out
    }
}

/// A user's launcher with its rank-count placeholder filled: `{ranks}`, or `{n}` (which the
/// command-line help cannot show: clap prints it as a line break).
fn with_ranks(launcher: &str, ranks: u32) -> String {
    let r = ranks.to_string();
    launcher.replace("{ranks}", &r).replace("{n}", &r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_depend_on_ranks_and_user_options() {
        let spec = LaunchSpec::default();
        let few = spec.settings(1);
        assert!(few.contains(&"--oversubscribe".to_string()));
        assert!(!few.contains(&"mpi_yield_when_idle".to_string()));
        let many = spec.settings(cores() + 1);
        assert!(many.contains(&"mpi_yield_when_idle".to_string()));
        let user = LaunchSpec { mpirun_args: vec!["--bind-to".into(), "core".into()], ..Default::default() };
        let s = user.settings(1);
        assert_eq!(s.iter().filter(|a| *a == "--bind-to").count(), 1);
        assert_eq!(s.last().map(String::as_str), Some("core"));
    }

    #[test]
    fn command_ends_with_ranks_program_and_arguments() {
        let spec = LaunchSpec { hostfile: Some("hosts".into()), ..Default::default() };
        let l = spec.command(3, Path::new("/bin/prog"), &["a".into()], &["X"]).unwrap();
        let n = l.cmd.len();
        assert_eq!(&l.cmd[n - 4..], ["-np", "3", "/bin/prog", "a"]);
        assert!(l.cmd.windows(2).any(|w| w == ["--map-by", "node"]));
        assert!(!l.shown().iter().any(|a| a == "orte_tmpdir_base"));
        let srun = LaunchSpec { launcher: Some("srun -n {n}".into()), ..Default::default() };
        assert_eq!(srun.command(4, Path::new("p"), &[], &[]).unwrap().cmd, ["srun", "-n", "4", "p"]);
        let named = LaunchSpec { launcher: Some("srun --ntasks={ranks}".into()), ..Default::default() };
        assert_eq!(named.command(8, Path::new("p"), &[], &[]).unwrap().cmd, ["srun", "--ntasks=8", "p"]);
    }
}
