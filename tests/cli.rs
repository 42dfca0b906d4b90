//! The command line's contract: help and version, one-line errors, exit status 2 on bad input.

use crate::util::{mpicast, stderr};

#[test]
fn help_and_version_exit_zero() {
    let o = mpicast(&["--help"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("Usage: mpicast"));
    let o = mpicast(&["--version"]);
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), format!("mpicast {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let o = mpicast(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.starts_with("mpicast: unrecognized subcommand 'frobnicate'"), "{e}");
}

#[test]
fn missing_input_file_is_one_line_naming_the_file() {
    let o = mpicast(&["simulate", "--job", "/nonexistent/job.json"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.starts_with("mpicast: /nonexistent/job.json: cannot read"), "{e}");
}

#[test]
fn wrong_kind_and_wrong_version_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.json");
    std::fs::write(&p, r#"{"schema":"mpicast/machine","version":1}"#).unwrap();
    let o = mpicast(&["simulate", "--job", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(r#"is a "mpicast/machine" file, expected "mpicast/simjob""#), "{}", stderr(&o));

    std::fs::write(&p, r#"{"schema":"mpicast/simjob","version":7}"#).unwrap();
    let o = mpicast(&["simulate", "--job", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("mpicast/simjob version 7, this mpicast reads version 1"), "{}", stderr(&o));
}

/// A wrong word for a flag that takes one of a few lists the valid ones on the one line.
#[test]
fn a_wrong_choice_lists_the_valid_ones() {
    let o = mpicast(&["predict", "x.c", "--costs", "cheap"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("invalid value 'cheap' for '--costs <COSTS>' (valid: fitted, raw)"), "{e}");
    let o = mpicast(&["sweep", "x.c", "-n", "2", "--ops", "asm"]);
    assert!(stderr(&o).contains("(valid: source, compiled)"), "{}", stderr(&o));
}
