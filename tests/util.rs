//! Helpers the test modules share: paths, running the mpicast binary, mpirun with a session
//! directory of its own, scratch directories, the examples' build, skips that show.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Once, OnceLock};

/// The fixture machine table (hand-set costs), relative to [`root`].
pub const MACHINE: &str = "tests/fixtures/machine/fixed.json";
/// The one-host platform, relative to [`root`].
pub const LOCALHOST: &str = "platforms/localhost.xml";

/// The repository (the package's directory).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn example(name: &str) -> PathBuf {
    root().join("examples").join(format!("{name}.c"))
}

/// The fixture machine table (hand-set costs).
pub fn fixed_machine() -> PathBuf {
    root().join(MACHINE)
}

pub fn platform(name: &str) -> PathBuf {
    root().join("platforms").join(format!("{name}.xml"))
}

/// Two 1 Gf hosts, one link of 125 MB/s and 50 us.
pub fn two_hosts() -> PathBuf {
    platform("two_hosts")
}

/// The mpicast binary cargo built for these tests.
pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_mpicast")
}

/// The library starts its simulation children from `MPICAST_EXE`; set once per process, since
/// the tests run in threads of one process.
pub fn children_run_this_mpicast() {
    static SET: Once = Once::new();
    SET.call_once(|| std::env::set_var("MPICAST_EXE", exe()));
}

/// Runs the mpicast binary.
pub fn mpicast(args: &[&str]) -> Output {
    Command::new(exe()).args(args).output().expect("run mpicast")
}

/// Runs the mpicast binary in `dir`.
pub fn mpicast_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(exe()).current_dir(dir).args(args).output().expect("run mpicast")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Says that the calling test did not run its checks, and why: `SKIP <test>: <reason>`. The
/// harness captures what passing tests print, so this writes to stderr itself, where
/// `cargo test` shows it among the results. The test then returns and passes; `--skip <name>`
/// leaves it out altogether.
pub fn skip(reason: &str) {
    let name = std::thread::current().name().unwrap_or("a test").to_string();
    let _ = writeln!(std::io::stderr().lock(), "SKIP {name}: {reason}");
}

/// mpirun's options for every test run: root allowed, more ranks than cores, waiting ranks
/// yield the core instead of spinning, no core binding (tests run in parallel, and bound jobs
/// would all pin their rank 0 to the same core), no stdin.
const MPIRUN_OPTIONS: [&str; 9] = [
    "--allow-run-as-root",
    "--oversubscribe",
    "--mca",
    "mpi_yield_when_idle",
    "1",
    "--bind-to",
    "none",
    "--stdin",
    "none",
];

/// A session directory of its own for one mpirun, removed when dropped. OpenMPI's jobs share
/// /tmp/ompi.<host>.<uid> by default, and mpiruns that start and end at the same time (as
/// parallel tests do) race on creating and removing it ("mkdir ... File exists").
pub struct SessionDir(tempfile::TempDir);

impl SessionDir {
    pub fn new() -> SessionDir {
        SessionDir(tempfile::Builder::new().prefix("mpicast-ompi").tempdir().expect("temp dir"))
    }
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

/// mpirun as the tests need it ([`MPIRUN_OPTIONS`]), its own session directory, and a time
/// limit so that a hung program fails its test instead of hanging the suite.
pub fn mpirun(ranks: usize, session: &SessionDir) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args(MPIRUN_OPTIONS)
        .arg("--mca")
        .arg("orte_tmpdir_base")
        .arg(session.path())
        .args(["--timeout", "120"])
        .args(["-np", &ranks.to_string()])
        .stdin(Stdio::null()); // mpirun would forward our stdin to rank 0
    cmd
}

/// A scratch directory for one test (traces, OpenMPI session), removed when dropped.
pub struct Scratch(tempfile::TempDir);

