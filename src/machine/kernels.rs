//! The C kernels (microbench/mtc_*), embedded in the binary, and their compilation with the
//! user's compiler and flags into a cache directory (never into the source tree).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// (file name, contents) of every kernel source, in compilation order.
pub const SOURCES: &[(&str, &str)] = &[
    (
        "mtc_common.h",
        include_str!("../../microbench/mtc_common.h"),
    ),
    (
        "mtc_kernels.h",
        include_str!("../../microbench/mtc_kernels.h"),
    ),
    (
        "mtc_driver.c",
        include_str!("../../microbench/mtc_driver.c"),
    ),
    ("mtc_arith.c", include_str!("../../microbench/mtc_arith.c")),
    ("mtc_libm.c", include_str!("../../microbench/mtc_libm.c")),
    ("mtc_ctrl.c", include_str!("../../microbench/mtc_ctrl.c")),
    ("mtc_mem.c", include_str!("../../microbench/mtc_mem.c")),
    ("mtc_calib.c", include_str!("../../microbench/mtc_calib.c")),
    ("mtc_io.c", include_str!("../../microbench/mtc_io.c")),
];

/// The calibration kernels' source (their `mtc-cal` count declarations live there).
pub fn calib_source() -> &'static str {
    SOURCES
        .iter()
        .find(|(n, _)| *n == "mtc_calib.c")
        .map(|(_, s)| *s)
        .unwrap_or("")
}

/// Whether `cc` is an MPI compiler wrapper (mpicc, mpicxx, mpiicc, ...), by its file name.
pub fn is_mpi_wrapper(cc: &str) -> bool {
    Path::new(cc)
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("mpi"))
}

/// First line of `cc --version`.
pub fn compiler_version(cc: &str) -> Result<String> {
    let out = Command::new(cc)
        .arg("--version")
        .output()
        .with_context(|| {
            format!("{cc}: cannot run the compiler (install it, or choose one with --cc)")
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().unwrap_or("unknown").trim().to_string())
}

/// FNV-1a, enough to name a cache entry.
pub fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0u8)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x100000001b3);
        }
    }
    h
}

/// Compiles the driver and kernels with `cc cflags` into `cache_root/kernels/<hash>/mtc`,
/// reusing an earlier build of the same sources, compiler and flags; `in_mpi`: the driver calls
/// MPI_Init (cc must be an MPI wrapper).
pub fn build(cc: &str, cflags: &[String], cc_version: &str, cache_root: &Path, in_mpi: bool) -> Result<PathBuf> {
    let mut parts: Vec<&str> = vec![cc, cc_version, if in_mpi { "in-mpi" } else { "" }];
    parts.extend(cflags.iter().map(String::as_str));
    for (n, s) in SOURCES {
        parts.push(n);
        parts.push(s);
    }
    let dir = cache_root
        .join("kernels")
        .join(format!("{:016x}", fnv(&parts)));
    let exe = dir.join("mtc");
    if exe.is_file() {
        return Ok(exe);
    }
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("{}: cannot create directory", dir.display()))?;
    // Build in a private temporary directory, then move into place: two runs at once are safe.
    let tmp = tempfile::Builder::new()
        .prefix(".build")
        .tempdir_in(&dir)
        .with_context(|| format!("{}: cannot create a temporary directory", dir.display()))?;
    for (n, s) in SOURCES {
        std::fs::write(tmp.path().join(n), s).with_context(|| format!("{}: cannot write", n))?;
    }
    let out_tmp = tmp.path().join("mtc");
    let mut cmd = Command::new(cc);
    cmd.args(cflags).arg("-I").arg(tmp.path());
    if in_mpi {
        // In context: the driver runs its kernels inside an MPI process (mtc_driver.c).
        cmd.arg("-DMTC_WITH_MPI");
    }
    for (n, _) in SOURCES.iter().filter(|(n, _)| n.ends_with(".c")) {
        cmd.arg(tmp.path().join(n));
    }
    cmd.arg("-lm").arg("-o").arg(&out_tmp);
    let out = cmd
        .output()
        .with_context(|| format!("{cc}: cannot run the compiler"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first: Vec<&str> = err.lines().take(8).collect();
        bail!(
            "{cc} {}: the kernels did not compile: {}",
            cflags.join(" "),
            first.join(" | ")
        );
    }
    std::fs::rename(&out_tmp, &exe).with_context(|| format!("{}: cannot write", exe.display()))?;
    Ok(exe)
}
