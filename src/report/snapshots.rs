//! Snapshot tests of the text a person reads: `mpicast analyze`'s tree and summary of small
//! fixtures, and the prediction and sweep reports of recorded artifacts. A change to any of them
//! shows as a diff of the stored snapshot (src/report/snapshots/*.snap): review it like code, then
//! accept it with `cargo insta review` or `INSTA_UPDATE=always cargo test --lib snapshots`.

use std::path::PathBuf;

use crate::model::prediction::Prediction;
use crate::model::sweep::Sweep;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The model of one fixture, named by its path relative to the crate (so the text is the same
/// wherever the checkout is).
fn analysed(rel: &str) -> crate::model::analysis::ProgramModel {
    let cwd = std::env::current_dir().expect("a working directory");
    assert_eq!(cwd, root(), "cargo runs unit tests in the crate's directory");
    crate::frontend::analyze(&[PathBuf::from(rel)], &crate::frontend::Options::default())
}

fn recorded<T: crate::model::Artifact>(name: &str) -> T {
    crate::model::read_artifact(&root().join("tests/fixtures/report").join(name)).expect("a recorded artifact")
}

macro_rules! analysis_snapshots {
    ($($name:ident: $file:expr,)*) => {$(
        #[test]
        fn $name() {
            let m = analysed($file);
            insta::assert_snapshot!(concat!(stringify!($name), "_tree"), super::analysis_tree(&m));
            insta::assert_snapshot!(concat!(stringify!($name), "_summary"), super::analysis_summary(&m));
        }
    )*};
}

analysis_snapshots! {
    analyze_triangular: "tests/fixtures/c/triangular.c",
    analyze_rank_branch: "tests/fixtures/c/rank_branch.c",
    analyze_while_loop: "tests/fixtures/c/while_loop.c",
    analyze_jacobi2d: "examples/jacobi2d.c",
}

#[test]
fn prediction_report_of_jacobi2d_at_4_ranks() {
    let p: Prediction = recorded("jacobi2d_n4.json");
    insta::assert_snapshot!(super::prediction_text(&p));
}

#[test]
fn sweep_report_of_jacobi2d() {
    let s: Sweep = recorded("jacobi2d_sweep.json");
    insta::assert_snapshot!("sweep_text", super::sweep_text(&s));
    insta::assert_snapshot!("sweep_table", super::sweep_table(&s));
}
