//! Helpers shared by integration tests that run the real binary and real mpirun.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn example(name: &str) -> PathBuf {
    root().join("examples").join(format!("{name}.c"))
}

/// The fixture machine table (hand-set costs).
pub fn fixed_machine() -> PathBuf {
    root().join("tests/fixtures/machine/fixed.json")
}

pub fn platform(name: &str) -> PathBuf {
    root().join("platforms").join(format!("{name}.xml"))
}

/// Runs the mpicast binary.
pub fn mpicast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpicast")).args(args).output().expect("run mpicast")
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
    /// mpirun options as the tests need them: root allowed, oversubscribed, waiting ranks yield,
    /// no binding, and a session directory of this test's own (parallel mpiruns race otherwise).
    pub fn mpirun_args(&self) -> String {
        let session = self.path().join("ompi");
        std::fs::create_dir_all(&session).unwrap();
        format!(
            "--allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none --stdin none --mca orte_tmpdir_base {}",
            session.display()
        )
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