impl Scratch {
    pub fn new(prefix: &str) -> Scratch {
        Scratch(tempfile::Builder::new().prefix(prefix).tempdir().expect("temp dir"))
    }
    pub fn path(&self) -> &Path {
        self.0.path()
    }
    /// `--mpirun-args` for mpicast: [`MPIRUN_OPTIONS`] and a session directory of this test's
    /// own (parallel mpiruns race otherwise).
    pub fn mpirun_args(&self) -> String {
        let session = self.path().join("ompi");
        std::fs::create_dir_all(&session).unwrap();
        format!("{} --mca orte_tmpdir_base {}", MPIRUN_OPTIONS.join(" "), session.display())
    }
    /// `mpicast trace SRC -n N --all-blocks -- ARGS` into `<scratch>/<name>`; panics with the
    /// output when it fails.
    pub fn trace(&self, name: &str, src: &Path, ranks: u32, args: &[&str]) -> PathBuf {
        let dir = self.path().join(name);
        let n = ranks.to_string();
        let mpirun = self.mpirun_args();
        let mut a = vec!["trace", src.to_str().unwrap(), "-n", &n, "-o", dir.to_str().unwrap(), "--all-blocks", "--mpirun-args", &mpirun, "--timeout", "120", "--"];
        a.extend_from_slice(args);
        let out = mpicast(&a);
        assert!(out.status.success(), "mpicast trace {name} failed: {}", String::from_utf8_lossy(&out.stderr));
        dir
    }
}

/// One finished run: the command, its output, its status and the `key=value` tokens of stdout.
pub struct Run {
    pub command: String,
    pub stdout: String,
    pub stderr: String,
    pub status: std::process::ExitStatus,
    pub success: bool,
    pub values: HashMap<String, String>,
}

impl Run {
    /// The command and its output, for assertion messages.
    pub fn context(&self) -> String {
        format!(
            "command: {}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.command, self.stdout, self.stderr
        )
    }

    pub fn text(&self, key: &str) -> &str {
        match self.values.get(key) {
            Some(v) => v,
            None => panic!("no `{key}=` in the output\n{}", self.context()),
        }
    }

    pub fn f64(&self, key: &str) -> f64 {
        let text = self.text(key);
        text.parse()
            .unwrap_or_else(|e| panic!("`{key}={text}` is not a number: {e}\n{}", self.context()))
    }

    pub fn i64(&self, key: &str) -> i64 {
        let text = self.text(key);
        text.parse()
            .unwrap_or_else(|e| panic!("`{key}={text}` is not an integer: {e}\n{}", self.context()))
    }
}

pub fn run_command(mut cmd: Command) -> Run {
    let command = format!("{cmd:?}");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not start {command}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let values = stdout
        .split_whitespace()
        .filter_map(|token| token.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Run {
        command,
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        status: out.status,
        success: out.status.success(),
        values,
    }
}

/// Asserts |actual - expected| <= rel * |expected|.
pub fn assert_close(actual: f64, expected: f64, rel: f64, what: &str, run: &Run) {
    assert!(
        (actual - expected).abs() <= rel * expected.abs(),
        "{what}: got {actual}, expected {expected} (relative tolerance {rel})\n{}",
        run.context()
    );
}

/// Runs a build command once per test process (the first caller runs it, the others wait for
/// it); panics with its output when it fails, or when mpicc warns.
pub fn build_once(cell: &'static OnceLock<Result<(), String>>, cmd: impl FnOnce() -> Command) {
    let built = cell.get_or_init(|| {
        let mut cmd = cmd();
        let command = format!("{cmd:?}");
        match cmd.output() {
            Err(e) => Err(format!("could not start {command}: {e}")),
            Ok(out) if !out.status.success() => Err(format!(
                "{command} failed ({})\nstdout:\n{}\nstderr:\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )),
            Ok(out) if !out.stderr.is_empty() && command.contains("mpicc") => Err(format!(
                "{command} warned:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )),
            Ok(_) => Ok(()),
        }
    });
    if let Err(message) = built {
        panic!("{message}");
    }
}

/// examples/build/<name>, built by `make -C examples` on first use (once per process, so make
/// never runs twice at once).
pub fn built_example(name: &str) -> PathBuf {
    static BUILD: OnceLock<Result<(), String>> = OnceLock::new();
    build_once(&BUILD, || {
        let mut cmd = Command::new("make");
        cmd.arg("-C").arg(root().join("examples"));
        cmd
    });
    root().join("examples/build").join(name)
}
